"""ChatPanel, in-process: frames sent, coalescing, panel -> agent dispatch, traits.

The agent here is a small test double of the listener interface the engine implements
(subscribe / submit / abort_request / clear_messages / messages / name / db_path);
integration with the real Think agent is tested elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from helpers_comm import custom_msgs, from_js, open_state, state_updates
from think_nb import protocol, widget
from think_nb.widget import ChatPanel

USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is 2 + 40?"}]}
ASSISTANT = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "42"}]}


class FakeAgent:
    """Implements the agent side of the listener interface; records what the panel asks."""

    def __init__(self) -> None:
        self.name = "calc"
        self.db_path = Path("/tmp/.think/demo.sqlite")
        self.messages: list[dict[str, Any]] = [USER]
        self.listeners: list[Any] = []
        self.submitted: list[tuple[dict[str, Any], str | None]] = []
        self.aborted: list[str] = []
        self.cleared = 0

    def subscribe(self, listener: Any) -> Any:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def submit(self, message: dict[str, Any], request_id: str | None = None, trigger: str = "programmatic",
               client_tools: list[dict[str, Any]] | None = None) -> None:
        self.submitted.append((message, request_id))
        self.client_tools = client_tools

    def abort_request(self, request_id: str) -> None:
        self.aborted.append(request_id)

    def clear_messages(self) -> None:
        self.cleared += 1
        self.messages = []
        self.publish_messages()

    # driving the panel, the way the engine will
    def chunk(self, request_id: str, chunk: dict[str, Any], continuation: bool = False) -> None:
        for listener in self.listeners:
            listener.on_chunk(request_id, chunk, continuation)

    def end(self, request_id: str, status: str = "completed", error: str | None = None) -> None:
        for listener in self.listeners:
            listener.on_turn_end(request_id, status, error)

    def publish_messages(self) -> None:
        for listener in self.listeners:
            listener.on_messages(self.messages)


def responses(panel: ChatPanel) -> list[protocol.UseChatResponse]:
    return [m for m in custom_msgs(panel) if m["type"] == protocol.USE_CHAT_RESPONSE]


def text_of(frames: list[protocol.UseChatResponse]) -> str:
    return "".join(
        c["delta"] for f in frames for c in f["chunks"] if c["type"] == "text-delta"
    )


def open_text(agent: FakeAgent, rid: str) -> None:
    for c in ({"type": "start", "messageId": "a1"}, {"type": "start-step"}, {"type": "text-start", "id": "t"}):
        agent.chunk(rid, c)


def close_text(agent: FakeAgent, rid: str) -> None:
    for c in ({"type": "text-end", "id": "t"}, {"type": "finish-step"}, {"type": "finish"}):
        agent.chunk(rid, c)


@pytest.fixture
def agent() -> FakeAgent:
    return FakeAgent()


@pytest.fixture
def panel(recording_comm: Any, agent: FakeAgent) -> ChatPanel:
    return ChatPanel(agent)


def test_opens_with_agent_state_and_subscribes(panel: ChatPanel, agent: FakeAgent) -> None:
    state = open_state(panel)
    assert len(state["uid"]) == 32
    assert {k: state[k] for k in ("agent_name", "db_path", "status", "error", "messages")} == {
        "agent_name": "calc",
        "db_path": "/tmp/.think/demo.sqlite",
        "status": "ready",
        "error": "",
        "messages": [USER],
    }
    assert len(agent.listeners) == 1


def test_missing_bundle_names_the_fix(
    recording_comm: Any, agent: FakeAgent, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(widget, "ESM_PATH", tmp_path / "widget.js")
    with pytest.raises(FileNotFoundError, match=r"cd js && npm install && npm run build"):
        ChatPanel(agent)


def chunk_types(frames: list[protocol.UseChatResponse]) -> list[str]:
    """Chunk types across frames, a run of one type counted once (deltas split by flushes)."""
    types = [c["type"] for f in frames for c in f["chunks"]]
    return [t for i, t in enumerate(types) if i == 0 or types[i - 1] != t]


def test_sync_turn_of_10000_deltas_is_a_few_frames(panel: ChatPanel, agent: FakeAgent) -> None:
    start = time.monotonic()
    open_text(agent, "r1")
    for i in range(10_000):
        agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": str(i % 10)})
    close_text(agent, "r1")
    agent.messages = [USER, ASSISTANT]
    agent.end("r1")

    elapsed = time.monotonic() - start

    frames = responses(panel)
    assert len(frames) <= elapsed / widget.FLUSH_INTERVAL_S + 2
    assert text_of(frames) == "".join(str(i % 10) for i in range(10_000))
    assert chunk_types(frames) == [
        "start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish",
    ]  # fmt: skip
    assert frames[-1]["done"] is True and "error" not in frames[-1]
    assert {f["id"] for f in frames} == {"r1"}
    assert panel.status == "ready"
    assert panel.messages == [USER, ASSISTANT]


async def test_async_turn_stays_under_30_frames_per_second(
    panel: ChatPanel, agent: FakeAgent
) -> None:
    start = time.monotonic()
    open_text(agent, "r1")
    for i in range(10_000):
        agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": "x"})
        if i % 25 == 0:
            await asyncio.sleep(0.001)  # a model that streams over ~0.5 s
    close_text(agent, "r1")
    await asyncio.sleep(0.1)
    agent.end("r1")
    elapsed = time.monotonic() - start

    frames = responses(panel)
    assert len(frames) >= 3, "timer flushes must send frames while the turn runs"
    assert len(frames) <= elapsed * 30 + 2
    assert text_of(frames) == "x" * 10_000
    assert frames[-1]["done"] is True


def test_only_consecutive_deltas_of_the_same_part_merge(
    panel: ChatPanel, agent: FakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(panel._batcher, "_interval", 3600.0)  # one batch, however slow the test
    agent.chunk("r1", {"type": "start"})  # the first chunk of a quiet panel goes out at once
    for c in (
        {"type": "text-delta", "id": "a", "delta": "1"},
        {"type": "text-delta", "id": "a", "delta": "2"},
        {"type": "text-delta", "id": "b", "delta": "3"},
        {"type": "reasoning-delta", "id": "b", "delta": "4"},
        {"type": "reasoning-delta", "id": "b", "delta": "5"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"a"'},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": ": 1}"},
        {"type": "text-delta", "id": "a", "delta": "6"},
    ):
        agent.chunk("r1", c)
    agent.end("r1")
    first, rest = responses(panel)
    assert first["chunks"] == [{"type": "start"}]
    assert rest["chunks"] == [
        {"type": "text-delta", "id": "a", "delta": "12"},
        {"type": "text-delta", "id": "b", "delta": "3"},
        {"type": "reasoning-delta", "id": "b", "delta": "45"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"a": 1}'},
        {"type": "text-delta", "id": "a", "delta": "6"},
    ]


def test_continuation_and_request_id_are_kept_per_frame(panel: ChatPanel, agent: FakeAgent) -> None:
    agent.chunk("r1", {"type": "start"})
    agent.chunk("r2", {"type": "start"}, continuation=True)
    agent.end("r1")
    agent.end("r2")
    summary = [(f["id"], f.get("continuation", False), f["done"]) for f in responses(panel)]
    assert summary[-1] == ("r2", True, True)
    assert ("r1", False, True) in summary


def test_error_turn_sends_error_frame_and_sets_traits(panel: ChatPanel, agent: FakeAgent) -> None:
    agent.chunk("r1", {"type": "error", "errorText": "429"})
    agent.end("r1", "error", "429 Too Many Requests")
    frames = responses(panel)
    assert [c for f in frames for c in f["chunks"]] == [{"type": "error", "errorText": "429"}]
    assert (frames[-1]["done"], frames[-1].get("error")) == (True, True)
    assert (panel.status, panel.error) == ("error", "429 Too Many Requests")


def test_on_messages_replaces_the_messages_trait(panel: ChatPanel, agent: FakeAgent) -> None:
    agent.messages.append(ASSISTANT)  # the engine mutates its own list in place...
    agent.publish_messages()
    agent.messages.append({**USER, "id": "u2"})
    agent.publish_messages()  # ...and every change still syncs
    synced = [s["messages"] for s in state_updates(panel) if "messages" in s]
    assert synced == [[USER, ASSISTANT], [USER, ASSISTANT, {**USER, "id": "u2"}]]


def test_use_chat_request_submits_the_last_message(panel: ChatPanel, agent: FakeAgent) -> None:
    request = protocol.parse_frame(
        {
            "type": protocol.USE_CHAT_REQUEST,
            "id": "req-1",
            "messages": [ASSISTANT, USER],
            "trigger": protocol.SUBMIT_MESSAGE,
        }
    )
    from_js(panel, dict(request or {}))
    assert agent.submitted == [(USER, "req-1")]
    assert panel.status == "submitted"


def test_submit_failure_becomes_an_error_frame(
    panel: ChatPanel, agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(message: dict[str, Any], request_id: str | None = None, **options: Any) -> None:
        raise RuntimeError("no event loop")

    agent.submit = refuse  # type: ignore[method-assign]
    frame = {"type": protocol.USE_CHAT_REQUEST, "id": "r", "messages": [USER], "trigger": protocol.SUBMIT_MESSAGE}
    from_js(panel, frame)
    last = responses(panel)[-1]
    assert (last["done"], last.get("error"), last["chunks"][0]["errorText"]) == (True, True, "no event loop")
    assert (panel.status, panel.error) == ("error", "no event loop")


def test_cancel_and_clear_reach_the_agent(panel: ChatPanel, agent: FakeAgent) -> None:
    from_js(panel, {"type": protocol.CHAT_REQUEST_CANCEL, "id": "req-1"})
    assert agent.aborted == ["req-1"]
    from_js(panel, dict(protocol.chat_clear()))
    assert agent.cleared == 1
    assert panel.messages == []
    assert custom_msgs(panel)[-1] == protocol.chat_clear()


@pytest.mark.parametrize(
    "content",
    [
        "nonsense",
        {"type": "cf_agent_use_chat_request"},
        {"type": protocol.CHAT_REQUEST_CANCEL},
        dict(protocol.stream_resuming("r1")),  # a kernel -> panel frame sent back
    ],
)
def test_malformed_or_misdirected_frames_are_logged_and_ignored(
    panel: ChatPanel, agent: FakeAgent, content: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="think_nb.widget"):
        from_js(panel, content)
    assert (agent.submitted, agent.aborted, agent.cleared) == ([], [], 0)
    assert any(r.name == "think_nb.widget" for r in caplog.records)


def test_handler_errors_are_logged_not_raised(
    panel: ChatPanel, agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(request_id: str) -> None:
        raise ValueError("engine bug")

    agent.abort_request = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="think_nb.widget"):
        from_js(panel, {"type": protocol.CHAT_REQUEST_CANCEL, "id": "r"})
    assert "engine bug" in caplog.text


def test_resume_replays_the_turn_so_far_then_goes_on_live(panel: ChatPanel, agent: FakeAgent) -> None:
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v1"})
    assert custom_msgs(panel)[-1] == protocol.stream_resume_none("v1")

    open_text(agent, "r1")
    agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": "Hel"})
    agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": "lo"})
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v2"})
    assert custom_msgs(panel)[-1] == protocol.stream_resuming("r1", "v2")
    from_js(panel, {"type": protocol.STREAM_RESUME_ACK, "id": "r1", "probeId": "v2"})
    assert custom_msgs(panel)[-1] == protocol.use_chat_response(
        "r1",
        [
            {"type": "start", "messageId": "a1"},
            {"type": "start-step"},
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "Hello"},
        ],
        replay=True,
    )
    agent.chunk("r1", {"type": "text-delta", "id": "t", "delta": "!"})
    agent.end("r1")
    assert responses(panel)[-1]["chunks"] == [{"type": "text-delta", "id": "t", "delta": "!"}]
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v3"})
    assert custom_msgs(panel)[-1] == protocol.stream_resume_none("v3")
    assert panel.client_tool_runner == "v3"  # the latest view to attach runs client tools


def test_close_unsubscribes(panel: ChatPanel, agent: FakeAgent) -> None:
    panel.close()
    assert panel._hub._listeners == []
