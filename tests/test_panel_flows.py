"""ChatPanel flows in-process: many panels of one agent, resume from the SQLite stream
buffer, shared status, approvals, client tool results, regenerate, clear.

The agent is the FakeAgent of test_widget (the engine's listener interface), with a real
SQLite store so the stream buffer is the one users get.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agents import eventually
from helpers_comm import custom_msgs, from_js
from test_widget import USER, FakeAgent, close_text, open_text, responses
from think_nb import protocol
from think_nb.store import MessageStore, open_database
from think_nb.stream_buffer import StreamBuffer
from think_nb.widget import ChatPanel


class Agent(FakeAgent):
    """FakeAgent plus a store and the approval / client tool / regenerate API."""

    def __init__(self, db_path: Any) -> None:
        super().__init__()
        self._store = MessageStore(open_database(db_path), "Calc:calc", "Calc", "calc")
        self.calls: list[tuple] = []
        self.known_calls = {"call-1"}

    def approve(self, tool_call_id: str) -> bool:
        self.calls.append(("approve", tool_call_id))
        return tool_call_id in self.known_calls

    def deny(self, tool_call_id: str, reason: str | None = None) -> bool:
        self.calls.append(("deny", tool_call_id, reason))
        if tool_call_id not in self.known_calls:
            raise KeyError(tool_call_id)
        return True

    def add_tool_output(self, tool_call_id: str, output: Any = None, error_text: str | None = None) -> bool:
        self.calls.append(("add_tool_output", tool_call_id, output, error_text))
        return True

    async def regenerate(self, request_id: str | None = None) -> None:
        self.calls.append(("regenerate", request_id))
        for listener in self.listeners:  # the real agent ends the turn under the panel's request id
            listener.on_turn_end(request_id, "completed", None)

    def client_tool_specs(self) -> list[dict]:
        return [{"name": "time_zone", "description": "tz", "parameters": {"type": "object"},
                 "js": "return 'UTC';"}]

    def message_updated(self, message: dict) -> None:
        for listener in self.listeners:
            listener.on_message_updated(message)


@pytest.fixture
def agent(tmp_path: Any) -> Agent:
    return Agent(tmp_path / "nb.sqlite")


@pytest.fixture
def panels(recording_comm: Any, agent: Agent) -> tuple[ChatPanel, ChatPanel]:
    return ChatPanel(agent), ChatPanel(agent)


def streamed_text(frames: list[dict]) -> str:
    return "".join(c.get("delta", "") for f in frames for c in f["chunks"] if c["type"] == "text-delta")


def test_two_panels_share_one_subscription_and_stream_the_same_text(
    panels: tuple[ChatPanel, ChatPanel], agent: Agent
) -> None:
    a, b = panels
    assert len(agent.listeners) == 1  # the agent's StreamBuffer, shared by both panels
    open_text(agent, "r1")
    for i in range(500):
        agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": f"{i},"})
    close_text(agent, "r1")
    agent.end("r1")
    expected = "".join(f"{i}," for i in range(500))
    assert streamed_text(responses(a)) == streamed_text(responses(b)) == expected


def test_a_panel_created_mid_stream_replays_the_whole_turn_from_sqlite(
    recording_comm: Any, agent: Agent
) -> None:
    first = ChatPanel(agent)
    open_text(agent, "r1")
    for i in range(120):
        agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": str(i % 10)})
    late = ChatPanel(agent)  # a re-run cell: never saw the start of the turn
    from_js(late, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    assert custom_msgs(late)[-1] == protocol.stream_resuming("r1", "p")
    agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": "X"})  # before the ack
    from_js(late, {"type": protocol.STREAM_RESUME_ACK, "id": "r1", "probeId": "p"})
    replay = custom_msgs(late)[-1]
    assert replay["replay"] is True and replay["done"] is False
    before = "".join(str(i % 10) for i in range(120)) + "X"
    assert streamed_text([replay]) == before
    agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": "Y"})
    close_text(agent, "r1")
    agent.end("r1")
    live_after = custom_msgs(late)[custom_msgs(late).index(replay) + 1:]
    assert streamed_text(live_after) == "Y"  # nothing twice, nothing missing
    assert streamed_text(responses(first)) == before + "Y"
    # the buffer is in SQLite, under the agent's key
    rows = agent._store.db.read("SELECT status FROM stream_metadata WHERE request_id = 'r1'")
    assert rows == [("completed",)]


def test_a_late_ack_after_the_turn_ended_replays_it_as_done(panels: tuple[ChatPanel, ChatPanel], agent: Agent) -> None:
    a, _ = panels
    open_text(agent, "r1")
    agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": "hi"})
    from_js(a, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    agent.end("r1")
    from_js(a, {"type": protocol.STREAM_RESUME_ACK, "id": "r1", "probeId": "p"})
    last = custom_msgs(a)[-1]
    assert (last["replay"], last["done"], streamed_text([last])) == (True, True, "hi")


def test_rows_left_streaming_by_a_dead_kernel_are_marked_interrupted(agent: Agent) -> None:
    db = agent._store.db
    db.execute("INSERT INTO stream_metadata VALUES ('Calc:calc', 'old', 0, 'streaming', 'dead', 1, 1)")
    buffer = StreamBuffer(agent)
    assert buffer.active() == []
    assert db.read("SELECT status FROM stream_metadata WHERE request_id = 'old'") == [("interrupted",)]


def test_status_is_shared_and_not_clobbered_by_a_skipped_turn(
    panels: tuple[ChatPanel, ChatPanel], agent: Agent
) -> None:
    a, b = panels
    request = {"type": protocol.USE_CHAT_REQUEST, "id": "r1", "messages": [USER], "trigger": protocol.SUBMIT_MESSAGE}
    from_js(a, request)
    assert (a.status, b.status) == ("submitted", "submitted")
    open_text(agent, "r1")
    assert (a.status, b.status) == ("streaming", "streaming")
    from_js(b, {**request, "id": "r2"})
    agent.end("r2", "skipped")  # dropped by message_concurrency while r1 streams
    assert (a.status, b.status) == ("streaming", "streaming")
    assert responses(b)[-1] == protocol.use_chat_response("r2", [], done=True)
    agent.end("r1", "error", "boom")
    assert (a.status, a.error, b.status, b.error) == ("error", "boom", "error", "boom")


def test_status_waits_for_approval_and_for_client_tools(panels: tuple[ChatPanel, ChatPanel], agent: Agent) -> None:
    a, _ = panels
    tool = {"type": "tool-delete", "toolCallId": "call-1", "state": "approval-requested", "input": {"p": 1},
            "approval": {"id": "ap"}}
    agent.messages = [USER, {"id": "a1", "role": "assistant", "parts": [tool]}]
    agent.publish_messages()
    assert a.status == "awaiting-approval"
    client = {"type": "tool-time_zone", "toolCallId": "call-2", "state": "input-available", "input": {}}
    agent.messages = [USER, {"id": "a1", "role": "assistant", "parts": [client]}]
    agent.publish_messages()
    assert a.status == "awaiting-client-tool"
    assert a.client_tools[0]["js"] == "return 'UTC';"


def test_approval_frames_reach_the_agent_and_refusals_are_logged(
    panels: tuple[ChatPanel, ChatPanel], agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    a, _ = panels
    from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-1", "approved": True})
    from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-1", "approved": False, "reason": "no"})
    with caplog.at_level(logging.WARNING, logger="think_nb.widget"):
        from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "nope", "approved": True})
        from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "nope", "approved": False})
        from_js(a, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-1", "approved": "yes"})
    assert agent.calls == [("approve", "call-1"), ("deny", "call-1", "no"), ("approve", "nope"),
                           ("deny", "nope", None)]
    assert "ignored approve('nope')" in caplog.text and "ignored deny('nope')" in caplog.text
    assert "ignored malformed frame" in caplog.text


def test_tool_results_reach_the_agent(panels: tuple[ChatPanel, ChatPanel], agent: Agent) -> None:
    a, _ = panels
    from_js(a, {"type": protocol.TOOL_RESULT, "toolCallId": "c1", "toolName": "time_zone", "output": "UTC"})
    from_js(a, {"type": protocol.TOOL_RESULT, "toolCallId": "c2", "toolName": "sel", "state": "output-error",
                "errorText": "no selection"})
    assert agent.calls == [("add_tool_output", "c1", "UTC", None), ("add_tool_output", "c2", None, "no selection")]


def test_message_updated_replaces_the_message_and_is_broadcast(
    panels: tuple[ChatPanel, ChatPanel], agent: Agent
) -> None:
    a, b = panels
    agent.messages = [USER, {"id": "a1", "role": "assistant", "parts": []}]
    agent.publish_messages()
    updated = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "done"}]}
    agent.message_updated(updated)
    for panel in (a, b):
        assert panel.messages[-1] == updated
        assert custom_msgs(panel)[-1] == protocol.message_updated(updated)


async def test_regenerate_calls_the_agent_and_ends_the_panel_request(
    panels: tuple[ChatPanel, ChatPanel], agent: Agent
) -> None:
    a, _ = panels
    from_js(a, {"type": protocol.USE_CHAT_REQUEST, "id": "rg", "messages": [USER],
                "trigger": protocol.REGENERATE_MESSAGE})
    await next(iter(a._tasks))
    await eventually(lambda: a.status == "ready", what="the status is recomputed (on a later loop iteration)")
    assert agent.calls == [("regenerate", "rg")]
    assert responses(a)[-1] == protocol.use_chat_response("rg", [], done=True)
    assert a.status == "ready"


def test_clear_reaches_every_panel(panels: tuple[ChatPanel, ChatPanel], agent: Agent) -> None:
    a, b = panels
    open_text(agent, "r1")
    from_js(a, dict(protocol.chat_clear()))
    assert agent.cleared == 1
    assert custom_msgs(b)[-1] == protocol.chat_clear()
    assert agent._store.db.read("SELECT count(*) FROM stream_chunks") == [(0,)]


def test_client_id_of_a_sender_makes_it_the_runner(panels: tuple[ChatPanel, ChatPanel], agent: Agent) -> None:
    a, b = panels
    from_js(a, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "tab1"})
    from_js(b, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "tab2"})
    assert a.client_tool_runner == b.client_tool_runner == "tab2"
    from_js(a, {"type": protocol.USE_CHAT_REQUEST, "id": "r", "messages": [USER],
                "trigger": protocol.SUBMIT_MESSAGE, "clientId": "tab1",
                "clientTools": [{"name": "page_selection"}]})
    assert a.client_tool_runner == b.client_tool_runner == "tab1"
    assert agent.submitted[-1] == (USER, "r")
    assert agent.client_tools == [{"name": "page_selection"}]


async def test_step_mode_pause_shows_in_every_panel(recording_comm: Any, tmp_path: Any) -> None:
    from think_nb import Think
    from think_nb.testing import ScriptedModel

    script = ScriptedModel([[ScriptedModel.text("stepped")]])

    class Stepped(Think):
        def get_model(self):
            return script.model

    agent = Stepped("stepped", db=tmp_path / "step.sqlite")
    a, b = ChatPanel(agent), ChatPanel(agent)
    stepper = agent.step("hi")
    event = await stepper.next()
    assert event.hook == "before_turn"
    assert (a.status, a.paused_at, b.status, b.paused_at) == ("paused", "before_turn", "paused", "before_turn")
    assert stepper.run().status == "completed"
    await eventually(lambda: a.status == "ready", what="the panels see the turn end")
    assert (a.status, a.paused_at) == ("ready", "")
    assert [m["role"] for m in a.messages] == ["user", "assistant"]
