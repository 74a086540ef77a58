"""`Listeners`: who hears what an agent does (panels' hub, the terminal, `chat()` callbacks).

A listener is any object with some of the methods of `Listener` (all optional; one that raises is
logged and never breaks the turn). The events are declared, not strings passed around: `EVENTS`
is the complete list, `Event` its type, and `Listeners.notify` / `wants` refuse a name outside it
(`ValueError`), so a typo fails where it is made instead of being dropped.

    on_submitted(request_id, future)            a turn was started by any entry point (future: its task)
    on_chunk(request_id, chunk, continuation)   every UIMessageChunk, after it is recorded
    on_chunks(request_id, chunks, continuation) instead of on_chunk, for a listener that has it: the
                                                chunks of one recorded batch, in order, each run of
                                                consecutive deltas of one part joined into one
                                                chunk (their text concatenated, as the AI SDK's
                                                accumulator would; `panel.batcher.coalesce`)
    on_turn_end(request_id, status, error)      a turn ended (completed | error | aborted | skipped)
    on_messages(messages)                       the current branch changed (authoritative transcript)
    on_message_updated(message)                 one stored message changed (approval, tool result)
    on_paused(request_id, hook | None)          a step-mode turn paused before `hook` (None: resumed)
    on_session(state)                           the agent's memory changed (context tab)
    on_mcp_servers(servers)                     an MCP server was added, removed or changed state
                                                (`AgentRuntime.mcp_state()` rows; context tab)
    on_clear()                                  the conversation was cleared
    on_recovering(recovering, request_id)       recovery of a dead process's turns started / ended
    on_waiting(request_id, what | None)         a turn waits before its model answers ("loading litellm…",
                                                `think_nb.models.progress`); None: it stopped waiting
    on_note(request_id, note)                   something a turn did that its status detail keeps saying
                                                until it ends ("compacted to fit", `think_nb.turns.overflow`)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any, Literal, Protocol, get_args

log = logging.getLogger("think_nb")

Event = Literal["on_submitted", "on_chunk", "on_chunks", "on_turn_end", "on_messages", "on_message_updated",
                "on_paused", "on_session", "on_clear", "on_recovering", "on_waiting", "on_mcp_servers", "on_note"]
"""An agent's listener events (see the module docstring)."""

EVENTS: frozenset[str] = frozenset(get_args(Event))


class Listener(Protocol):
    """The events an agent's listener may handle (every method optional; see the module docstring)."""

    def on_submitted(self, request_id: str, future: Any = None) -> None: ...
    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None: ...
    def on_chunks(self, request_id: str, chunks: list[dict], continuation: bool) -> None: ...
    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None: ...
    def on_messages(self, messages: list[dict]) -> None: ...
    def on_message_updated(self, message: dict) -> None: ...
    def on_paused(self, request_id: str, hook: str | None) -> None: ...
    def on_session(self, state: dict) -> None: ...
    def on_mcp_servers(self, servers: list[dict]) -> None: ...
    def on_clear(self) -> None: ...
    def on_recovering(self, recovering: bool, request_id: str) -> None: ...
    def on_waiting(self, request_id: str, what: str | None) -> None: ...
    def on_note(self, request_id: str, note: str) -> None: ...


class Listeners:
    """The listeners of one agent (or, in the panels' hub, of one agent's panels: `events` widens the
    declared set with the hub's own)."""

    def __init__(self, events: Collection[str] = EVENTS) -> None:
        self._items: list[Any] = []
        self._events = frozenset(events)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, listener: Any) -> Callable[[], None]:
        """Attach a listener; returns `unsubscribe()`."""
        self._items.append(listener)
        return lambda: self._items.remove(listener) if listener in self._items else None

    def _check(self, event: str) -> None:
        if event not in self._events:
            raise ValueError(f"unknown listener event {event!r}; the declared ones: {', '.join(sorted(self._events))}")

    def wants(self, event: str) -> bool:
        """True when some listener handles `event`. Raises `ValueError` for an undeclared event."""
        self._check(event)
        return any(callable(getattr(item, event, None)) for item in self._items)

    def notify(self, event: str, *args: Any) -> None:
        """Call `event(*args)` on every listener that has it. Raises `ValueError` for an undeclared event."""
        self._check(event)
        for listener in list(self._items):
            handler = getattr(listener, event, None)
            if handler is not None:
                self._call(listener, event, handler, *args)

    def notify_chunks(self, request_id: str, chunks: list[dict], joined: list[dict], continuation: bool) -> None:
        """Hand one recorded batch to every listener: `on_chunks(request_id, joined, continuation)`
        to one that has it (`joined`: `chunks` with runs of deltas joined), else `on_chunk` once per
        chunk of `chunks`, in order. A listener that raises is logged; the others still hear."""
        for listener in list(self._items):
            batch = getattr(listener, "on_chunks", None)
            if batch is not None:
                self._call(listener, "on_chunks", batch, request_id, joined, continuation)
                continue
            handler = getattr(listener, "on_chunk", None)
            if handler is None:
                continue
            for chunk in chunks:  # the try inlined: this loop runs once per chunk
                try:
                    handler(request_id, chunk, continuation)
                except (KeyboardInterrupt, asyncio.CancelledError):
                    raise
                except BaseException:
                    log.exception("listener %r failed in on_chunk", listener)

    @staticmethod
    def _call(listener: Any, event: str, handler: Callable, *args: Any) -> None:
        try:
            handler(*args)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException:  # SystemExit too: a view must not end (or crash) the turn
            log.exception("listener %r failed in %s", listener, event)


class RequestStream:
    """A listener queueing one request's chunks in order; `None` is queued when the turn ends.
    Used by `chat()` (think_nb.subagents) and `agent.marimo_chat()` to stream one turn."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.queue: asyncio.Queue = asyncio.Queue()

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        if request_id == self.request_id:
            self.queue.put_nowait(chunk)

    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        if request_id == self.request_id:
            self.queue.put_nowait(None)
