"""More cases of Think's own test list (the anchor map §7, `docs/think-tests.md`) for features
think_nb had and no test asserted (the rows once marked `missing`): each test's docstring names
the Think file and case. Real turns on scripted models, real SQLite files, real SIGKILLs."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent_tool_agents import Lead, Scout
from agents import eventually, scripted_agent
from helpers_comm import from_js
from panels import Holds, chat_request, until
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.panel.widget import ChatPanel
from think_nb.store import owners
from think_nb.testing import ScriptedModel as S


@pytest.fixture(autouse=True)
def fresh_agents() -> None:
    Lead.script, Lead.hang = S([]), None
    Scout.script, Scout.resume, Scout.streaming = S([]), False, None


def research_calls(agent: Think) -> list[dict]:
    return [p for m in agent.messages for p in m["parts"] if p["type"] == "tool-research"]


# -- onconnect-broadcast.test.ts ---------------------------------------------------------------------
async def test_a_panel_opened_mid_stream_starts_with_the_reply_as_stored_and_never_doubles_it(
        recording_comm: Any) -> None:
    """onconnect-broadcast.test.ts: "suppressed while streaming", think_nb's way: Think sends a view
    that connects mid-stream no transcript (the reply comes by resume); here the view's first
    transcript is the stored branch, which holds the reply as stored at its last step boundary
    (text and the waiting tool call), and when the turn ends every view has that one reply, whole."""
    holds = Holds()
    agent = scripted_agent(S([[S.text("Half of it."), S.tool_call("hold", {})], [S.text("Done.")]]),
                           tools=[holds.tool])
    first = ChatPanel(agent)
    from_js(first, chat_request("r1"))
    await until(lambda: holds.waiting == 1, "the turn holds mid-reply")
    late = ChatPanel(agent)
    assert late.messages == agent.messages
    reply = late.messages[-1]
    assert [(p["type"], p.get("text", p.get("state"))) for p in reply["parts"] if p["type"] != "step-start"] == [
        ("text", "Half of it."), ("tool-hold", "input-available")]
    holds.release()
    assert await agent.wait_until_stable(timeout=60)
    await until(lambda: late.messages == agent.messages and first.messages == agent.messages, "the reply ends")
    assert [m["role"] for m in late.messages] == ["user", "assistant"] and late.messages[-1]["id"] == reply["id"]
    assert late.messages[-1]["parts"][-1]["text"] == "Done."


# -- agent-tools.test.ts -----------------------------------------------------------------------------
async def test_a_skipped_child_turn_is_an_error_run(tmp_path: Path) -> None:
    """agent-tools.test.ts: "skipped → error" — the child's turn is skipped (its conversation was
    cleared while the turn queued): the run settles `error` saying so, and the parent's call is
    an `output-error` the model reads."""
    holds = Holds()
    Scout.script = S([[S.tool_call("hold", {})], [S.text("never asked")]])
    Lead.script = S([[S.tool_call("research", {"question": "q"})], [S.text("The scout could not answer.")]])
    lead = Lead("lead", db=tmp_path / "a.sqlite")
    scout = lead.sub_agent(Scout, "s1")
    scout_get_tools = type(scout).get_tools
    try:
        Scout.get_tools = lambda self: [holds.tool]  # type: ignore[method-assign]
        busy = scout.submit("hold on")
        await until(lambda: holds.waiting == 1, "the scout's own turn holds")
        task = lead.submit("go")
        await eventually(lambda: lead.agent_tool_runs() and lead.agent_tool_runs()[0]["request_id"],
                         what="the delegated turn is queued behind the scout's")
        scout.clear_messages()
        assert (await task).status == "completed"
        assert (await busy).status == "aborted"
    finally:
        Scout.get_tools = scout_get_tools  # type: ignore[method-assign]
    (run,) = lead.agent_tool_runs()
    assert (run["status"], run["output"]) == ("error", None)
    assert run["error"] == "the sub-agent's turn was skipped before it could finish (its conversation was cleared)"
    (call,) = research_calls(lead)
    assert call["state"] == "output-error" and call["errorText"] == (
        f"RuntimeError: Sub-agent 'Lead:lead/Scout:s1' ended error: {run['error']}")
    assert len(Scout.script.requests) == 1  # the skipped turn never called the model
    tool_message = next(m for m in Lead.script.requests[1]["messages"] if m["role"] == "tool")
    assert "skipped" in tool_message["content"]


def left_by_dead_lead_with_two_runs(lead: Think, monkeypatch: pytest.MonkeyPatch, *, answered: bool) -> None:
    """What a process that died inside two parallel `research` calls leaves: the lead's running
    turn whose stream ends at both calls' inputs, a scout per call (`s1`, `s2`) with the question
    and a turn row (completed with its answer when `answered`, else cut before it streamed),
    and two running run rows."""
    from think_nb.messages import user_message

    lead_rt = runtime_of(lead)
    lead_rt.conversation.append(user_message("go"))
    chunks: list[dict] = [{"type": "start", "messageId": "m-lead"}, {"type": "start-step"}]
    for n in (1, 2):
        chunks += [{"type": "tool-input-start", "toolCallId": f"c{n}", "toolName": "research"},
                   {"type": "tool-input-available", "toolCallId": f"c{n}", "toolName": "research",
                    "input": {"question": f"q{n}?"}}]
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", "dead-process")
        lead_rt.store.turn_log.start("req-lead", "send", False)
        lead_rt.store.streams.set_status("req-lead", False, "streaming")
        lead_rt.store.streams.append("req-lead", chunks)
        for n in (1, 2):
            scout_rt = runtime_of(lead.sub_agent(Scout, f"s{n}"))
            scout_rt.conversation.append({**user_message(f"q{n}?"), "id": f"m-q{n}"})
            started = scout_rt.store.turn_log.start(f"req-s{n}", "chat", False)
            if answered:
                scout_rt.conversation.append({"id": f"m-a{n}", "role": "assistant",
                                              "parts": [{"type": "text", "text": f"answer {n}"}]})
                scout_rt.store.turn_log.finish(f"req-s{n}", "completed", None, started)
            lead_rt.store.child_runs.begin({
                "run_id": f"agent-tool:c{n}", "child_key": f"Lead:lead/Scout:s{n}", "child_class": "Scout",
                "child_name": f"s{n}", "class_ref": "agent_tool_agents:Scout", "parent_request_id": "req-lead",
                "parent_tool_call_id": f"c{n}", "request_id": f"req-s{n}", "input_message_id": f"m-q{n}"})


async def test_every_running_run_is_re_attached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """agent-tools.test.ts: "parallel re-attach" — two runs a dead process left (two parallel
    calls, two children whose turns finished) are both settled from the children's files and
    both delivered to their calls; no child is asked again."""
    db = tmp_path / "a.sqlite"
    left_by_dead_lead_with_two_runs(Lead("lead", db=db), monkeypatch, answered=True)
    Lead.script = S([[S.text("Both answered.")]])
    lead = Lead("lead", db=db)
    assert [(r["run_id"], r["status"], r["output"]) for r in lead.agent_tool_runs()] == [
        ("agent-tool:c1", "completed", "answer 1"), ("agent-tool:c2", "completed", "answer 2")]
    assert [(c["toolCallId"], c["state"], c.get("output")) for c in research_calls(lead)] == [
        ("c1", "output-available", "answer 1"), ("c2", "output-available", "answer 2")]
    await lead.recovery_task
    assert Scout.script.requests == []


async def test_two_agent_objects_made_at_once_re_attach_once(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """agent-tools.test.ts: "startup recovery single-flight" — two parent objects made at once
    over a dead process's file: the first adopts the cut runs and resumes each child once; the
    second finds nothing left to recover."""
    db = tmp_path / "a.sqlite"
    left_by_dead_lead_with_two_runs(Lead("lead", db=db), monkeypatch, answered=False)
    Scout.resume = True
    Scout.script = S([[S.text("retried answer")], [S.text("retried answer")], [S.text("never")]])
    Lead.script = S([[S.text("Both answered.")], [S.text("never")]])
    first, second = Lead("lead", db=db), Lead("lead", db=db)
    assert first.recovery_task is not None and second.recovery_task is None
    await first.recovery_task
    assert len(Scout.script.requests) == 2 and len(Lead.script.requests) == 1
    assert [(r["run_id"], r["status"], r["output"]) for r in first.agent_tool_runs()] == [
        ("agent-tool:c1", "completed", "retried answer"), ("agent-tool:c2", "completed", "retried answer")]
    assert [t["status"] for t in first.turns()] == ["interrupted", "completed"]


# -- run-turn-recovery.test.ts -----------------------------------------------------------------------
KILLED = """
import asyncio, os, sys
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from think_nb import Think, tool
from think_nb.testing import ScriptedModel as S

