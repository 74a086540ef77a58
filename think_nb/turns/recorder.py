"""`StreamRecorder`: the engine writes every turn's chunks to SQLite, whether or not a view exists
(Think's resumable stream, `think_nb.store.streams`), and is the one that broadcasts them.

The promise (write-ahead): **every chunk a listener hears (panel, terminal, `chat()` callback)
is in SQLite first.** `record` buffers a chunk (`record_deltas` a run of deltas the turn held,
`think_nb.turns.runner`); `flush` writes the buffered batch as one segment (its deltas joined,
`panel.batcher.coalesce`) in one transaction and only then hands the batch, once and in order, to
`broadcast(request_id, chunks, joined, continuation)` (`Listeners.notify_chunks`: a panel's hub
takes the joined segment, a per-chunk listener every chunk). A kernel killed at any point
therefore loses only chunks no view was ever shown.

A batch is flushed at once for a turn's first chunk and for the chunks in `FLUSH_AT_ONCE`
(settled tool chunks above all, so a recovered turn never re-runs a tool whose result was
shown; approvals, errors, the end), after `SEGMENT_DELTAS` deltas, when
`FLUSH_SECONDS` have passed since the batch's first chunk (checked whenever chunks are recorded,
and by a `call_later` timer on the running loop when the stream goes quiet), and when the turn ends.
`on_chunk` hooks and the accumulator stay per chunk (the engine calls them itself).

A view created mid-stream replays a turn with `replay(request_id)`: what is stored, which is
exactly what has been broadcast (the unflushed tail reaches it live, never twice).
Rows of finished turns are kept `KEEP_FINISHED_S`, so a view that acks late still gets them.
`clear()` deletes every row; a turn still running through the clear (it is being cancelled)
records nothing more (its last chunks, `abort`, are broadcast unrecorded: the conversation they
belong to was deleted on purpose), so they do not bring rows of a cleared conversation back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from think_nb.panel.batcher import MERGEABLE, coalesce
from think_nb.store.streams import StreamStore

log = logging.getLogger("think_nb")

SEGMENT_DELTAS = 1000
"""Deltas after which a batch is written even before `FLUSH_SECONDS` (each write is a SQLite commit:
~200 per 10,000-delta turn at 50, a few at 1,000, since a fast stream reaches `FLUSH_SECONDS` first)."""
FLUSH_SECONDS = 0.03
KEEP_FINISHED_S = 600.0
FLUSH_AT_ONCE = frozenset({
    "tool-input-available", "tool-approval-request", "tool-output-available", "tool-output-error",
    "tool-output-denied", "tool-input-error", "error", "finish", "abort",
})
Broadcast = Callable[[str, list[dict], list[dict], bool], None]
"""`broadcast(request_id, chunks, joined, continuation)`: a written batch, as recorded and joined."""


class _Live:
    """A turn in flight: its continuation flag, the chunks not yet written (and not yet broadcast)."""

    def __init__(self, continuation: bool) -> None:
        self.continuation = continuation
        self.pending: list[dict] = []  # as recorded, one per chunk (what listeners get)
        self.deltas = 0
        self.since = 0.0  # monotonic time of the batch's first chunk
        self.timer: asyncio.TimerHandle | None = None
        self.stalled = False  # its `abort` chunk said `stalled`: the stream ends `interrupted`


class StreamRecorder:
    """Records, then broadcasts, the chunks of one agent's turns (see the module docstring)."""

    def __init__(self, streams: StreamStore, broadcast: Broadcast | None = None) -> None:
        self.streams = streams
        self.broadcast: Broadcast = broadcast or (lambda request_id, chunks, joined, continuation: None)
        self._live: dict[str, _Live] = {}
        self._cleared: set[str] = set()  # turns that were live when the conversation was cleared
        self.last_chunk_at: dict[str, float] = {}  # request id -> monotonic time of its last chunk (stall watchdog)

    def active(self) -> list[str]:
        """Request ids of the turns streaming now, oldest first."""
        return list(self._live)

    def is_live(self, request_id: str) -> bool:
        return request_id in self._live

    def record(self, request_id: str, chunk: dict, continuation: bool) -> bool:
        """Buffer one chunk (written, then broadcast, by the next flush); returns True when it is
        the turn's first."""
        now = self.last_chunk_at[request_id] = time.monotonic()
        if request_id in self._cleared:
            self.broadcast(request_id, [chunk], [chunk], continuation)
            return False
        live = self._live.get(request_id)
        first = live is None
        if live is None:
            live = self._live[request_id] = _Live(continuation)
            self.streams.set_status(request_id, continuation, "streaming")
        pending = live.pending
        if not pending:
            live.since = now
        pending.append(chunk)
        kind = chunk.get("type", "")
        if kind in MERGEABLE:
            live.deltas += 1
        elif kind == "abort":
            live.stalled = chunk.get("reason") == "stalled"
        if first or kind in FLUSH_AT_ONCE:
            self.flush(request_id)
        else:
            self._due(request_id, live, now)
        return first

    def record_deltas(self, request_id: str, deltas: list[dict], continuation: bool) -> None:
        """Buffer a run of delta chunks (`MERGEABLE` types: the turn's held deltas), as `record`
        would one by one, with one clock reading for the run."""
        if not deltas:
            return
        live = self._live.get(request_id)
        if live is None or request_id in self._cleared:  # a turn's first chunk is never a held delta
            for chunk in deltas:
                self.record(request_id, chunk, continuation)
            return
        now = self.last_chunk_at[request_id] = time.monotonic()
        if not live.pending:
            live.since = now
        live.pending.extend(deltas)
        live.deltas += len(deltas)
        self._due(request_id, live, now)

    def _due(self, request_id: str, live: _Live, now: float) -> None:
        """Flush when the batch is big or old enough, else make sure a timer will."""
        if live.deltas >= SEGMENT_DELTAS or now - live.since >= FLUSH_SECONDS:
            self.flush(request_id)
        else:
            self._arm(request_id, live)

    def flush(self, request_id: str) -> None:
        """Write the turn's buffered chunks (one transaction), then broadcast them in order."""
        live = self._live.get(request_id)
        if live is None:
            return
        if live.timer is not None:
            live.timer.cancel()
            live.timer = None
        live.deltas = 0
        if not live.pending:
            return
        segment = coalesce(live.pending)
        self.streams.append(request_id, segment)  # raises: the batch stays buffered, unbroadcast
        batch, live.pending = live.pending, []
        self.broadcast(request_id, batch, segment, live.continuation)

    def end(self, request_id: str, status: str) -> None:
        """The turn ended: write and broadcast what is left, then store its final status."""
        self._cleared.discard(request_id)
        self.last_chunk_at.pop(request_id, None)
        live = self._live.get(request_id)
        if live is None:
            return
        try:
            self.flush(request_id)
            if live.stalled and status == "aborted":
                status = "interrupted"
            self.streams.set_status(request_id, live.continuation, status)
            self.streams.drop_finished(KEEP_FINISHED_S)
        except Exception:  # the turn is over either way; what could not be written is not broadcast
            log.exception("could not write the end of the stream of %s", request_id)
        finally:
            self._live.pop(request_id, None)

    def replay(self, request_id: str) -> tuple[list[dict], bool, bool] | None:
        """`(chunks so far, continuation, finished)` of a turn, or None if unknown: what is stored,
        which is what listeners have been sent (the buffered tail follows live)."""
        meta = self.streams.meta(request_id)
        if meta is None:
            return None
        chunks = coalesce([chunk for segment in self.streams.segments(request_id) for chunk in segment])
        return chunks, meta[0], meta[1] != "streaming"

    def clear(self) -> None:
        """Forget every turn's rows (the conversation was cleared); buffered chunks are dropped."""
        for live in self._live.values():
            if live.timer is not None:
                live.timer.cancel()
        self._cleared.update(self._live)
        self._live.clear()
        self.streams.clear()

    def _arm(self, request_id: str, live: _Live) -> None:
        """Make sure a quiet stream's buffered deltas are flushed within `FLUSH_SECONDS`."""
        if live.timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: the next chunk that is due, or the turn's end, flushes
        delay = max(0.0, live.since + FLUSH_SECONDS - time.monotonic())
        live.timer = loop.call_later(delay, self._flush_quietly, request_id)

    def _flush_quietly(self, request_id: str) -> None:
        live = self._live.get(request_id)
        if live is not None:
            live.timer = None
        try:
            self.flush(request_id)
        except Exception:  # the turn's next chunk or its end flushes again (and raises there)
            log.exception("could not write the stream of %s", request_id)
