"""`%think` / `%%think` in an in-process IPython shell (the kernel-level tests are in tests/kernel)."""

import subprocess
import sys

import pytest
from IPython.testing.globalipapp import get_ipython

from think_nb import Think
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S


@pytest.fixture(scope="module")
def ip():
    import IPython

    shell = get_ipython() or IPython.get_ipython()  # the test shell is returned only by the first call
    shell.run_line_magic("load_ext", "think_nb")
    return shell


def test_load_ext_starts_importing_litellm_off_the_main_thread() -> None:
    """Issue 18: intent is known at `%load_ext` when the notebook's default model is hosted; the
    import starts there, on its own thread, and `%load_ext` returns before it is done (the import
    takes seconds). (The embedded default imports nothing: tests/kernel/test_magic_kernel.py.)"""
    code = ("import os\nos.environ['THINK_NB_MODEL'] = 'openai/gpt-4o-mini'\n"
            "from IPython.testing.globalipapp import get_ipython\nimport sys\n"
            "from think_nb.models import litellm_env\n"
            "get_ipython().run_line_magic('load_ext', 'think_nb')\nprint(litellm_env.ready())\n"
            "import threading\nprint([t.name for t in threading.enumerate() if 'litellm' in t.name])\n"
            "litellm_env.preload().result(timeout=300)\nprint(litellm_env.ready())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-3:] == ["False", "['think-nb-import-litellm']", "True"]


def test_help_lists_every_form(ip, capsys) -> None:
    ip.run_line_magic("think", "--help")
    text = capsys.readouterr().out
    for form in ("%think AGENT [NAME] [--db PATH]", "%%think AGENT [NAME] [--db PATH]", "%think --help"):
        assert form in text


def test_unknown_agent_and_bad_option_get_one_line_naming_the_fix(ip, capsys) -> None:
    ip.run_line_magic("think", "Nope")
    ip.run_line_magic("think", "default --colour red")
    assert capsys.readouterr().out.splitlines() == [
        ("think: No agent named 'Nope' in this notebook: define `class Nope(Think): ...` (or `Nope = Think(...)`) "
         "first, or use `%think default`."),
        "think: unrecognized arguments: --colour red. See `%think --help`."]


def test_agents_are_created_once_per_class_and_name(ip) -> None:
    class Calc(Think):
        pass

    ip.user_ns["Calc"] = Calc
    magics = ip.magics_manager.registry["ThinkMagics"]
    first = magics.resolve_agent("Calc", "default", None)
    assert magics.resolve_agent("Calc", "default", None) is first
    assert magics.resolve_agent("Calc", "other", None) is not first
    ip.user_ns["mine"] = first
    assert magics.resolve_agent("mine", "default", None) is first
    with pytest.raises(UserError, match="'mine' is the agent Calc\\('default'\\)"):  # not silently ignored
        magics.resolve_agent("mine", "other", None)


def test_cell_magic_outside_a_kernel_runs_the_turn_and_prints_it(ip, capsys) -> None:
    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("It is 42.")]])
    ip.run_cell(f"""
from think_nb import Think
from think_nb.errors import UserError
from think_nb.tools.demo import add
class Scripted(Think):
    def get_model(self): return {script.model!r}
    def get_tools(self): return [add]
""")
    ip.run_cell_magic("think", "Scripted", "What is 2 + 40?\n")
    assert capsys.readouterr().out.splitlines() == ['→ add({"a": 2, "b": 40})', "← 42.0", "It is 42."]
    assert [m["role"] for m in ip.user_ns["Scripted"]("default").messages] == ["user", "assistant"]


def test_step_and_trace_subcommands(ip, capsys) -> None:
    script = S([[S.text("traced")]])
    ip.run_cell(f"""
from think_nb import Think
from think_nb.errors import UserError
class Traced(Think):
    def get_model(self): return {script.model!r}
""")
    assert ip.run_line_magic("think", "trace Traced") is None
    assert capsys.readouterr().out.strip() == "No traced turn for 'default' yet: run a turn first."
    stepper = ip.run_line_magic("think", "step Traced What's up?")
    assert stepper.next().hook == "before_turn"
    assert stepper.run().status == "completed"
    frame = ip.run_line_magic("think", "trace Traced")
    assert list(frame.hook)[:2] == ["before_turn", "start"]
    assert [m["parts"][-1]["text"] for m in ip.user_ns["Traced"]("default").messages] == ["What's up?", "traced"]


