"""The task a turn runs as: an `asyncio.Task` that says what it is when a cell shows it.

`agent.approve(id)` / `deny` / `submit` return it; `await` it for the turn's `TurnResult`. Left as
a cell's last expression, it reads `<turn req_… running: await it for its TurnResult>` (then
`<turn req_… completed>`, or `… waiting for 1 approval`) instead of `<Task pending name=… coro=…>`.
"""

from __future__ import annotations

import asyncio
from typing import Any


class TurnTask(asyncio.Task):
    """A turn's task (a plain `asyncio.Task` but for its repr); `request_id` is the turn's."""

    def __init__(self, coro: Any, *, loop: asyncio.AbstractEventLoop, request_id: str) -> None:
        super().__init__(coro, loop=loop, name=f"think-turn-{request_id}")
        self.request_id = request_id

    def __repr__(self) -> str:
        if not self.done():
            return f"<turn {self.request_id} running: await it for its TurnResult>"
        if self.cancelled():
            return f"<turn {self.request_id} cancelled>"
        if self.exception() is not None:
            return f"<turn {self.request_id} failed: {self.exception()!r}>"
        return f"<turn {self.request_id} {describe(self.result())}>"


def describe(result: Any) -> str:
    """`completed`, `completed, waiting for 1 approval`, `error: …` — a `TurnResult` in a few words."""
    text = str(getattr(result, "status", result))
    waiting = getattr(result, "waiting", ())
    if waiting:
        text += f", {result.waiting_text}"
    error = getattr(result, "error", None)
    return f"{text}: {error}" if error else text
