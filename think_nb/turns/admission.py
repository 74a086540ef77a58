"""Admission: one queue per agent, so turns run one at a time and in arrival order.

Think serialises every turn through one `TurnQueue`; here an `asyncio.Lock` (FIFO) does the
same. The lock is re-created when the running event loop changes (the terminal and scripts use
`asyncio.run` once per turn; the kernel keeps one loop).
"""

from __future__ import annotations

import asyncio


class TurnQueue:
    """Serialises turns on the current event loop."""

    def __init__(self) -> None:
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.waiting = 0

    def lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock

    @property
    def busy(self) -> bool:
        return self._lock is not None and self._lock.locked()