@tool
async def slow() -> str:
    '''Take forever.'''
    os.close(os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT, 0o644))
    await asyncio.Event().wait()
    return "never"

class Durable(Think):
    include_workspace_tools = False
    def get_model(self):
        return S([[S.text("Working on it. "), S.tool_call("slow", {}, id="slow1")]]).model
    def get_tools(self):
        return [slow]

asyncio.run(Durable("d", db=sys.argv[1]).run_turn("do the slow thing"))
"""


async def test_a_run_turn_cut_by_sigkill_is_recovered_from_the_turn_log(tmp_path: Path) -> None:
    """run-turn-recovery.test.ts — a turn started with `run_turn` (mode "wait") whose process is
    SIGKILLed mid-tool is found in the turn log by the next agent on the file, offered to
    `on_chat_recovery` with its partial, and continued to completion."""
    db, started = tmp_path / "d.sqlite", tmp_path / "started"
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", textwrap.dedent(KILLED), str(db), str(started),
                                                env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    try:
        await eventually(lambda: started.exists() or proc.returncode is not None, timeout=120, what="the tool runs")
        assert proc.returncode is None, "the child process ended before its tool ran"
        os.kill(proc.pid, signal.SIGKILL)
        assert await proc.wait() == -signal.SIGKILL
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    seen: list = []
    script = S([[S.text("Recovered and done.")]])

    class Durable(Think):
        include_workspace_tools = False

        def get_model(self) -> str:
            return script.model

        def on_chat_recovery(self, ctx: Any) -> dict:
            seen.append((ctx.trigger, ctx.partial_text))
            return {"continue": True}

    agent = Durable("d", db=db)
    assert seen == [("save_messages", "Working on it. ")]
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed" and result.continuation
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("save_messages", "interrupted"),
                                                                  ("recovery-continue", "completed")]
    cut = agent.messages[1]
    assert [p["type"] for p in cut["parts"] if p["type"] != "step-start"] == ["text", "tool-slow"]
    assert agent.messages[-1]["parts"][-1]["text"] == "Recovered and done."


# -- execute-hitl.test.ts -----------------------------------------------------------------------------
async def test_a_paused_execute_call_under_a_compaction_overlay_still_resumes() -> None:
    """execute-hitl.test.ts: "compacted paused part" — the message holding a paused `execute` call
    is summarised by a compaction overlay; the pause is still listed, approving it resumes the
    same run (the gated tool runs once), the stored part settles, and the overlay stays."""
    from test_execute import CODE, coder, ran

    ran.clear()
    def summarise_everything(messages: list[dict], ctx: Any) -> dict:
        return {"summary": "The user asked for a deletion, which waits for approval.",
                "from_message_id": messages[0]["id"], "to_message_id": messages[-1]["id"]}

    script = S([[S.tool_call("execute", {"code": CODE})], [S.text("Deleted, and 84.")]])
    agent = coder(script, hooks={"configure_session": lambda self, s: s.on_compaction(summarise_everything)})
    await agent.send("go")
    paused_id = agent.messages[-1]["id"]
    overlay = await agent.compact()
    assert overlay is not None and overlay["to_message_id"] == paused_id
    assert [p["tool_call_id"] for p in agent.pending_approvals()] == ["call_1_0"]
    result = await agent.approve("call_1_0")
    assert result.status == "completed" and ran == ["/tmp/x"]
    part = next(p for p in agent.messages[1]["parts"] if p.get("toolCallId") == "call_1_0")
    assert part["state"] == "output-available" and part["output"]["result"] == [42.0, "deleted /tmp/x", 84.0]
    sent = script.requests[1]["messages"]
    assert any("waits for approval" in str(m.get("content")) for m in sent)
    assert agent.messages[-1]["parts"][-1]["text"] == "Deleted, and 84."