def test_history_and_fork_subcommands(ip, capsys) -> None:
    script = S([[S.text("first")]])
    ip.run_cell(f"""
from think_nb import Think
class Forked(Think):
    include_workspace_tools = False
    def get_model(self): return {script.model!r}
""")
    assert ip.run_line_magic("think", "history Forked") is None
    assert capsys.readouterr().out.strip() == "'default' has run no turn yet."
    assert ip.user_ns["Forked"]("default").run("hello").status == "completed"
    frame = ip.run_line_magic("think", "history Forked")
    assert frame.to_dict("records") == [{"turn": 0, "request_id": frame.request_id[0], "trigger": "send",
                                         "status": "completed", "sites": ["before_turn", "before_step:0",
                                                                          "on_step_finish:0", "on_chat_response"],
                                         "forkable": True}]
    assert ip.run_line_magic("think", "fork Forked 0") is None
    assert capsys.readouterr().out.startswith("think: usage: %think fork AGENT TURN --at SITE")
    stepper = ip.run_line_magic("think", "fork Forked 0 --at on_step_finish:0 --model recorded")
    assert stepper.paused.hook == "on_step_finish"
    assert stepper.run().message["parts"][-1]["text"] == "first"
    assert [m["parts"][-1]["text"] for m in ip.user_ns["Forked"]("default").messages] == ["hello", "first"]
    assert len(ip.user_ns["Forked"]("default").get_branches(stepper.fork.message_id)) == 2


def test_kernel_subcommand_shows_what_the_agent_sees(ip, capsys) -> None:
    ip.run_cell("""
from think_nb import Think
class Seeing(Think):
    include_kernel_tools = True
class Blind(Think):
    pass
seen_frame_rows = [1, 2, 3]
_hidden_one = 1
""")
    frame = ip.run_line_magic("think", "kernel Seeing seen_*")
    assert frame.to_dict("records") == [{"name": "seen_frame_rows", "type": "list", "shape": "len 3",
                                         "preview": "[1, 2, 3]"}]
    assert capsys.readouterr().out.splitlines()[0] == (
        "'default' has the kernel tools list_variables, notebook_history, describe_variable, run_code (run_code asks "
        "for approval).")
    names = set(ip.run_line_magic("think", "kernel Blind").name)
    assert "seen_frame_rows" in names and not names & {"_hidden_one", "In", "Out", "Seeing", "Think", "get_ipython"}
    assert "has no kernel tools" in capsys.readouterr().out


def test_cell_magic_without_an_agent_says_what_is_missing_in_one_line(ip, capsys) -> None:
    ip.run_cell_magic("think", "", "What is 2 + 40?\n")
    assert capsys.readouterr().out.splitlines() == [
        ("think: %%think needs an agent on its first line: `%%think Calc` (a Think subclass or agent in this "
         "notebook) or `%%think default`.")]


def test_a_misspelt_agent_gets_the_closest_name(ip, capsys) -> None:
    class Calc(Think):
        pass

    ip.user_ns["Calc"] = Calc
    ip.run_line_magic("think", "Calcc")
    assert capsys.readouterr().out.splitlines() == [
        "think: No agent named 'Calcc' in this notebook; did you mean 'Calc'?"]


def test_assigning_the_line_magic_binds_the_agent_and_still_shows_the_panel(ip, monkeypatch) -> None:
    shown: list = []
    monkeypatch.setattr("think_nb.frontends.magic.core.display", shown.append)
    monkeypatch.setattr(Think, "panel", lambda self: f"panel of {self.name}")
    ip.run_cell("class Bound(Think):\n    pass")
    result = ip.run_cell("bound = %think Bound tutor --model openai/gpt-4o-mini")
    assert result.success and result.result is None
    agent = ip.user_ns["bound"]
    assert (type(agent).__name__, agent.name, agent.get_model()) == ("Bound", "tutor", "openai/gpt-4o-mini")
    assert shown == ["panel of tutor"]
    bare = ip.run_cell("%think Bound tutor")
    assert bare.result is None  # a bare line shows the panel only, not also the agent's repr
    assert shown == ["panel of tutor", "panel of tutor"]


def test_a_trailing_comment_on_a_think_line_is_ignored(ip, capsys) -> None:
    """Issue 27 §8: `%think Demo   # create or load …` (as the README writes it) is `%think Demo`;
    a `#` inside a word or quotes is kept, as in a shell."""
    from think_nb.frontends.magic.base import split_line

    assert split_line('Calc   # create or load Calc("default")') == ["Calc"]
    assert split_line('Calc --db "a #1.sqlite" # note') == ["Calc", "--db", "a #1.sqlite"]
    assert split_line("Calc a#b") == ["Calc", "a#b"]
    assert split_line("step Calc it's 4 # why") == ["step", "Calc", "it's", "4"]
    ip.run_line_magic("think", "--help   # every form")
    assert "%think --help" in capsys.readouterr().out
