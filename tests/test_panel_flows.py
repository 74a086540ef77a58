"""ChatPanel flows in-process, on a real `Think` agent and a `ScriptedModel`: many panels of one
agent, resume from the stream the engine records in SQLite, shared status, approvals, client
tool results, regenerate, clear, the client-tool runner, step mode.

Frames are played and read with helpers_comm; a `hold` tool (panels.Holds) keeps a turn running
at a known point while the test acts.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest

from agents import scripted_agent
from helpers_comm import custom_msgs, from_js
from panels import (
    Holds,
    chat_request,
    chunks_of,
    merged,
    patches,
    responses,
    statuses,
    streamed_text,
    until,
    user_msg,
    view_transcript,
)
from think_nb import client_tool, tool
from think_nb.binding import runtime_of
from think_nb.panel import protocol
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S

ran: list[str] = []


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return f"deleted {path}"


tz = client_tool("time_zone", "The user's time zone.", js="return 'UTC';")
sel = client_tool("selection", "The page selection.", js="return String(window.getSelection());")


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def panels_on(agent: Any) -> tuple[ChatPanel, ChatPanel]:
    return ChatPanel(agent), ChatPanel(agent)


async def test_two_panels_share_one_subscription_and_stream_the_same_text(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.deltas([f"{i}," for i in range(500)])]]))
    a, b = panels_on(agent)
    assert a._hub is b._hub
    assert len(runtime_of(agent).engine.listeners) == 1  # the agent's ViewHub, shared by both panels
    from_js(a, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    expected = "".join(f"{i}," for i in range(500))
    assert streamed_text(responses(a)) == streamed_text(responses(b)) == expected
    assert merged(chunks_of(responses(a))) == merged(chunks_of(responses(b)))
    assert a.messages == b.messages == agent.messages


async def test_a_panel_created_mid_stream_replays_the_whole_turn_from_sqlite(recording_comm: Any) -> None:
    holds = Holds()
    digits = [str(i % 10) for i in range(120)]
    script = S([[S.deltas(digits), S.tool_call("hold", {})], [S.deltas(["X"]), S.tool_call("hold", {})],
                [S.deltas(["Y"])]])
    agent = scripted_agent(script, tools=[holds.tool])
    first = ChatPanel(agent)
    from_js(first, chat_request("r1"))
    await until(lambda: holds.waiting == 1, "the first hold")

    late = ChatPanel(agent)  # a re-run cell: never saw the start of the turn
    from_js(late, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    assert custom_msgs(late)[-1] == protocol.stream_resuming("r1", "p")
    holds.release()
    await until(lambda: holds.waiting == 1 and holds.released == 1, "the second hold")  # "X" streamed
    from_js(late, {"type": protocol.STREAM_RESUME_ACK, "id": "r1", "probeId": "p"})
    replay = custom_msgs(late)[-1]
    assert (replay["replay"], replay["done"]) == (True, False)
    before = "".join(digits) + "X"
    assert streamed_text([replay]) == before

    holds.release()
    await agent.wait_until_stable(timeout=60)
    live_after = responses(late)[responses(late).index(replay) + 1:]
    assert streamed_text(live_after) == "Y"  # nothing twice, nothing missing
    assert merged(replay["chunks"] + chunks_of(live_after)) == merged(chunks_of(responses(first)))
    assert streamed_text(responses(first)) == before + "Y"
    # the stream is recorded in SQLite, under the agent's key
    store = runtime_of(agent).store
    rows = store.db.read("SELECT status FROM think_stream_metadata WHERE agent_key = ? AND request_id = 'r1'",
                               (runtime_of(agent).key,))
    assert rows == [("completed",)]


async def test_a_late_ack_after_the_turn_ended_replays_it_as_done(recording_comm: Any) -> None:
    holds = Holds()
    agent = scripted_agent(S([[S.text("hi"), S.tool_call("hold", {})], [S.text(" there")]]), tools=[holds.tool])
    a, _ = panels_on(agent)
    from_js(a, chat_request("r1"))
    await until(lambda: holds.waiting == 1, "the turn to hold")
    from_js(a, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    assert custom_msgs(a)[-1] == protocol.stream_resuming("r1", "p")
    holds.release()
    await agent.wait_until_stable(timeout=60)
    from_js(a, {"type": protocol.STREAM_RESUME_ACK, "id": "r1", "probeId": "p"})
    last = custom_msgs(a)[-1]
    assert (last["type"], last["replay"], last["done"], streamed_text([last])) == (
        protocol.USE_CHAT_RESPONSE, True, True, "hi there")


async def test_rows_left_streaming_by_a_dead_kernel_are_marked_interrupted(recording_comm: Any) -> None:
    agent = scripted_agent(S([]), name="dead")
    chunks = [{"type": "start", "messageId": "m-old"}, {"type": "start-step"}, {"type": "text-start", "id": "t"},
              {"type": "text-delta", "id": "t", "delta": "half a rep"}]
    db = runtime_of(agent).store.db
    # a row a killed kernel (owner "dead", not this process) left streaming, with what had streamed
    key = runtime_of(agent).key
    db.execute("INSERT INTO think_stream_metadata VALUES (?, 'old', 0, 'streaming', 'dead', 1, 1)", (key,))
    db.execute("INSERT INTO think_stream_chunks (agent_key, request_id, chunks, created_at) VALUES (?, 'old', ?, 1)",
               (key, json.dumps(chunks)))

    reopened = type(agent)("dead")  # the next kernel opens the agent
    panel = ChatPanel(reopened)
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    # nothing streams; the last turn was interrupted: its outcome is replayed (Think's terminal replay)
    assert custom_msgs(panel)[-1] == protocol.stream_resuming("old", "p")
    from_js(panel, {"type": protocol.STREAM_RESUME_ACK, "id": "old", "probeId": "p"})
    from think_nb.panel.widget import INTERRUPTED_TEXT
    assert custom_msgs(panel)[-1] == protocol.use_chat_response(
        "old", [*chunks, {"type": "error", "errorText": INTERRUPTED_TEXT}], done=True, error=True, replay=True)
    assert db.read("SELECT status FROM think_stream_metadata WHERE request_id = 'old'") == [("interrupted",)]
    recovered = panel.messages[-1]  # what had streamed is kept, marked interrupted
    assert (recovered["id"], recovered["parts"][-1]["text"], recovered["metadata"]["interrupted"]) == (
        "m-old", "half a rep", True)


async def test_status_is_shared_and_not_clobbered_by_a_skipped_turn(recording_comm: Any) -> None:
    holds = Holds()
    agent = scripted_agent(S([[S.text("partial"), S.tool_call("hold", {})], [S.error("boom")]]),
                           tools=[holds.tool], message_concurrency="drop")
    a, b = panels_on(agent)
    from_js(a, chat_request("r1"))
    await until(lambda: holds.waiting == 1 and a.status == "streaming", "the turn to stream and hold")
    assert b.status == "streaming"
    from_js(b, chat_request("r2", user_msg("me too", id="u2")))  # dropped while r1 streams
    assert responses(b)[-1] == protocol.use_chat_response("r2", [], done=True)
    holds.release()
    await agent.wait_until_stable(timeout=60)
    await until(lambda: a.status == "error", "the error status")

    error = agent.turns()[-1]["error"]
    assert [(t["request_id"], t["status"]) for t in agent.turns()] == [("r1", "error")]
    assert "boom" in error
    assert (a.status, a.error, b.status, b.error) == ("error", error, "error", error)
    assert statuses(a) == statuses(b) == ["submitted", "streaming", "error"]  # never "ready" in between
    assert [m["id"] for m in agent.messages if m["role"] == "user"] == ["u1"]


async def test_status_waits_for_approval_and_for_client_tools(recording_comm: Any) -> None:
    script = S([[S.tool_call("delete_file", {"path": "/tmp/x"})], [S.tool_call("time_zone", {})],
                [S.text("Deleted, and you are on UTC.")]])
    agent = scripted_agent(script, tools=[delete_file, tz])
    a, b = panels_on(agent)
    assert a.client_tools[0]["js"] == "return 'UTC';"
    from_js(a, chat_request("r1"))
    await until(lambda: a.status == "awaiting-approval", "awaiting-approval")
    assert b.status == "awaiting-approval"

    from_js(b, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_0", "approved": True})
    await until(lambda: a.status == "awaiting-client-tool", "awaiting-client-tool")
    assert b.status == "awaiting-client-tool"
    assert ran == ["/tmp/x"]

    from_js(a, {"type": protocol.TOOL_RESULT, "toolCallId": "call_2_0", "toolName": "time_zone", "output": "UTC"})
    assert await agent.wait_until_stable(timeout=60)
    await until(lambda: a.status == "ready", "ready")
    # the same in both panels, never "ready" while the user or a turn is still to act
    assert statuses(a) == statuses(b)
    assert [s for s in statuses(a) if s not in ("submitted", "streaming")] == [
        "awaiting-approval", "awaiting-client-tool", "ready"]
    assert statuses(a)[:3] == ["submitted", "streaming", "awaiting-approval"]
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [
        ("panel", "completed"), ("continuation", "completed"), ("continuation", "completed")]


async def test_approval_frames_reach_the_agent_and_refusals_are_logged(
    recording_comm: Any, caplog: pytest.LogCaptureFixture
) -> None:
    script = S([[S.tool_call("delete_file", {"path": "a"}), S.tool_call("delete_file", {"path": "b"})],
                [S.text("Deleted a, kept b.")]])
    agent = scripted_agent(script, tools=[delete_file])
    a, _ = panels_on(agent)
    from_js(a, chat_request("r1"))
    await until(lambda: len(agent.pending_approvals()) == 2, "two calls to wait for approval")
    await until(lambda: not agent.is_running, "the turn to end")
    with caplog.at_level(logging.WARNING, logger="think_nb.panel.widget"):
        from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "nope", "approved": True})
        from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "nope", "approved": False})
        from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_0", "approved": "yes"})
    assert "ignored approve('nope')" in caplog.text and "ignored deny('nope')" in caplog.text
    assert "ignored malformed frame" in caplog.text
    assert [p["tool_call_id"] for p in agent.pending_approvals()] == ["call_1_0", "call_1_1"]  # nothing changed

    from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_0", "approved": True})
    assert not agent.is_running  # the batch still waits for call_1_1
    from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_1", "approved": False, "reason": "no"})
    assert await agent.wait_until_stable(timeout=60)
    with caplog.at_level(logging.WARNING, logger="think_nb.panel.widget"):
        from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_0", "approved": True})  # settled
    assert "ignored approve('call_1_0')" in caplog.text

    assert ran == ["a"]
    calls = [p for p in agent.messages[1]["parts"] if p["type"] == "tool-delete_file"]
    assert [(p["toolCallId"], p["state"], p["approval"]["approved"], p["approval"].get("reason")) for p in calls] == [
        ("call_1_0", "output-available", True, None), ("call_1_1", "output-denied", False, "no")]
    assert [m["content"] for m in script.requests[1]["messages"] if m["role"] == "tool"] == [
        "deleted a", "The user denied this tool call. no"]
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("panel", "completed"),
                                                                   ("continuation", "completed")]


async def test_tool_results_reach_the_agent(recording_comm: Any, caplog: pytest.LogCaptureFixture) -> None:
    script = S([[S.tool_call("time_zone", {}), S.tool_call("selection", {})], [S.text("You are on UTC.")]])
    agent = scripted_agent(script, tools=[tz, sel])
    a, _ = panels_on(agent)
    from_js(a, chat_request("r1"))
    await until(lambda: a.status == "awaiting-client-tool", "awaiting-client-tool")
    with caplog.at_level(logging.WARNING, logger="think_nb.panel.widget"):
        from_js(a, {"type": protocol.TOOL_RESULT, "toolCallId": "zzz", "toolName": "time_zone", "output": "UTC"})
    assert "ignored add_tool_output('zzz')" in caplog.text

    from_js(a, {"type": protocol.TOOL_RESULT, "toolCallId": "call_1_0", "toolName": "time_zone", "output": "UTC"})
    assert not agent.is_running  # the batch still waits for call_1_1
    from_js(a, {"type": protocol.TOOL_RESULT, "toolCallId": "call_1_1", "toolName": "selection",
                "state": "output-error", "errorText": "no selection"})
    assert await agent.wait_until_stable(timeout=60)
    assert [(p["state"], p.get("output"), p.get("errorText")) for p in agent.messages[1]["parts"][1:]] == [
        ("output-available", "UTC", None), ("output-error", None, "no selection")]
    assert [m["content"] for m in script.requests[1]["messages"] if m["role"] == "tool"] == [
        "UTC", "Error: no selection"]
    assert agent.messages[-1]["parts"][-1]["text"] == "You are on UTC."


async def test_message_updated_replaces_the_message_and_is_broadcast(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.tool_call("delete_file", {"path": "/tmp/x"})], [S.text("Gone.")]]),
                           tools=[delete_file])
    a, b = panels_on(agent)
    from_js(a, chat_request("r1"))
    await until(lambda: a.status == "awaiting-approval", "awaiting-approval")
    from_js(b, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_0", "approved": True})
    updated = copy.deepcopy(agent.messages[1])
    assert updated["parts"][-1]["state"] == "approval-responded"
    for panel in (a, b):  # a patch holding the one message that changed
        assert panel.messages[1] == updated
        last = patches(panel)[-1]
        assert (last["after"], last["messages"], last["updated"]) == (updated["id"], [], [updated])
        assert [m["type"] for m in custom_msgs(panel)].count(protocol.MESSAGE_UPDATED) == 0
    await agent.wait_until_stable(timeout=60)
    for panel in (a, b):  # the tool's result updated the same message again
        last_update = [p for p in patches(panel) if p["updated"]][-1]
        assert last_update["updated"][-1]["parts"][-1]["state"] == "output-available"
        assert view_transcript(panel) == panel.messages == agent.messages


async def test_regenerate_streams_under_the_panels_request_id(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("first")], [S.text("second")]]))
    a, _ = panels_on(agent)
    from_js(a, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    first_reply = agent.messages[-1]["id"]
    from_js(a, {"type": protocol.USE_CHAT_REQUEST, "id": "rg", "messages": [agent.messages[0]],
                "trigger": protocol.REGENERATE_MESSAGE})
    await until(lambda: agent.turns()[-1]["request_id"] == "rg", "the regenerate turn to start")
    await agent.wait_until_stable(timeout=60)
    await until(lambda: a.status == "ready", "ready")

    assert [(t["request_id"], t["trigger"], t["status"]) for t in agent.turns()] == [
        ("r1", "panel", "completed"), ("rg", "regenerate", "completed")]
    frames = responses(a, "rg")
    assert streamed_text(frames) == "second"
    assert (frames[-1]["done"], frames[-1].get("error")) == (True, None)
    assert [m["parts"][-1]["text"] for m in a.messages] == ["What is 2 + 40?", "second"]
    assert [m["parts"][-1]["text"] for m in agent.get_branches(first_reply)] == ["first", "second"]


async def test_clear_reaches_every_panel_and_the_recorded_stream(recording_comm: Any) -> None:
    holds = Holds()
    agent = scripted_agent(S([[S.text("Hello"), S.tool_call("hold", {})], [S.text("never")]]),
                           tools=[holds.tool])
    a, b = panels_on(agent)
    from_js(a, chat_request("r1"))
    await until(lambda: holds.waiting == 1, "the turn to hold")
    assert runtime_of(agent).store.db.read("SELECT count(*) FROM think_stream_chunks")[0][0] > 0
    sent = len(custom_msgs(b))
    from_js(a, dict(protocol.chat_clear()))
    assert custom_msgs(b)[sent] == protocol.chat_clear()
    assert agent.messages == a.messages == b.messages == []

    await agent.wait_until_stable(timeout=60)  # the running turn was cancelled
    await until(lambda: a.status == "ready", "ready")
    assert agent.turns()[-1]["status"] == "aborted"
    assert agent.messages == a.messages == b.messages == [] == type(agent)(agent.name).messages
    assert runtime_of(agent).store.db.read("SELECT count(*) FROM think_stream_chunks") == [(0,)]
    assert runtime_of(agent).store.db.read("SELECT count(*) FROM think_stream_metadata") == [(0,)]
    from_js(b, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    assert custom_msgs(b)[-1] == protocol.stream_resume_none("p")


async def test_client_id_of_a_sender_makes_it_the_runner(recording_comm: Any) -> None:
    script = S([[S.text("ok")]])
    agent = scripted_agent(script, tools=[])
    a, b = panels_on(agent)
    from_js(a, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "tab1"})
    from_js(b, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "tab2"})
    assert a.client_tool_runner == b.client_tool_runner == "tab2"
    page_selection = {"name": "page_selection", "description": "The page selection.",
                      "parameters": {"type": "object", "properties": {}}}
    from_js(a, chat_request("r", clientId="tab1", clientTools=[page_selection]))
    assert a.client_tool_runner == b.client_tool_runner == "tab1"
    await agent.wait_until_stable(timeout=60)
    assert [(t["request_id"], t["status"]) for t in agent.turns()] == [("r", "completed")]
    assert agent.messages[0]["id"] == "u1"
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["page_selection"]  # offered to the model
    assert "page_selection" in runtime_of(agent).client_tool_names()


async def test_step_mode_pause_shows_in_every_panel(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("stepped")]]), name="stepped")
    a, b = panels_on(agent)
    stepper = agent.step("hi")
    event = await stepper.next()
    assert event.hook == "before_turn"
    assert (a.status, a.paused_at, b.status, b.paused_at) == ("paused", "before_turn", "paused", "before_turn")
    assert stepper.run().status == "completed"
    await until(lambda: a.status == "ready", "ready")
    assert (a.paused_at, b.status, b.paused_at) == ("", "ready", "")
    assert [m["role"] for m in a.messages] == ["user", "assistant"]

