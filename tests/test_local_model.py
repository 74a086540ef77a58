"""The embedded SmolLM2 model, for real: llama-cpp-python in-process through litellm."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from think_nb import Think
from think_nb.tools.demo import add

pytestmark = pytest.mark.localmodel


class Calc(Think):
    def get_tools(self) -> list:
        return [add]


async def test_smollm2_calls_the_add_tool_and_the_result_is_persisted(tmp_path: Path) -> None:
    agent = Calc("calc", db=tmp_path / "local.sqlite")
    result = await agent.send("What is 2 plus 40? use the add tool")
    assert result.status == "completed", result.error
    stored = Calc("calc", db=tmp_path / "local.sqlite").messages
    tool_parts = [p for p in stored[-1]["parts"] if p["type"] == "tool-add"]
    assert tool_parts[0]["state"] == "output-available"
    assert tool_parts[0]["input"] == {"a": 2, "b": 40}
    assert tool_parts[0]["output"] == 42
    assert stored[-1]["metadata"]["model"] == "think-local/smollm2-135m-instruct"


def test_terminal_main_job_streams_the_tool_call_and_prints_the_db_path(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "think_nb", "chat", "What is 2 plus 40? Use the add tool."],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == '→ add({"a": 2, "b": 40})'
    assert lines[1] == "← 42.0"
    db = tmp_path / ".think" / "cli.sqlite"
    assert re.fullmatch(rf"\[completed\] saved to {re.escape(str(db))} \(conversation 'chat-[0-9-]+-\w+', "
                        r"2 messages\)", lines[-1])
    assert db.exists()


PRELOAD = """
import sys
from think_nb import Think
from think_nb.models import local
from think_nb.testing import ScriptedModel as S
script = S([[S.text("ok")]])
class Scripted(Think):
    def get_model(self):
        return script.model
Scripted("s", db=sys.argv[1] + "/s.sqlite")
print("scripted", local._preloading is not None)
agent = Think("e", db=sys.argv[1] + "/e.sqlite")
local.wait_preloaded(timeout=300)
print("embedded", local._llama is not None, "litellm" in sys.modules)
"""


def test_an_agent_on_the_embedded_model_loads_it_in_the_background_from_its_creation(tmp_path: Path) -> None:
    """Created on the embedded model, an agent starts the model's load on a daemon thread (its first
    turn then waits for nothing); an agent with its own get_model() loads nothing."""
    out = subprocess.run([sys.executable, "-c", PRELOAD, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.stdout.split("\n")[:2] == ["scripted False", "embedded True False"], out.stderr[-2000:]


QUIET = """
import io, sys
from think_nb.models import local
buf = io.StringIO()
sys.stdout = buf
loading = local.preload()
printed = 0
while loading.is_alive():
    print("x")
    print("y", file=sys.__stdout__, flush=True)  # straight to descriptor 1 (a script's flushed stdout)
    printed += 1
sys.stdout = sys.__stdout__
print(printed, buf.getvalue().count("x"), local._llama is not None)
"""


def test_prints_while_the_model_loads_in_the_background_are_kept() -> None:
    """llama-cpp silences llama.cpp's logs during a load by replacing sys.stdout and descriptors 1
    and 2 process-wide; ours does not redirect (the logs are already off at verbose=False), so a
    cell or a script printing while the model loads keeps its output."""
    out = subprocess.run([sys.executable, "-c", QUIET], capture_output=True, text=True, timeout=300)
    *ys, printed, kept, loaded = out.stdout.split()
    assert int(printed) > 0 and kept == printed and loaded == "True", out.stderr[-2000:]
    assert ys == ["y"] * int(printed)  # none lost while the descriptors would have pointed at /dev/null
    assert out.stderr == ""


class Writer(Think):
    def get_tools(self) -> list:
        def write_note(title: str, body: str, tags: str) -> str:
            """Save a note with a title, a body and comma-separated tags."""
            return "saved"

        return [write_note]


async def test_stop_ends_the_embedded_models_tool_choosing_call_so_the_next_question_runs_at_once(
        tmp_path: Path) -> None:
    """Stop during the grammar-constrained, non-streamed call that chooses a tool (10-20 s on 2 cores)
    ends llama-cpp's token loop itself, not only the turn: the model is free for the next turn (which
    answers) instead of finishing the abandoned call first. Issue 27 (Stop in front of a class)."""
    import asyncio

    from panels import until
    from think_nb.models import local

    agent = Writer("w", db=tmp_path / "stop.sqlite")
    before = local.stopped_calls
    turn = agent.submit("Write a note titled 'shopping list' whose body lists ten fruits and tag it food, home.")
    await until(lambda: local._stop_current is not None or turn.done(), "the tool-choosing call", timeout=300)
    assert not turn.done(), "the call ended before it could be stopped"
    agent.abort_all_requests()
    result = await turn
    assert result.status == "aborted"
    await asyncio.to_thread(local._call_lock.acquire)  # the model is free again ...
    local._call_lock.release()
    assert local.stopped_calls == before + 1  # ... because the stop ended the call, not its natural end
    answer = await agent.send("Say hello.")
    assert answer.status == "completed", answer.error
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]


def test_the_prompt_is_read_on_as_many_threads_as_the_reply_is_written() -> None:
    """Issue 27 §7 (a plain question answered in seconds on 2 cores): llama-cpp-python read the
    prompt on every CPU; on a busy 2-core machine the quickstart's cold 34-token prompt then took
    2-9 s to its first token instead of 0.5 s (bench/quickstart_latency.py, `local.llama_threads`)."""
    from think_nb.models import local

    llama = local.get_llama()
    assert llama.n_threads_batch == llama.n_threads == local.llama_threads()
