"""The scheduler's clock: what time it is and how to wait for a moment.

`SystemClock` is wall time (`time.time()`, epoch seconds) and `asyncio` waits. Tests and
teaching notebooks pass `think_nb.testing.FakeClock` (`Think.schedule_clock`) to move time by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Epoch seconds."""
        ...

    async def sleep_until(self, when: float, wake: asyncio.Event) -> None:
        """Return at `when` (epoch s) or as soon as `wake` is set, whichever comes first."""
        ...


class SystemClock:
    """Wall time."""

    def now(self) -> float:
        return time.time()

    async def sleep_until(self, when: float, wake: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), timeout=max(0.0, when - time.time()))
