"""The stall watchdog (Think's `chatStreamStallTimeoutMs`).

A turn whose stall timeout is set (`Think.chat_stream_stall_timeout`, seconds, or the turn's
`TurnConfig.chat_stream_stall_timeout`) is watched from the moment its config is known: when no
chunk has been recorded for that many seconds (model time and tool time alike; a reported wait
such as "loading litellm…" does not count, `think_nb.models.progress`), the turn is
marked `stalled` and aborted. It then ends like an abort (its partial message is persisted,
with `metadata.interrupted = True`), reports `TurnResult.interrupted = True`, and a `chat()`
caller gets `on_interrupted()` when a continuation will own the answer (else `on_error`).
Turns in step mode are not watched (a person is the pause).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from think_nb import events


class Turn(Protocol):
    """What the watchdog reads of a running turn (`think_nb.turns.runner.Turn` is one)."""

    request_id: str
    engine: Any  # the TurnEngine: its recorder's last chunk times, and abort_request
    waiting: tuple[str, float] | None
    wait_ended: float
    stalled: float | None


def watch(turn: Turn, timeout: float) -> asyncio.Task:
    """Start watching `turn`; the caller cancels the returned task when the turn ends."""
    return asyncio.get_running_loop().create_task(_watch(turn, float(timeout)),
                                                  name=f"think-stall-watchdog-{turn.request_id}")


async def _watch(turn: Turn, timeout: float) -> None:
    started = time.monotonic()
    last_chunk_at = turn.engine.recorder.last_chunk_at
    while True:
        now = time.monotonic()
        quiet_since = now if turn.waiting is not None else max(  # loading litellm / the model: not a stall
            last_chunk_at.get(turn.request_id, started), started, turn.wait_ended)
        remaining = quiet_since + timeout - now
        if remaining <= 0:
            break
        await asyncio.sleep(remaining)
    turn.stalled = timeout
    events.emit("chat:stream:stalled", {"request_id": turn.request_id, "timeout_ms": round(timeout * 1000, 3)})
    turn.engine.abort_request(turn.request_id, "stalled")
