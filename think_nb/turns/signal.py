"""Cancellation from outside a turn: an `AbortController` and its `AbortSignal` (the DOM's shape).

    controller = AbortController()
    task = asyncio.ensure_future(agent.save_messages(messages, signal=controller.signal))
    controller.abort("user changed their mind")     # the turn ends with status "aborted"

A signal that is already aborted when the turn starts prevents the model call altogether.
"""

from __future__ import annotations

from collections.abc import Callable


class AbortSignal:
    """Read side: `aborted`, `reason`, and listeners called once on abort."""

    def __init__(self) -> None:
        self.aborted = False
        self.reason: str | None = None
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback()` on abort (at once if already aborted); returns a remover."""
        if self.aborted:
            callback()
            return lambda: None
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None


class AbortController:
    """Write side: `abort(reason)` aborts `signal` (idempotent)."""

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: str | None = None) -> None:
        if self.signal.aborted:
            return
        self.signal.aborted, self.signal.reason = True, reason
        for callback in list(self.signal._listeners):
            callback()
        self.signal._listeners.clear()
