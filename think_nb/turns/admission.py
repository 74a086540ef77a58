"""Admission: one queue per agent, the `message_concurrency` policy, and clear's generation.

Turns run one at a time, in arrival order (an `asyncio.Lock` is FIFO). A user submission (the
panel's send, `%%think`, `agent.submit`) that overlaps a running or queued turn is handled by
the agent's `message_concurrency` (Think's §4.10):

- `"queue"`: run every submission in order (default).
- `"latest"` / `"merge"`: every overlapping submission keeps its user message, but only the
  newest runs a model turn, answering all of them; superseded ones end `skipped` (no
  `on_chat_response`). Their messages are stored when the surviving turn starts.
- `"drop"`: an overlapping submission is rejected: not stored, status `skipped`.
- `{"strategy": "debounce", "debounce_ms": 750}`: like `latest`, and the surviving turn waits
  `debounce_ms` after its submission before it runs.
Programmatic turns (`save_messages`, `chat`, continuations) are never merged or dropped.
Clearing the conversation bumps `generation`: turns queued before it end `skipped`.

A turn holds the queue until its `on_chat_response` has returned (Think awaits the hook inside
the turn body), so the next queued turn starts after it. A turn the hook itself starts (chaining,
`await self.save_messages(...)` inside `on_chat_response`) is its *child*: children take their
parent's `child_lock` instead of the queue's, so they run in order while the parent waits for
them, and the queue is released once the hook and every child it started have ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from think_nb.errors import UserError

DEFAULT_DEBOUNCE_MS = 750


@dataclass
class Submission:
    """One admitted request waiting for (or holding) the queue."""

    request_id: str
    messages: Any  # list of UIMessages, or fn(current_messages) -> list
    trigger: str
    user_submit: bool
    generation: int
    superseded: bool = False
    carried: list[dict] = field(default_factory=list)
    debounce_s: float = 0.0
    extra_parts: dict[str, Awaitable[list[dict]]] = field(default_factory=dict)
    """message id -> parts appended to that message when its turn starts (prepared off the loop, e.g.
    data attached with `context=`); carried with the messages when a newer submission supersedes it."""
    output_type: Any = None
    """a pydantic model class: the turn is structured (`think_nb.turns.structured`), else None."""
    expect_last: str | None = None
    """the id of the message the branch must end with when the turn starts, else it is skipped
    (a recovery turn whose conversation moved on: Think's superseded continuations skip)."""
    fork: Any = None
    """a `think_nb.turns.fork.ForkPlan`: the turn re-runs a recorded one from the message it answered."""
    parent: Submission | None = None
    """the submission whose `on_chat_response` started this one (it runs under the parent's queue slot)."""
    responding: bool = False
    children: list[asyncio.Future] = field(default_factory=list)
    _child_lock: asyncio.Lock | None = None

    def child_lock(self) -> asyncio.Lock:
        """The lock this submission's children take in turn (created on first use, on the running loop)."""
        if self._child_lock is None:
            self._child_lock = asyncio.Lock()
        return self._child_lock


def parse_policy(value: Any) -> tuple[str, float]:
    """`message_concurrency` → (strategy, debounce seconds). Raises `UserError` for unknown values."""
    if value in ("queue", "latest", "merge", "drop"):
        return value, 0.0
    if isinstance(value, dict) and value.get("strategy") == "debounce":
        ms = value.get("debounce_ms", DEFAULT_DEBOUNCE_MS)
        ms = ms if isinstance(ms, (int, float)) and ms >= 0 else DEFAULT_DEBOUNCE_MS  # invalid → default, as Think
        return "debounce", ms / 1000
    raise UserError(f"message_concurrency = {value!r}; use 'queue', 'latest', 'merge', 'drop' or "
                    "{'strategy': 'debounce', 'debounce_ms': 750}.")


class TurnQueue:
    """Serialises turns on the current event loop and applies the concurrency policy."""

    def __init__(self) -> None:
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.generation = 0
        self.waiting: list[Submission] = []
        self.active: Submission | None = None

    def lock(self, sub: Submission | None = None) -> asyncio.Lock:
        """The lock `sub` takes before it runs: its parent's `child_lock` when a parent is still in
        its `on_chat_response`, else the queue's (one per event loop)."""
        if sub is not None and sub.parent is not None and sub.parent.responding:
            return sub.parent.child_lock()
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock

    @property
    def busy(self) -> bool:
        return self.active is not None or bool(self.waiting)

    def admit(self, sub: Submission, policy: Any) -> bool:
        """Register a submission; returns False when it is dropped (it must end `skipped` unstored)."""
        strategy, debounce_s = parse_policy(policy)
        overlapping = self.busy
        if sub.user_submit and overlapping and strategy == "drop":
            return False
        if sub.user_submit and overlapping and strategy in ("latest", "merge", "debounce"):
            for older in self.waiting:
                if older.user_submit and not older.superseded:
                    older.superseded = True
                    sub.carried = older.carried + list(older.messages) + sub.carried
                    sub.extra_parts = {**older.extra_parts, **sub.extra_parts}
            sub.debounce_s = debounce_s if strategy == "debounce" else 0.0
        self.waiting.append(sub)
        return True

    def stale(self, sub: Submission) -> bool:
        """True when the submission must not run: superseded, or queued before a clear."""
        return sub.superseded or sub.generation != self.generation

    def invalidate(self) -> None:
        """Clear: every queued turn becomes stale."""
        self.generation += 1
