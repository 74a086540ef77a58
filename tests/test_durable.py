"""Durable turns (issue 12): write-ahead stream, recovery, stall watchdog, submissions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agents import eventually, scripted_agent
from think_nb import Think
from think_nb.batcher import merge_chunk
from think_nb.testing import ScriptedModel as S


def stored_chunks(agent: Think, request_id: str) -> list[dict]:
    return [c for segment in agent.store.streams.segments(request_id) for c in segment]


def merged(chunks: list[dict]) -> list[dict]:
    out: list[dict] = []
    for chunk in chunks:
        merge_chunk(out, chunk)
    return out


DELTA_TEXT = {"text-delta": "delta", "reasoning-delta": "delta", "tool-input-delta": "inputTextDelta"}


def expanded(chunks: list[dict]) -> list[object]:
    """Chunks with every delta spread into one entry per character (segments merge deltas)."""
    out: list[object] = []
    for chunk in chunks:
        key = DELTA_TEXT.get(chunk.get("type", ""))
        if key is None:
            out.append(chunk)
        else:
            rest = tuple(sorted((k, v) for k, v in chunk.items() if k != key))
            out.extend((rest, ch) for ch in chunk.get(key, ""))
    return out


class WriteAheadListener:
    """Checks, at every chunk it hears, that the chunk is already in SQLite."""

    def __init__(self, agent: Think) -> None:
        self.agent = agent
        self.heard: list[dict] = []
        self.unrecorded: list[dict] = []

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        self.heard.append(chunk)
        heard, stored = expanded(self.heard), expanded(stored_chunks(self.agent, request_id))
        if stored[:len(heard)] != heard:
            self.unrecorded.append(chunk)


async def test_every_broadcast_chunk_is_in_sqlite_first() -> None:
    script = S([[S.text("hello world " * 30, chunk_size=2), S.tool_call("add", {"a": 1, "b": 2})],
                [S.text("three", chunk_size=1)]], delay=0.001)
    agent = scripted_agent(script)
    listener = WriteAheadListener(agent)
    agent.subscribe(listener)
    result = await agent.send("go")
    assert result.status == "completed"
    assert listener.unrecorded == []
    assert len(listener.heard) > 100  # every chunk, one by one
    # and everything recorded was broadcast, in order
    assert expanded(listener.heard) == expanded(stored_chunks(agent, result.request_id))


async def test_a_quiet_stream_is_flushed_within_the_flush_interval() -> None:
    # one delta, then the model goes quiet: the delta reaches listeners without waiting for more
    gate = asyncio.Event()
    heard: list[dict] = []

    class Listener:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            heard.append(chunk)

    async def before_tool_call(self: Think, ctx: object) -> None:
        await gate.wait()

    script = S([[S.text("ab", chunk_size=1), S.tool_call("add", {"a": 1, "b": 2})], [S.text("ok")]])
    agent = scripted_agent(script, before_tool_call=before_tool_call)
    agent.subscribe(Listener())
    task = agent.submit("go")
    await eventually(lambda: any(c.get("type") == "tool-input-available" for c in heard), timeout=30,
                     what="the tool call reaches the listener while the turn waits")
    gate.set()
    assert (await task).status == "completed"


async def test_a_failed_write_broadcasts_nothing_of_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    heard: list[dict] = []

    class Listener:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            heard.append(chunk)

    agent = scripted_agent(S([[S.text("abc")]]))
    agent.subscribe(Listener())
    real = agent.store.streams.append
    calls = {"n": 0}

    def failing(request_id: str, segment: list[dict]) -> None:
        calls["n"] += 1
        if calls["n"] >= 2:
            raise OSError("disk full")
        real(request_id, segment)

    monkeypatch.setattr(agent.store.streams, "append", failing)
    result = await agent.send("go")
    assert result.status == "error"
    assert [c["type"] for c in heard] == ["start"]  # only what was written before the failure
    assert json.dumps(heard)  # plain chunks


def test_recorder_replay_is_what_was_broadcast(tmp_path: Path) -> None:
    from think_nb.store.agent import AgentStore
    from think_nb.store.db import open_database
    from think_nb.turns.recorder import StreamRecorder

    store = AgentStore(open_database(tmp_path / "r.sqlite"), "K:k", "K", "k")
    heard: list[dict] = []
    recorder = StreamRecorder(store.streams, lambda rid, chunk, cont: heard.append(chunk))
    recorder.record("r1", {"type": "start"}, False)
    recorder.record("r1", {"type": "text-start", "id": "t"}, False)
    recorder.record("r1", {"type": "text-delta", "id": "t", "delta": "a"}, False)
    replay = recorder.replay("r1")
    assert replay is not None
    assert replay[0] == merged(heard)  # the buffered tail is not replayed: it follows live
    recorder.end("r1", "completed")
    assert merged(heard) == recorder.replay("r1")[0]  # type: ignore[index]
    assert [c["type"] for c in heard] == ["start", "text-start", "text-delta"]


# -- stall watchdog -------------------------------------------------------------------------------
async def test_a_stalled_model_stream_is_aborted_and_its_partial_kept() -> None:
    script = S([[S.text("partial ", chunk_size=4), S.stall(), S.text("never")]])
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2)
    result = await agent.send("go")
    assert result.status == "aborted" and result.interrupted
    assert "stalled" in (result.error or "")
    reply = agent.messages[-1]
    assert reply["role"] == "assistant" and reply["metadata"]["interrupted"] is True
    assert "".join(p.get("text", "") for p in reply["parts"]) == "partial "
    assert agent.turns()[-1]["status"] == "aborted"


async def test_tool_time_counts_and_turn_config_overrides_the_class_timeout() -> None:
    gate = asyncio.Event()

    async def slow(x: int) -> int:
        """Wait for a gate that never opens."""
        await gate.wait()
        return x

    from think_nb import tool
    script = S([[S.tool_call("slow", {"x": 1})], [S.text("done")]])
    agent = scripted_agent(script, tools=[tool(slow)], chat_stream_stall_timeout=None,
                           before_turn=lambda self, ctx: {"chat_stream_stall_timeout": 0.2})
    result = await agent.send("go")
    assert result.interrupted and result.status == "aborted"
    parts = agent.messages[-1]["parts"]
    assert any(p.get("toolCallId") and p.get("state") in ("input-available", "output-error") for p in parts)


async def test_no_stall_when_chunks_keep_coming() -> None:
    script = S([[S.text("x" * 40, chunk_size=1)]], delay=0.01)  # 0.4 s in all, never 0.2 s quiet
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2)
    result = await agent.send("go")
    assert result.status == "completed" and not result.interrupted


async def test_chat_caller_gets_on_interrupted_on_a_stall() -> None:
    events: list[str] = []

    class Callback:
        def on_start(self, info: dict) -> None:
            events.append("start")

        def on_event(self, raw: str) -> None:
            pass

        def on_done(self) -> None:
            events.append("done")

        def on_error(self, error: str) -> None:
            events.append("error")

        def on_interrupted(self, error: str) -> None:
            events.append("interrupted")

    agent = scripted_agent(S([[S.text("a"), S.stall()]]), chat_stream_stall_timeout=0.2)
    result = await agent.chat("go", Callback())
    assert result.interrupted
    assert events == ["start", "interrupted"]
