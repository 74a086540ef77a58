"""`%think context|messages|search|sessions` in an in-process IPython shell."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
from IPython.testing.globalipapp import get_ipython

import think_nb.frontends.magic.base as commands
from think_nb import Think
from think_nb.store import open_database
from think_nb.testing import ScriptedModel as S


@pytest.fixture
def ip(monkeypatch):
    import IPython

    shell = get_ipython() or IPython.get_ipython()  # globalipapp starts the shell once per process
    shell.run_line_magic("load_ext", "think_nb")
    shown: list = []
    monkeypatch.setattr(commands, "display", shown.append)
    shell.shown = shown
    return shell


def test_session_subcommands_show_dataframes(ip, capsys) -> None:
    script = S([[S.text("The red fox sleeps.")]])

    class Memo(Think):
        def get_model(self):
            return script.model

        def configure_session(self, session):
            return session.with_context("memory", description="Facts.", max_tokens=100)

    ip.user_ns["Memo"] = Memo
    agent = ip.magics_manager.registry["ThinkMagics"].resolve_agent("Memo", "default", None)
    asyncio.run(agent.send("Where is the fox?"))
    ip.run_line_magic("think", "context Memo")
    ip.run_line_magic("think", "messages Memo")
    ip.run_line_magic("think", "search red fox --agent Memo")
    ip.run_line_magic("think", "sessions")  # the agent last used with %think
    context, messages, search, sessions = ip.shown
    assert all(isinstance(df, pd.DataFrame) for df in ip.shown)
    assert context["label"].tolist() == ["memory"]
    assert messages["text"].tolist() == ["Where is the fox?", "The red fox sleeps."]
    assert search["text"].tolist() == ["The red fox sleeps."]
    assert sessions["name"].tolist() == ["default"]
    ip.run_line_magic("think", "search --help")
    ip.run_line_magic("think", "--help")
    out = capsys.readouterr().out
    assert out.startswith("%think search QUERY [--agent AGENT [--name NAME] [--db PATH]] [--limit N] [--all]")
    for command in ("context", "messages", "sessions"):
        usage = f"%think {command} [AGENT] [--name NAME] [--db PATH]"
        assert usage in out


def test_session_subcommands_take_name_and_db_and_refuse_an_unknown_name(ip, capsys, tmp_path, monkeypatch) -> None:
    """`--name`/`--db` pick the agent as `%think AGENT NAME --db PATH` does; a name the file does
    not hold is refused (naming the stored ones) instead of creating an empty agent; the hint
    without an agent names the sub-command that was typed."""
    script = S([[S.text("The red fox sleeps.")], [S.text("Owls hunt at night.")]])

    class Notes(Think):
        def get_model(self):
            return script.model

    db = str(tmp_path / "notes.sqlite")
    asyncio.run(Notes("alice", db=db).send("fox?"))
    asyncio.run(Notes("bob", db=db).send("owl?"))
    monkeypatch.setitem(ip.user_ns, "Notes", Notes)  # the shell is shared by the process's tests
    commands.SHOWN.clear()
    ip.shown.clear()
    ip.run_line_magic("think", f"search hunt --agent Notes --name bob --db {db}")
    ip.run_line_magic("think", f"messages Notes --name alice --db {db}")
    found, messages = ip.shown
    assert found["text"].tolist() == ["Owls hunt at night."]
    assert messages["text"].tolist() == ["fox?", "The red fox sleeps."]
    capsys.readouterr()
    ip.run_line_magic("think", f"context Notes --name alcie --db {db}")
    ip.run_line_magic("think", f"trace Notes --name alcie --db {db}")
    ip.run_line_magic("think", "context --name alice")
    commands.SHOWN.clear()
    ip.run_line_magic("think", "search red fox")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"think: No Notes agent named 'alcie' in {tmp_path / 'notes.sqlite'} (stored: 'alice', 'bob'). "
                        f"Leave out --name for 'default', or start it first with `%think Notes alcie --db {db}`.")
    assert lines[1] == lines[0]
    assert lines[2] == "think: --name and --db go with an agent: `%think context Calc --name NAME`."
    assert lines[3] == ("think: No agent yet: pass one (`%think search red fox --agent Calc`) or show it first "
                        "with `%think Calc`.")
    assert len(ip.shown) == 2
    assert [n for (n,) in open_database(db).read("SELECT name FROM think_agents ORDER BY name")] == ["alice", "bob"]


def test_inspecting_magics_find_stored_names_and_refuse_other_agents_clearly(ip, capsys, tmp_path, monkeypatch) -> None:
    """A stored name with "/" or spaces is found; a missing --db file is refused and not created
    (whatever the name); the suggested command quotes the name and keeps --db; an instance with
    a --name or --db naming another agent is refused."""
    script = S([[S.text("Hello from the team.")], [S.text("Hi.")]])

    class Crew(Think):
        def get_model(self):
            return script.model

    db = tmp_path / "crew.sqlite"
    asyncio.run(Crew("team/alpha", db=str(db)).send("hi"))
    instance = Crew("real one", db=str(db))
    asyncio.run(instance.send("hello"))
    monkeypatch.setitem(ip.user_ns, "Crew", Crew)
    monkeypatch.setitem(ip.user_ns, "crew", instance)
    commands.SHOWN.clear()
    ip.shown.clear()
    ip.run_line_magic("think", f"messages Crew --name team/alpha --db {db}")
    ip.run_line_magic("think", f"messages Crew --name 'real one' --db {db}")
    ip.run_line_magic("think", f"messages crew --name 'real one' --db {db}")  # the instance, named as it is
    assert [df["text"].tolist() for df in ip.shown] == [["hi", "Hello from the team."], ["hello", "Hi."],
                                                       ["hello", "Hi."]]
    capsys.readouterr()
    missing = tmp_path / "nowhere" / "typo.sqlite"
    ip.run_line_magic("think", f"trace Crew --db {missing}")
    ip.run_line_magic("think", f"context Crew --name 'real 1' --db {db}")
    ip.run_line_magic("think", f"messages crew --name other --db {db}")
    ip.run_line_magic("think", f"messages crew --db {tmp_path / 'other.sqlite'}")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (f"think: No file {missing}: check the --db path (an agent's file is made when it first "
                        f"starts, e.g. `%think Crew --db {missing}`).")
    assert lines[1] == (f"think: No Crew agent named 'real 1' in {db} (stored: 'real one', 'team/alpha'). Leave out "
                        f"--name for 'default', or start it first with `%think Crew 'real 1' --db {db}`.")
    instance_error = (f"think: 'crew' is the agent Crew('real one') in {db}; --name and --db choose an agent of a "
                      "class instead: `%think ... Crew --name NAME --db PATH`.")
    assert lines[2:] == [instance_error, instance_error]
    assert not missing.parent.exists()
    assert len(ip.shown) == 3
    instance.sub_agent(Crew, "helper")
    ip.run_line_magic("think", f"messages Crew --name helper --db {db}")
    assert capsys.readouterr().out == (
        f"think: Crew 'helper' in {db} is a sub-agent (Crew:real one/Crew:helper): show the instance its parent's "
        "sub_agent(Crew, 'helper') returns, e.g. `%think child`.\n")


def test_think_map_runs_a_batch_over_a_notebook_dataframe(ip, capsys) -> None:
    from think_nb.testing import FunctionModel

    fm = FunctionModel(lambda messages, info: f"echo {messages[-1]['content']}")

    class Echo(Think):
        include_workspace_tools = False

        def get_model(self):
            return fm.model

    ip.user_ns["Echo"] = Echo
    ip.user_ns["tickets"] = pd.DataFrame({"text": ["a", "b"]})
    results = ip.run_line_magic("think", 'map Echo tickets --prompt "Say {text}" --concurrency 2 --run-id m1')
    assert results["reply"].tolist() == ["echo Say a", "echo Say b"]
    assert results["status"].tolist() == ["completed"] * 2 and results.attrs["run_id"] == "m1"
    capsys.readouterr()
    ip.run_line_magic("think", 'map Echo nope --prompt "x {text}"')
    assert "no variable 'nope' in this notebook" in capsys.readouterr().out
    ip.run_line_magic("think", "map Echo tickets")
    assert "required: --prompt" in capsys.readouterr().out


def test_think_map_output_type_names_a_pydantic_model_of_the_notebook(ip, capsys) -> None:
    from pydantic import BaseModel

    from think_nb.testing import FunctionModel
    from think_nb.testing import ScriptedModel as S

    class Label(BaseModel):
        category: str

    fm = FunctionModel(lambda messages, info: [S.tool_call("think_final_answer", {"category": "billing"})])

    class Typed(Think):
        include_workspace_tools = False

        def get_model(self):
            return fm.model

    ip.user_ns.update(Typed=Typed, Label=Label, tickets=pd.DataFrame({"text": ["a"]}))
    results = ip.run_line_magic("think", 'map Typed tickets --prompt "Label {text}" --output-type Label')
    assert (results["category"].tolist(), results["status"].tolist()) == (["billing"], ["completed"])
    capsys.readouterr()
    ip.run_line_magic("think", 'map Typed tickets --prompt "Label {text}" --output-type Nope')
    assert "no pydantic model named 'Nope' in this notebook" in capsys.readouterr().out


async def test_think_map_in_a_notebook_refuses_bad_input_on_its_line_not_in_a_task_nobody_awaits(ip, capsys) -> None:
    from think_nb.testing import FunctionModel

    fm = FunctionModel(lambda messages, info: "ok")

    class Quiet(Think):
        include_workspace_tools = False

        def get_model(self):
            return fm.model

    ip.user_ns["Quiet"] = Quiet
    ip.user_ns["rows"] = pd.DataFrame({"text": ["a", "b"]})
    ip.user_ns["twice"] = pd.DataFrame({"text": ["a", "b"]}, index=[0, 0])
    capsys.readouterr()
    for line, said in (('map Quiet rows --prompt "Say {txt}"', "names txt, which is not a column"),
                       ('map Quiet twice --prompt "Say {text}"', "index has repeated labels"),
                       ('map Quiet rows --prompt "Say {text}" --concurrency 0', "map(concurrency=0)"),
                       ('map Quiet rows --prompt "Say {text}" --run-id a/b', "run_id='a/b'")):
        assert ip.run_line_magic("think", line) is None  # no task started: the line says why
        out = capsys.readouterr().out
        assert out.startswith("think: ") and said in out and out.count("\n") == 1
    assert Quiet("default").runs().empty
    task = ip.run_line_magic("think", 'map Quiet rows --prompt "Say {text}" --run-id ok')
    results = await task
    assert results["reply"].tolist() == ["ok", "ok"]
