"""Durable turns in the panel (issue 12): `stream_pending`, `chat_recovering`, the `pending` and
`recovering` statuses, and the resume handshake replaying the last terminal outcome."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import scripted_agent
from helpers_comm import custom_msgs, from_js
from panels import chat_request, responses, statuses, until, user_msg
from test_durable import agent_class, left_by_dead_process, partial_chunks
from think_nb.binding import runtime_of
from think_nb.panel import protocol
from think_nb.panel.widget import INTERRUPTED_TEXT, ChatPanel
from think_nb.testing import ScriptedModel as S


def resume(panel: ChatPanel, probe: str) -> list[dict]:
    before = len(custom_msgs(panel))
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": probe})
    return custom_msgs(panel)[before:]


def ack(panel: ChatPanel, request_id: str, probe: str) -> list[dict]:
    before = len(custom_msgs(panel))
    from_js(panel, {"type": protocol.STREAM_RESUME_ACK, "id": request_id, "probeId": probe})
    return custom_msgs(panel)[before:]


async def test_a_turn_not_streaming_yet_is_pending_to_a_view_that_opens(recording_comm: Any) -> None:
    import asyncio

    gate, entered = asyncio.Event(), asyncio.Event()

    async def before_turn(self: Any, ctx: Any) -> None:
        entered.set()
        await gate.wait()

    agent = scripted_agent(S([[S.text("one")], [S.text("two")]]), before_turn=before_turn,
                           message_concurrency={"strategy": "debounce", "debounce_ms": 50})
    first = ChatPanel(agent)
    from_js(first, chat_request("r1", user_msg("hi", id="u1")))
    await asyncio.wait_for(entered.wait(), 60)  # r1 is admitted and in before_turn: nothing streamed
    assert runtime_of(agent).pending_turns() == ["r1"]
    later = ChatPanel(agent)
    assert resume(later, "p2") == [protocol.stream_pending("r1", "p2")]
    from_js(first, chat_request("r2", user_msg("and this", id="u2")))  # debounced behind r1
    await until(lambda: first.status == "pending", "r2 waits out its debounce window")
    gate.set()
    await until(lambda: not agent.is_running and first.status == "ready", "both turns end")
    # the view that was told `pending` got the whole turn live, from its first chunk
    assert responses(later, "r1")[0]["chunks"][0]["type"] == "start"
    assert "pending" in statuses(first)


async def test_the_last_error_is_replayed_to_a_view_that_opens_later(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("so far"), S.error("boom")], [S.text("fine")]]))
    result = await agent.send("go")
    assert result.status == "error"
    view = ChatPanel(agent)
    assert resume(view, "p") == [protocol.stream_resuming(result.request_id, "p")]
    (frame,) = ack(view, result.request_id, "p")
    assert frame["replay"] and frame["done"] and frame["error"]
    assert frame["chunks"][-1]["type"] == "error" and "boom" in frame["chunks"][-1]["errorText"]
    assert (await agent.send("again")).status == "completed"  # a new turn clears the terminal record
    assert resume(ChatPanel(agent), "q") == [protocol.stream_resume_none("q")]


async def test_a_stalled_turn_is_replayed_as_interrupted(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("half"), S.stall()]]), chat_stream_stall_timeout=0.2)
    result = await agent.send("go")
    assert result.interrupted
    assert runtime_of(agent).store.streams.meta(result.request_id) == (False, "interrupted")
    view = ChatPanel(agent)
    assert resume(view, "p") == [protocol.stream_resuming(result.request_id, "p")]
    (frame,) = ack(view, result.request_id, "p")
    assert frame["error"] and frame["chunks"][-1] == {"type": "error", "errorText": INTERRUPTED_TEXT}


async def test_recovery_is_announced_with_chat_recovering(
        recording_comm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = agent_class(S([[S.text(" and the rest.")]]), on_chat_recovery=lambda self, ctx: {"continue": True})
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    panel = ChatPanel(agent)  # opened in the same cell, before the recovery task ran
    assert runtime_of(agent).recovering
    assert protocol.chat_recovering(True) in resume(panel, "p")
    assert agent.recovery_task is not None
    await agent.recovery_task
    frames = [m for m in custom_msgs(panel) if m["type"] == protocol.CHAT_RECOVERING]
    assert frames[-2:] == [protocol.chat_recovering(True, "req-dead"), protocol.chat_recovering(False, "req-dead")]
    assert "recovering" in statuses(panel)
    await until(lambda: panel.status == "ready", "the panel settles")
