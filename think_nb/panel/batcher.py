"""Coalescing UIMessageChunks into `use_chat_response` frames (the panel's throughput guard).

Jupyter Server drops IOPub traffic above 1000 messages/s (docs/platform-facts.md §3, §7), so a
panel never sends a frame per delta: `merge_chunk` joins consecutive deltas of one part, and
`ChunkBatcher` sends at most one frame per interval, except that a tool call whose input is
complete (`SEND_AT_ONCE`) goes out at once: the tool may run next on the kernel's thread
(`run_code` runs the agent's code there), and while it runs the loop cannot fire the batch's
timer, so the panel would not show the call, nor know that Stop must interrupt the kernel.
Used by `widget.py` (frames) and `turns/recorder.py` (stream segments). Not the protocol
(`protocol.py`) and not the panel.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the frames' module loads with a panel (a turn's recorder uses `coalesce` only)
    from think_nb.panel.protocol import UIMessageChunk, UseChatResponse

MERGEABLE = {
    "text-delta": ("id", "delta"),
    "reasoning-delta": ("id", "delta"),
    "tool-input-delta": ("toolCallId", "inputTextDelta"),
}


SEND_AT_ONCE = frozenset({"tool-input-available"})
"""Chunks sent with their batch at once (see the module docstring)."""


def merge_chunk(chunks: list[dict], chunk: dict) -> None:
    """Append ``chunk``, concatenating it into the last one if both are deltas of one part.

    Never mutates a chunk dict: a merge builds a new one (a dict may sit in several lists).
    """
    keys = MERGEABLE.get(chunk.get("type", ""))
    if keys and chunks:
        last = chunks[-1]
        match, text = keys
        # same type, same part, same other fields (compared key by key: no dicts built per delta)
        if (last.get("type") == chunk["type"] and match in chunk and len(last) == len(chunk)
                and text in last and text in chunk
                and all(k == text or last.get(k, _MISSING) == v for k, v in chunk.items())):
            chunks[-1] = {**last, text: last[text] + chunk[text]}
            return
    chunks.append(chunk)


_MISSING = object()
_NOT_PLAIN = object()  # equal to no part id: `runs` takes its general path


def coalesce(chunks: list[dict]) -> list[dict]:
    """``chunks`` with every run of consecutive deltas of one part joined into one chunk: the
    list ``merge_chunk`` builds one chunk at a time, each run's text joined once (no dict and no
    string copy per delta). The chunks given are never mutated."""
    return [first if len(pieces) < 2 else {**first, text: "".join(pieces)} for first, text, pieces in runs(chunks)]


def runs(chunks: list[dict]) -> list[tuple[dict, str, list[str]]]:
    """``chunks`` as runs ``(first chunk, text key, texts)``: each run of consecutive deltas of
    one part (``merge_chunk`` would join them) is its first chunk, its text key (``delta`` or
    ``inputTextDelta``) and the text of each of its chunks in order; any other chunk is a run
    of its own, ``(chunk, "", [])``."""
    out: list[tuple[dict, str, list[str]]] = []
    first: dict | None = None  # the first chunk of the run being collected
    pieces: list[str] = []
    match = text = kind = ""
    part: object = None  # the run's part id when `first` is a plain delta (type, part key, text), else _NOT_PLAIN
    for chunk in chunks:
        if first is not None:
            # every delta the engine makes continues a plain run: `_same_part` without its call
            if len(chunk) == 3 and chunk.get(match, _MISSING) == part and chunk.get("type") == kind and text in chunk:
                pieces.append(chunk[text])
                continue
            if chunk.get("type") == kind and _same_part(first, chunk, match, text):
                pieces.append(chunk[text])
                continue
            out.append((first, text, pieces))
            first = None
        kind = chunk.get("type", "")
        keys = MERGEABLE.get(kind)
        if keys is None or keys[0] not in chunk or keys[1] not in chunk:
            out.append((chunk, "", []))  # merge_chunk merges nothing else (a delta never continues one of these)
            continue
        first, (match, text) = chunk, keys
        part = chunk[match] if len(chunk) == 3 else _NOT_PLAIN
        pieces = [chunk[text]]
    if first is not None:
        out.append((first, text, pieces))
    return out


def _same_part(first: dict, chunk: dict, match: str, text: str) -> bool:
    """`merge_chunk`'s rule for a delta of `first`'s type (`first` holds `match` and `text`): the
    same fields, equal except the text."""
    if len(chunk) == 3 == len(first):  # type, part key, text: every delta the engine makes
        return match in chunk and text in chunk and first[match] == chunk[match]
    return len(first) == len(chunk) and text in chunk and \
        all(k == text or first.get(k, _MISSING) == v for k, v in chunk.items())


class ChunkBatcher:
    """Coalesces UIMessageChunks into ``use_chat_response`` frames.

    Chunks wait in a pending batch; consecutive deltas of the same part are merged. The
    batch is sent when ``interval`` seconds have passed since the last send: by the next
    chunk that arrives once it is due, or by a ``call_later`` timer (when an asyncio loop
    runs in the calling thread) if no chunk comes, and always at turn end. Thread-safe.
    """

    def __init__(self, send: Callable[[UseChatResponse], None], interval: float) -> None:
        self._send = send
        self._interval = interval
        self._lock = threading.RLock()
        self._pending: list[UIMessageChunk] = []
        self._pending_key: tuple[str, bool] | None = None
        self._continuation: dict[str, bool] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._last_send = float("-inf")  # a quiet panel sends its first chunk at once

    def add(self, request_id: str, chunk: UIMessageChunk, continuation: bool) -> None:
        """Queue one chunk of turn ``request_id``."""
        with self._lock:
            key = (request_id, continuation)
            if self._pending and self._pending_key != key:
                self.flush()
            self._pending_key = key
            merge_chunk(self._pending, chunk)
            self._continuation.setdefault(request_id, continuation)
            if chunk.get("type") in SEND_AT_ONCE:
                self.flush()
            else:
                self._schedule()

    def add_many(self, request_id: str, chunks: list[UIMessageChunk], continuation: bool) -> None:
        """Queue chunks of turn ``request_id``, in order (as ``add`` one by one, locked and
        scheduled once)."""
        with self._lock:
            key = (request_id, continuation)
            if self._pending and self._pending_key != key:
                self.flush()
            self._pending_key = key
            self._continuation.setdefault(request_id, continuation)
            at_once = False
            for chunk in chunks:
                merge_chunk(self._pending, chunk)
                at_once = at_once or chunk.get("type") in SEND_AT_ONCE
            if at_once:
                self.flush()
            else:
                self._schedule()

    def end(self, request_id: str, *, error: bool) -> None:
        """Send what is pending for the turn plus its final ``done`` frame; forget it."""
        with self._lock:
            if self._pending_key is not None and self._pending_key[0] != request_id:
                self.flush()
            chunks, key = self._take()
            flag = self._continuation.pop(request_id, False)
            continuation = key[1] if key else flag
            from think_nb.panel import protocol

            self._emit(protocol.use_chat_response(
                request_id, chunks, done=True, error=error, continuation=continuation
            ))

    def flush(self) -> None:
        """Send the pending batch now, if there is one."""
        with self._lock:
            chunks, key = self._take()
            if key is not None and chunks:
                from think_nb.panel import protocol

                self._emit(protocol.use_chat_response(key[0], chunks, continuation=key[1]))

    def close(self) -> None:
        """Cancel the timer; pending chunks are dropped."""
        with self._lock:
            self._cancel_timer()
            self._pending, self._pending_key = [], None

    def _take(self) -> tuple[list[UIMessageChunk], tuple[str, bool] | None]:
        self._cancel_timer()
        chunks, key = self._pending, self._pending_key
        self._pending, self._pending_key = [], None
        return chunks, key

    def _emit(self, frame: UseChatResponse) -> None:
        self._last_send = time.monotonic()
        self._send(frame)

    def _schedule(self) -> None:
        delay = max(0.0, self._last_send + self._interval - time.monotonic())
        if delay == 0.0:  # due: send now, even if a timer waits (a busy stream may starve the loop)
            self.flush()
            return
        if self._timer is not None and not self._timer_loop.is_closed():  # type: ignore[union-attr]
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: the next chunk that is due, or the turn's end, sends the batch
        self._timer, self._timer_loop = loop.call_later(delay, self.flush), loop

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._timer_loop = None
