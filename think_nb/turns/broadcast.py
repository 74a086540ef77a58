"""`Listeners`: who hears what an agent does (panels' hub, the terminal, `chat()` callbacks).

A listener is any object with some of these methods (all optional; one that raises is logged
and never breaks the turn):

    on_chunk(request_id, chunk, continuation)   every UIMessageChunk, after it is recorded
    on_turn_end(request_id, status, error)      a turn ended (completed | error | aborted | skipped)
    on_messages(messages)                       the current branch changed (authoritative transcript)
    on_message_updated(message)                 one stored message changed (approval, tool result)
    on_paused(request_id, hook | None)          a step-mode turn paused before `hook` (None: resumed)
    on_session(state)                           the agent's memory changed (context tab)
    on_mcp_servers(servers)                     an MCP server was added, removed or changed state
                                                (`Think.mcp_state()` rows; context tab)
    on_clear()                                  the conversation was cleared
    on_recovering(recovering, request_id)       recovery of a dead process's turns started / ended
    on_waiting(request_id, what | None)         a turn waits before its model answers ("loading litellm…",
                                                `think_nb.models.progress`); None: it stopped waiting
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("think_nb")

EVENTS = ("on_chunk", "on_turn_end", "on_messages", "on_message_updated", "on_paused", "on_session", "on_clear",
          "on_recovering", "on_waiting", "on_mcp_servers")


class Listeners:
    """The listeners of one agent."""

    def __init__(self) -> None:
        self._items: list[Any] = []

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def add(self, listener: Any) -> Callable[[], None]:
        """Attach a listener; returns `unsubscribe()`."""
        self._items.append(listener)
        return lambda: self._items.remove(listener) if listener in self._items else None

    def wants(self, event: str) -> bool:
        """True when some listener handles `event`."""
        return any(callable(getattr(item, event, None)) for item in self._items)

    def notify(self, event: str, *args: Any) -> None:
        """Call `event(*args)` on every listener that has it."""
        for listener in list(self._items):
            handler = getattr(listener, event, None)
            if handler is None:
                continue
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
