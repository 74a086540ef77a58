"""`StreamRecorder`: the engine writes every turn's chunks to SQLite, whether or not a view exists
(Think's resumable stream, `think_nb.store.streams`).

Chunks are coalesced into segments (`think_nb.batcher.merge_chunk`) and a segment is written at
once for a turn's first chunk and for settled tool chunks, otherwise every `SEGMENT_DELTAS`
deltas or `SEGMENT_SECONDS`, and when the turn ends. `record` runs before a chunk is broadcast,
so a replay holds everything a view has been told up to the last flush. A view created
mid-stream replays a turn with `replay(request_id)` (the unsaved tail is flushed first).
Rows of finished turns are kept `KEEP_FINISHED_S`, so a view that acks late still gets them.
`clear()` deletes every row; a turn still running through the clear (it is being cancelled) records
nothing more, so its last chunks (`abort`) do not bring rows of a cleared conversation back.
"""

from __future__ import annotations

import time

from think_nb.batcher import MERGEABLE, merge_chunk
from think_nb.store.streams import StreamStore

SEGMENT_DELTAS = 50
SEGMENT_SECONDS = 0.25
KEEP_FINISHED_S = 600.0
FLUSH_AT_ONCE = frozenset({
    "tool-input-available", "tool-approval-request", "tool-output-available", "tool-output-error",
    "tool-output-denied", "tool-input-error", "error", "finish",
})


class _Live:
    """A turn in flight: its continuation flag, unsaved segment and when it was last saved."""

    def __init__(self, continuation: bool) -> None:
        self.continuation = continuation
        self.unsaved: list[dict] = []
        self.deltas = 0
        self.saved_at = time.monotonic()


class StreamRecorder:
    """Records the chunks of one agent's turns (see the module docstring)."""

    def __init__(self, streams: StreamStore) -> None:
        self.streams = streams
        self._live: dict[str, _Live] = {}
        self._cleared: set[str] = set()  # turns that were live when the conversation was cleared

    def active(self) -> list[str]:
        """Request ids of the turns streaming now, oldest first."""
        return list(self._live)

    def is_live(self, request_id: str) -> bool:
        return request_id in self._live

    def record(self, request_id: str, chunk: dict, continuation: bool) -> bool:
        """Record one chunk; returns True when it is the turn's first."""
        if request_id in self._cleared:
            return False
        live = self._live.get(request_id)
        first = live is None
        if live is None:
            live = self._live[request_id] = _Live(continuation)
            self.streams.set_status(request_id, continuation, "streaming")
        merge_chunk(live.unsaved, chunk)
        kind = chunk.get("type", "")
        live.deltas += kind in MERGEABLE
        if first or kind in FLUSH_AT_ONCE or live.deltas >= SEGMENT_DELTAS or (
                time.monotonic() - live.saved_at >= SEGMENT_SECONDS):
            self._save(request_id, live)
        return first

    def end(self, request_id: str, status: str) -> None:
        """The turn ended: write what is left and its final status."""
        self._cleared.discard(request_id)
        live = self._live.pop(request_id, None)
        if live is None:
            return
        self._save(request_id, live)
        self.streams.set_status(request_id, live.continuation, status)
        self.streams.drop_finished(KEEP_FINISHED_S)

    def replay(self, request_id: str) -> tuple[list[dict], bool, bool] | None:
        """`(chunks so far, continuation, finished)` of a turn, or None if unknown."""
        live = self._live.get(request_id)
        if live is not None:
            self._save(request_id, live)
        meta = self.streams.meta(request_id)
        if meta is None:
            return None
        chunks: list[dict] = []
        for segment in self.streams.segments(request_id):
            for chunk in segment:
                merge_chunk(chunks, chunk)
        return chunks, meta[0], meta[1] != "streaming"

    def clear(self) -> None:
        """Forget every turn's rows (the conversation was cleared)."""
        self._cleared.update(self._live)
        self._live.clear()
        self.streams.clear()

    def _save(self, request_id: str, live: _Live) -> None:
        live.deltas, live.saved_at = 0, time.monotonic()
        if live.unsaved:
            segment, live.unsaved = live.unsaved, []
            self.streams.append(request_id, segment)
