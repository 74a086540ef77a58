"""Media eviction of the stored transcript: background passes after turns (Think's `mediaEviction`,
`_evictAgedMediaBestEffort`; cloudflare/agents#1710).

An image in a message is sent to the model while it is recent; past `keep_recent_messages` each
request already leaves it out (`think_nb.messages.media.for_model`), but SQLite still holds it, and
every reload, panel and export reads it. After each turn (and `add_messages`) a pass rewrites the
aged messages of the current branch that hold large media (`think_nb.messages.eviction`): the bytes
go to the agent's workspace as `/attachments/evicted/<message id>-<n>.<ext>` (or are dropped, with
`externalize_to_workspace=False`), a marker takes their place, and `chat:media:evicted` reports
`{messages, parts, bytes, externalized_bytes}` once per pass that changed something.

- aged: more than `max(4, keep_recent_messages)` messages after it on the branch (4: the span a
  request always sends at full fidelity, Think's clamp);
- bounded: at most `max_rows_per_pass` messages per pass; a pass that stops with more to do starts
  the next one itself, so a backlog drains without new turns;
- cheap: which messages are large enough comes from an index of row sizes (m025) without reading
  any; a message found to hold nothing evictable (a long pasted text) is remembered by its size and
  not read again. A pass with nothing to do is that one index range scan, run on the loop when the
  turn ends (no task is made); reading, rewriting and writing a row run in a worker thread;
- safe against a concurrent turn: the workspace file is written before the row (a pass that dies
  loses nothing; the next one writes the same path again), the row is replaced only while its
  stored JSON is still what the pass read (compare-and-set), and memory only while it still holds
  the dict the pass started from; ids, order, parents and the other parts never change;
- silent, as Think's maintenance rewrite: views keep what they show until they read the branch again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from think_nb import events, jsonsafe
from think_nb.messages.eviction import Evicted, evict_message
from think_nb.messages.media import MediaEviction

if TYPE_CHECKING:
    from think_nb.conversation import Conversation
    from think_nb.store.messages import MessageStore

__all__ = ["EVICTED_DIR", "MODEL_RECENT_WINDOW", "EvictionHost", "MediaEvictor", "Totals"]

log = logging.getLogger("think_nb")

MODEL_RECENT_WINDOW = 4
"""Messages never evicted, whatever `keep_recent_messages` says (Think's `MODEL_RECENT_WINDOW`)."""
EVICTED_DIR = "/attachments/evicted"
"""Where evicted bytes go in the agent's workspace (Think's path)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class EvictionHost(Protocol):
    """What a pass needs of its agent (`think_nb.runtime.AgentRuntime` implements it)."""

    key: str
    media_eviction: Any
    conversation: Conversation

    @property
    def workspace(self) -> Any:
        """The agent's fsspec file system (`pipe_file(path, bytes)`)."""


@dataclass
class Totals:
    """One pass's totals (the `chat:media:evicted` payload): messages rewritten, values evicted,
    characters removed, characters kept in the workspace (0 when dropping). `backlog`: aged rows
    left for the next pass."""

    messages: int = 0
    parts: int = 0
    bytes: int = 0
    externalized_bytes: int = 0
    backlog: bool = False

    def payload(self) -> dict[str, int]:
        return {"messages": self.messages, "parts": self.parts, "bytes": self.bytes,
                "externalized_bytes": self.externalized_bytes}


class MediaEvictor:
    """The passes of one agent (see the module docstring).

    Attributes:
        task: the background task running passes, or None.
    """

    def __init__(self, host: EvictionHost) -> None:
        self.host = host
        self.task: asyncio.Task[None] | None = None
        self._again = False
        self._running = False
        self._checked: dict[str, int] = {}  # message id -> stored size at which it held nothing evictable

    def config(self) -> MediaEviction | None:
        return MediaEviction.coerce(self.host.media_eviction)

    def schedule(self) -> None:
        """The branch grew: run passes in the background when some aged message may hold media.
        Decided on the loop by the one index query (`MessageStore.large_rows`); no task otherwise.
        Nothing without a running loop, or with `media_eviction` off."""
        config = self.config()
        if config is None or not self._candidates(self.host.conversation.store.messages, config):
            return
        self.again()

    def again(self) -> None:
        """Run a pass in the background now (one more after the running one, if one runs)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._again = True
        if self.task is None or self.task.done():
            self.task = loop.create_task(self._drain(), name=f"think_nb media eviction {self.host.key}")

    async def settled(self) -> None:
        """Wait until no pass runs or is due (the background task has ended)."""
        while self.task is not None and not self.task.done():
            await asyncio.shield(self.task)

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def _drain(self) -> None:
        while self._again:
            self._again = False
            await self.run_pass()
            await asyncio.sleep(0)

    async def run_pass(self) -> Totals | None:
        """One bounded pass (Think's `_evictAgedMediaBestEffort`): its totals, or None when eviction
        is off, a pass already runs, or it failed (logged; the next pass tries again). A pass that
        stops at `max_rows_per_pass` schedules the next one."""
        config = self.config()
        if config is None or self._running:
            return None
        self._running = True
        totals = None
        try:
            totals = await self._pass(config)
            return totals
        except Exception:  # best effort: a later pass retries
            log.exception("media eviction pass of %s failed; a later pass will retry", self.host.key)
            return None
        finally:
            self._running = False
            if totals is not None and totals.backlog:
                self.again()

    def _candidates(self, rows: MessageStore, config: MediaEviction) -> list[tuple[str, int]]:
        """`(id, size)` of the session's rows large enough to hold an evictable value, less those
        known to hold none at their size."""
        return [(i, size) for i, size, _ in rows.large_rows(config.min_part_bytes) if self._checked.get(i) != size]

    async def _pass(self, config: MediaEviction) -> Totals:
        conversation = self.host.conversation
        rows = conversation.store.messages
        totals = Totals()
        large = self._candidates(rows, config)
        if not large:
            return totals
        keep = max(MODEL_RECENT_WINDOW, config.keep_recent_messages)
        ages = rows.ages([i for i, _ in large])
        aged = sorted(((ages[i], i, size) for i, size in large if ages.get(i, -1) >= keep), reverse=True)
        totals.backlog = len(aged) > config.max_rows_per_pass
        for _, message_id, size in aged[:config.max_rows_per_pass]:
            if conversation.store.messages is not rows:  # the session was switched: the next pass
                break
            was = conversation.held(message_id)
            outcome = await asyncio.to_thread(self._evict_row, conversation, message_id, config)
            if outcome == "nothing":
                self._checked[message_id] = size
            elif isinstance(outcome, Evicted):
                conversation.rewritten(outcome.message, was)
                totals.messages += 1
                totals.parts += outcome.parts
                totals.bytes += outcome.bytes
                if config.externalize_to_workspace:
                    totals.externalized_bytes += outcome.bytes
        if totals.messages:
            events.emit("chat:media:evicted", totals.payload(), agent=self.host.key)
        return totals

    def _evict_row(self, conversation: Conversation, message_id: str, config: MediaEviction) -> Evicted | str:
        """In a worker thread: read the row, evict, write the workspace files, then the row (only if
        unchanged). Returns the `Evicted` stored, or "gone" / "nothing" / "moved" (written since)."""
        text = conversation.store.messages.content_of(message_id)
        if text is None:
            return "gone"
        message = jsonsafe.loads_stored(text)
        if not isinstance(message, dict):
            return "nothing"
        stem = _UNSAFE.sub("_", message_id)
        result = evict_message(message, config.min_part_bytes, config.externalize_to_workspace,
                               lambda n, extension: f"{EVICTED_DIR}/{stem}-{n}.{extension}")
        if not result.changed:
            return "nothing"
        if result.blobs:
            fs = self.host.workspace
            for blob in result.blobs:  # before the row: a pass that dies here loses nothing
                fs.pipe_file(blob.path, blob.data)
        if not conversation.rewrite_stored(result.message, text):
            return "moved"
        return result
