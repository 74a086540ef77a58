"""Retrying a scheduled run that failed (Think's `RetryOptions` on `schedule()` / `scheduleEvery()`
and a declared task's `retry`, from the Agents SDK's `retries.ts`).

    agent.schedule_every(3600, agent.sync_feed, retry={"max_attempts": 4, "base_delay_ms": 500})

`retry` is `{"max_attempts": n, "base_delay_ms": ms, "max_delay_ms": ms}`, each optional (the
Agents SDK's defaults: 3 attempts, 100 ms, 3000 ms), or True for all three defaults. A run that
fails (its handler or prompt function raises, its submission cannot be made) runs again, the
same occurrence (same `scheduled_for`, `occurrence_key`, `idempotency_key`; `ctx.attempt` counts
from 1), after a "full jitter" backoff: a random delay below `min(2**attempt * base_delay_ms,
max_delay_ms)` (`delay_s`). Unlike the SDK, which sleeps in the alarm, the next attempt is stored
on the task's row (`attempt`, `retry_at`, `retry_for`; `last_status = "retrying"`), so it survives
a kernel restart and runs on the scheduler's clock (`Think.schedule_clock`). After the last
attempt the run is recorded `error`. A scheduled prompt's *turn* is not retried: it may have done
things; its outcome is the task's `last_status`. Without `retry` a task runs once per occurrence
(the SDK retries every schedule 3 times by default; think_nb keeps one attempt unless asked).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from think_nb.errors import UserError

DEFAULTS = {"max_attempts": 3, "base_delay_ms": 100, "max_delay_ms": 3000}
"""The Agents SDK's defaults for the keys a `retry` dict leaves out."""


def options(value: Any, where: str) -> dict[str, int | float] | None:
    """`retry=` checked and completed with `DEFAULTS` (None or False: no retries). Raises
    `UserError` for an unknown key (Think's camelCase names the snake_case one), `max_attempts`
    not a whole number >= 1, a delay not > 0, or `base_delay_ms` above `max_delay_ms`."""
    if value is None or value is False:
        return None
    if value is True:
        return dict(DEFAULTS)
    if not isinstance(value, dict):
        raise UserError(f"{where}: retry is a dict like {{'max_attempts': 3, 'base_delay_ms': 100, 'max_delay_ms': "
                        f"3000}} (or True for those), not {type(value).__name__}.")
    unknown = sorted(set(value) - set(DEFAULTS))
    if unknown:
        raise UserError(f"{where}: retry has unknown key(s) {unknown}; it takes max_attempts, base_delay_ms, "
                        "max_delay_ms (Think's maxAttempts, baseDelayMs, maxDelayMs).")
    out: dict[str, int | float] = {**DEFAULTS, **value}
    attempts = out["max_attempts"]
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise UserError(f"{where}: retry max_attempts = {attempts!r}; give a whole number >= 1 (1: no retry).")
    for key in ("base_delay_ms", "max_delay_ms"):
        delay = out[key]
        if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not delay > 0:
            raise UserError(f"{where}: retry {key} = {delay!r}; give milliseconds > 0.")
    if out["base_delay_ms"] > out["max_delay_ms"]:
        raise UserError(f"{where}: retry base_delay_ms ({out['base_delay_ms']}) is above max_delay_ms "
                        f"({out['max_delay_ms']}); make base_delay_ms <= max_delay_ms.")
    return out


def delay_s(attempt: int, retry: dict[str, Any], rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based): full jitter, a random delay below
    `min(2**attempt * base_delay_ms, max_delay_ms)` milliseconds (the SDK's `jitterBackoff`)."""
    upper_ms = min(2 ** attempt * float(retry["base_delay_ms"]), float(retry["max_delay_ms"]))
    return rand() * upper_ms / 1000.0


def upper_s(attempt: int, retry: dict[str, Any]) -> float:
    """The largest `delay_s(attempt, retry)` can be, in seconds."""
    return min(2 ** attempt * float(retry["base_delay_ms"]), float(retry["max_delay_ms"])) / 1000.0
