"""A run's bounds: what it may spend (`max_cost`, `max_tokens`) and how fast it may go (`rpm`, `tpm`).

- `Budget`: the spend so far (the run's settled rows, earlier calls included); `reason()` says why
  no new row may start, else None. A row whose cost (tokens) is unknown makes `max_cost`
  (`max_tokens`) impossible to keep, so the run stops taking rows and says so (an unknown cost is
  never read as 0: `think_nb.models.usage`).
- `Pacer`: rows started per rolling minute at most `rpm`; tokens settled per rolling minute at
  most `tpm` (a row waits until the minute's tokens fall under it; unknown counts add nothing).
  A row is one turn; the model calls inside it are paced by the provider's 429s, which the model
  client backs off from (`think_nb.models.errors.retry_delay`, `retry-after` honoured).
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

__all__ = ["Budget", "Pacer"]


class Budget:
    """Spend against `max_cost` (US dollars) and `max_tokens` (input + output), either None."""

    def __init__(self, max_cost: float | None, max_tokens: int | None) -> None:
        self.max_cost, self.max_tokens = max_cost, max_tokens
        self.cost, self.tokens = 0.0, 0
        self.unknown_cost = self.unknown_tokens = False

    def add(self, result: dict[str, Any]) -> None:
        """Count a settled row (its `cost_usd`, `input_tokens`, `output_tokens`)."""
        if result.get("status") == "not_run":
            return
        if result.get("cost_usd") is None:
            self.unknown_cost = True
        else:
            self.cost += float(result["cost_usd"])
        if result.get("input_tokens") is None or result.get("output_tokens") is None:
            self.unknown_tokens = True
        else:
            self.tokens += int(result["input_tokens"]) + int(result["output_tokens"])

    def reason(self) -> str | None:
        """Why no new row may start, or None."""
        if self.max_cost is not None:
            if self.unknown_cost:
                return (f"max_cost=${self.max_cost:g} cannot be kept: a row's cost is unknown (the model has no "
                        "price or did not report usage), so no more rows were started")
            if self.cost >= self.max_cost:
                return f"max_cost reached: ${self.cost:.6g} spent of ${self.max_cost:g}"
        if self.max_tokens is not None:
            if self.unknown_tokens:
                return (f"max_tokens={self.max_tokens} cannot be kept: a row's token usage is unknown, so no more "
                        "rows were started")
            if self.tokens >= self.max_tokens:
                return f"max_tokens reached: {self.tokens} tokens used of {self.max_tokens}"
        return None


class Pacer:
    """Rows per minute (`rpm`) and tokens per minute (`tpm`), either None; `clock` for tests."""

    WINDOW = 60.0

    def __init__(self, rpm: float | None, tpm: float | None, clock: Any = time.monotonic) -> None:
        self.rpm, self.tpm, self.clock = rpm, tpm, clock
        self.starts: collections.deque[float] = collections.deque()
        self.used: collections.deque[tuple[float, int]] = collections.deque()
        self.lock = asyncio.Lock()

    def delay(self) -> float:
        """Seconds until a row may start (0: now)."""
        now = self.clock()
        while self.starts and self.starts[0] <= now - self.WINDOW:
            self.starts.popleft()
        while self.used and self.used[0][0] <= now - self.WINDOW:
            self.used.popleft()
        waits = [0.0]
        if self.rpm is not None and len(self.starts) >= self.rpm:
            waits.append(self.starts[0] + self.WINDOW - now)
        if self.tpm is not None and sum(n for _, n in self.used) >= self.tpm:
            waits.append(self.used[0][0] + self.WINDOW - now)
        return max(waits)

    async def wait(self) -> None:
        """Wait for this row's turn to start, then count it."""
        async with self.lock:
            pause = self.delay()
            while pause > 0:  # the window moves with the clock: no event announces a free slot
                await asyncio.sleep(pause)
                pause = self.delay()
            self.starts.append(self.clock())

    def spent(self, tokens: int | None) -> None:
        if tokens:
            self.used.append((self.clock(), tokens))
