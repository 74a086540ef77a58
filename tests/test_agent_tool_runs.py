"""Durable agent-tool runs (Think's `cf_agent_tool_child_runs` and startup re-attach): a sub-agent turn
started by a parent's tool (`delegate`) is recorded, and after the parent's process dies the parent
created again delivers a settled run's output to its tool call instead of running the child again,
resumes a cut child turn when the child's own recovery continues it, and reports it interrupted
otherwise. Kills are real SIGKILLs of a forked process (`tests/agent_tool_child.py`), as in
`tests/test_sigkill.py`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from dirty_equals import IsFloat, IsStr

import agent_tool_agents
from agent_tool_agents import Lead, Scout
from agent_tool_child import ANSWER
from agents import eventually, texts
from think_nb import Think
from think_nb.agent_tools import INTERRUPTED_TEXT, Reattach, find_class
from think_nb.binding import runtime_of
from think_nb.store import owners
from think_nb.testing import ScriptedModel as S

CHILD = Path(__file__).with_name("agent_tool_child.py")


@pytest.fixture(autouse=True)
def fresh_agents() -> None:
    Lead.script, Lead.hang = S([]), None
    Scout.script, Scout.resume, Scout.streaming = S([]), False, None


def research_call(agent: Think) -> dict:
    return next(p for m in agent.messages for p in m["parts"] if p["type"] == "tool-research")


# -- recording --------------------------------------------------------------------------------
async def test_delegate_records_the_run_with_the_childs_request_and_reply(tmp_path: Path) -> None:
    """Think's `startAgentToolRun`: a row per run (run id from the tool call id, the child's request
    id bound before its turn, status, summary, output, error, started/finished)."""
    Lead.script = S([[S.tool_call("research", {"question": "capital?"})], [S.text("Paris.")]])
    Scout.script = S([[S.text("Paris is the capital.\nSecond line.")]])
    lead = Lead("lead", db=tmp_path / "a.sqlite")
    result = await lead.send("What is the capital?")
    scout = lead.sub_agent(Scout, "s1")
    assert lead.agent_tool_runs() == [{
        "run_id": "agent-tool:call_1_0", "child_key": "Lead:lead/Scout:s1", "child_class": "Scout",
        "child_name": "s1", "parent_request_id": result.request_id, "parent_tool_call_id": "call_1_0",
        "request_id": scout.turns()[-1]["request_id"], "status": "completed", "summary": "Paris is the capital.",
        "output": "Paris is the capital.\nSecond line.", "error": None, "started_at": IsFloat,
        "finished_at": IsFloat}]
    assert scout.turns()[-1]["trigger"] == "chat"


async def test_a_failed_child_turn_is_an_error_run_and_the_calls_output_error(tmp_path: Path) -> None:
    """Think: a child turn that errors settles its run `error` with the error (per-run error capture)."""
    Lead.script = S([[S.tool_call("research", {"question": "q"})], [S.text("It failed.")]])
    Scout.script = S([[S.error("no capacity")]])
    lead = Lead("lead", db=tmp_path / "a.sqlite")
    assert (await lead.send("go")).status == "completed"
    (run,) = lead.agent_tool_runs()
    assert run["status"] == "error" and "no capacity" in run["error"] and run["output"] is None
    call = research_call(lead)
    assert call["state"] == "output-error" and call["errorText"] == (
        f"RuntimeError: Sub-agent 'Lead:lead/Scout:s1' ended error: {run['error']}")


async def test_after_clear_messages_a_reused_tool_call_id_asks_the_child_again(tmp_path: Path) -> None:
    """A settled run is replayed only for the tool call that started it: `clear_messages` forgets the
    cleared transcript's runs, so a new call with the same id (a scripted model run again, the
    sub_agents notebook after Run All) runs the child instead of returning its old answer."""
    lead = Lead("lead", db=tmp_path / "a.sqlite")
    answers = []
    for answer in ("Paris.", "Lyon."):
        Lead.script = S([[S.tool_call("research", {"question": "capital?"})], [S.text("Done.")]])
        Scout.script = S([[S.text(answer)]])
        lead.clear_messages()
        await lead.send("What is the capital?")
        answers.append(research_call(lead)["output"])
    assert answers == ["Paris.", "Lyon."]
    assert [text for _, text in texts(lead.sub_agent(Scout, "s1"))] == ["capital?", "Paris.", "capital?", "Lyon."]
    assert [r["output"] for r in lead.agent_tool_runs()] == ["Lyon."]


async def test_cancelling_the_parent_settles_the_run_aborted(tmp_path: Path) -> None:
    """Think: `cancellation → aborted` (the parent's abort reaches the child and its run)."""
    Lead.script = S([[S.tool_call("research", {"question": "long"})]])
    Scout.script = S([[S.text("y" * 300, chunk_size=1)]], delay=0.01)
    Scout.streaming = str(tmp_path / "streaming")
    lead = Lead("lead", db=tmp_path / "a.sqlite")
    task = lead.submit("go")
    await eventually(lambda: Path(tmp_path / "streaming").exists(), what="the scout streams")
    lead.abort_all_requests()
    assert (await task).status == "aborted"
    (run,) = lead.agent_tool_runs()
    assert (run["status"], run["error"]) == ("aborted", "the parent's turn was cancelled")
    scout = lead.sub_agent(Scout, "s1")
    await scout.wait_until_stable(timeout=10)
    assert scout.turns()[-1]["status"] == "aborted"


# -- re-attach after a dead process, in this process (rows written as a dead process leaves them) ----
def left_by_dead_lead(lead: Think, monkeypatch: pytest.MonkeyPatch, *, child_turn: str | None,
                      run_status: str = "running") -> None:
    """Write what a process that died inside `research` leaves: the lead's user message, its
    `running` turn and a stream ending at the call's input, the scout's user message (and reply,
    when `child_turn` is "completed") with its turn row, and the run row."""
    from think_nb.messages import user_message

    scout = lead.sub_agent(Scout, "s1")
    lead_rt, scout_rt = runtime_of(lead), runtime_of(scout)
    lead_rt.conversation.append(user_message("go"))
    question = {**user_message("where?"), "id": "m-question"}
    scout_rt.conversation.append(question)
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", "dead-process")
        lead_rt.store.turn_log.start("req-lead", "send", False)
        lead_rt.store.streams.set_status("req-lead", False, "streaming")
        lead_rt.store.streams.append("req-lead", [
            {"type": "start", "messageId": "m-lead"}, {"type": "start-step"},
            {"type": "tool-input-start", "toolCallId": "c1", "toolName": "research"},
            {"type": "tool-input-available", "toolCallId": "c1", "toolName": "research",
             "input": {"question": "where?"}}])
        if child_turn is not None:
            started = scout_rt.store.turn_log.start("req-scout", "chat", False)
            if child_turn == "completed":
                scout_rt.conversation.append({"id": "m-answer", "role": "assistant",
                                              "parts": [{"type": "text", "text": ANSWER}]})
                scout_rt.store.turn_log.finish("req-scout", "completed", None, started)
        lead_rt.store.child_runs.begin({
            "run_id": "agent-tool:c1", "child_key": "Lead:lead/Scout:s1", "child_class": "Scout",
            "child_name": "s1", "class_ref": "agent_tool_agents:Scout", "parent_request_id": "req-lead",
            "parent_tool_call_id": "c1", "request_id": "req-scout", "input_message_id": "m-question"})
        if run_status == "completed":
            lead_rt.store.child_runs.settle("agent-tool:c1", "completed", summary=ANSWER, output=ANSWER)


async def test_a_run_whose_child_turn_ended_is_settled_from_the_file_and_delivered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window between the child's turn ending and its run row being settled: re-attach reads
    the child's turn log and reply (Think: `A completed child is finalized in the parent without
    re-running already-finished work`); the lead's call gets it before `on_chat_recovery` sees it."""
    db = tmp_path / "a.sqlite"
    left_by_dead_lead(Lead("lead", db=db), monkeypatch, child_turn="completed")
    seen: list = []
    monkeypatch.setattr(Lead, "on_chat_recovery", lambda self, ctx: seen.append(ctx.partial_parts) or
                        {"continue": True})
    Lead.script = S([[S.text("The scout found it.")]])
    lead = Lead("lead", db=db)
    assert seen[0][1] == {"type": "tool-research", "toolCallId": "c1", "state": "output-available",
                          "input": {"question": "where?"}, "output": ANSWER}
    (run,) = lead.agent_tool_runs()
    assert (run["status"], run["output"], run["summary"]) == ("completed", ANSWER, ANSWER)
    assert lead.recovery_task is not None
    (result,) = await lead.recovery_task
    assert result.status == "completed" and Scout.script.requests == []
    tool_message = next(m for m in Lead.script.requests[0]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == ANSWER


async def test_a_run_settled_before_the_kill_is_never_run_again(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Think's `runAgentTool` is idempotent by run id: a completed run is delivered, not re-run;
    and `delegate` in the same tool call returns its output without calling the child."""
    db = tmp_path / "a.sqlite"
    left_by_dead_lead(Lead("lead", db=db), monkeypatch, child_turn="completed", run_status="completed")
    Lead.script = S([[S.text("Done.")]])
    lead = Lead("lead", db=db)
    assert research_call(lead)["output"] == ANSWER
    await lead.recovery_task
    from think_nb.tools.tool import CURRENT_TOOL_CALL

    token = CURRENT_TOOL_CALL.set("c1")
    try:
        assert await lead.delegate(lead.sub_agent(Scout, "s1"), "where?") == ANSWER
    finally:
        CURRENT_TOOL_CALL.reset(token)
    assert Scout.script.requests == [] and len(lead.agent_tool_runs()) == 1


def test_the_childs_class_is_found_by_module_and_qualname_first() -> None:
    class Scout(Think):  # another class of the same name, defined later
        pass

    assert find_class(Think, "Scout", "agent_tool_agents:Scout") is agent_tool_agents.Scout
    assert find_class(Think, "Scout", "elsewhere:Scout") is Scout  # no exact match: the newest of that name
    assert find_class(Think, "NoSuchAgent", None) is None
    assert Reattach  # the hook recovery calls (think_nb.runtime.AgentRuntime.open)


# -- SIGKILL ----------------------------------------------------------------------------------------
class ForkServer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def start(self, db: Path, side: Path, mode: str) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"db": str(db), "side": str(side), "mode": mode}) + "\n").encode())
        await self.proc.stdin.drain()
        return int((await self.proc.stdout.readline()).decode())


@pytest_asyncio.fixture
async def server() -> AsyncIterator[ForkServer]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHILD.parent), os.environ.get("PYTHONPATH", "")])}
    proc = await asyncio.create_subprocess_exec(sys.executable, str(CHILD), stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, env=env)
    assert proc.stdout is not None
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 60)).strip() == b"ready"
        yield ForkServer(proc)
    finally:
        proc.kill()
        await proc.wait()


def stored_text(db: Path, key: str) -> int:
    """How many stored stream segments of agent `key` hold text deltas."""
    try:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return conn.execute("SELECT count(*) FROM think_stream_chunks WHERE agent_key = ? AND chunks LIKE "
                                "'%text-delta%'", (key,)).fetchone()[0]
    except sqlite3.Error:
        return 0


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def kill_when(server: ForkServer, tmp_path: Path, mode: str, ready: object) -> Path:
    db, side = tmp_path / "a.sqlite", tmp_path / "side"
    pid = await server.start(db, side, mode)
    await eventually(lambda: ready(db, side), timeout=60, what=f"the {mode} kill point")  # type: ignore[operator]
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: gone(pid), timeout=30, what=f"process {pid} gone")
    return db


def integrity(db: Path) -> str:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


async def test_sigkill_after_the_child_answered_delivers_its_answer_without_asking_it_again(
        server: ForkServer, tmp_path: Path) -> None:
    """Killed after the scout's run settled, before the lead's call had a result: the lead made
    again gives the call the scout's stored answer, and its continuation reads it; the scout's model
    is never called again."""
    db = await kill_when(server, tmp_path, "settled", lambda db, side: Path(f"{side}.hang").exists())
    Lead.script = S([[S.text("The scout says: there.")]])
    lead = Lead("lead", db=db)
    call = research_call(lead)
    assert (call["state"], call["output"]) == ("output-available", ANSWER)
    (run,) = lead.agent_tool_runs()
    assert (run["status"], run["output"], run["parent_tool_call_id"]) == ("completed", ANSWER, call["toolCallId"])
    assert lead.recovery_task is not None
    (result,) = await lead.recovery_task
    assert result.status == "completed" and texts(lead)[-1] == ("assistant", "The scout says: there.")
    sent = Lead.script.requests[0]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [ANSWER]
    assert Scout.script.requests == []
    assert texts(lead.sub_agent(Scout, "s1")) == [("user", "where?"), ("assistant", ANSWER)]
    assert integrity(db) == "ok"


async def test_sigkill_while_the_child_streams_resumes_it_when_its_recovery_continues(
        server: ForkServer, tmp_path: Path) -> None:
    """Killed while the scout streamed: the lead made again makes the scout again, whose own
    `on_chat_recovery` continues its turn (Think: the child self-heals through its chatRecovery and
    the parent collects the real outcome); the lead's call gets the scout's whole reply (partial and
    continuation) before the lead's own continuation runs."""
    db = await kill_when(server, tmp_path, "cut", lambda db, side: Path(f"{side}.streaming").exists()
                         and stored_text(db, "Lead:lead/Scout:s1") >= 1)
    Scout.resume = True
    Scout.script = S([[S.text(" And that is all.")]])
    Lead.script = S([[S.text("Lead: done.")]])
    lead = Lead("lead", db=db)
    assert research_call(lead)["state"] == "input-available"  # waits for the scout
    assert lead.agent_tool_runs()[0]["status"] == "running"
    (result,) = await lead.recovery_task
    assert result.status == "completed"
    scout = lead.sub_agent(Scout, "s1")
    assert [t["trigger"] for t in scout.turns()] == ["chat", "recovery-continue"]
    partial = texts(scout)[1][1]
    assert partial and ANSWER not in partial
    whole = partial + " And that is all."
    (run,) = lead.agent_tool_runs()
    assert (run["status"], run["output"]) == ("completed", whole)
    call = research_call(lead)
    assert (call["state"], call["output"]) == ("output-available", whole)
    sent = Lead.script.requests[0]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [whole]
    assert texts(lead)[-1] == ("assistant", "Lead: done.")
    assert integrity(db) == "ok"


async def test_sigkill_while_the_child_streams_reports_it_interrupted_when_nothing_resumes_it(
        server: ForkServer, tmp_path: Path) -> None:
    """Killed while the scout streamed, and the scout's recovery does not continue (think_nb's
    default): the run is sealed `interrupted` (Think's retryable AgentToolFailure) and the lead's
    call gets an output-error saying to call the tool again; the scout keeps its partial reply."""
    db = await kill_when(server, tmp_path, "cut", lambda db, side: Path(f"{side}.streaming").exists()
                         and stored_text(db, "Lead:lead/Scout:s1") >= 1)
    Lead.script = S([[S.text("Lead: the scout was cut off.")]])
    lead = Lead("lead", db=db)
    text = INTERRUPTED_TEXT.format(child="Lead:lead/Scout:s1")
    call = research_call(lead)
    assert (call["state"], call["errorText"]) == ("output-error", text)
    (run,) = lead.agent_tool_runs()
    assert (run["status"], run["error"]) == ("interrupted", text)
    (result,) = await lead.recovery_task
    assert result.status == "completed" and Scout.script.requests == []
    sent = Lead.script.requests[0]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [IsStr(regex=".*call the tool again to retry.*")]
    scout = lead.sub_agent(Scout, "s1")
    assert scout.messages[-1]["metadata"]["interrupted"] is True
    assert [(t["trigger"], t["status"]) for t in scout.turns()] == [("chat", "interrupted")]
    assert integrity(db) == "ok"
