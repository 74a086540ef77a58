"""Kernel → Interrupt stops running turns, background turns included.

ipykernel ignores SIGINT while it is idle (it handles it only while a cell executes), so a
turn running as a background task (`%%think`, the panel) would not notice an interrupt. While
any turn runs, and only in an ipykernel (whose idle SIGINT handling is "ignore"; a plain script
keeps Python's own Ctrl+C), think_nb installs a handler that aborts every running turn; each keeps its partial reply
(status `aborted`). The handler is removed when the last turn ends. During a cell's execution
ipykernel swaps in its own handler and restores ours afterwards, so interrupting a cell works
as usual.

The handler runs between two bytecodes of the kernel's thread and can only schedule the aborts
(`call_soon_threadsafe`): when the interrupt lands while a turn's own code runs on (a tool call
announced "running" whose `run_code` has not reached its `exec` yet), the turn would reach the
`exec` before the loop runs the aborts, and the code would run on with the interrupt spent. So
the interrupt is also latched: `stop_pending()` is True from the handler until the aborts ran,
and `run_code` checks it (after its own handler is in place) before running anything.

While the kernel handles a panel frame (a comm message), ipykernel makes SIGINT raise
`KeyboardInterrupt` inside the handler, then logs and drops it ("KeyboardInterrupt caught in
kernel"): a Stop landing while an Approve frame starts its continuation (the panel already says
the code runs) would be lost, and the approved code would run on. `frame_latches_interrupt` makes
an interrupt during a frame latch and abort the running turns (the one the frame starts included)
as `_on_interrupt` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import weakref
from collections.abc import Iterator
from typing import Any

_agents: weakref.WeakSet = weakref.WeakSet()
_state: dict[str, Any] = {"previous": None, "loop": None, "pending": False}


def watch(agent: Any) -> None:
    """A turn of `agent` (a `TurnEngine`: `active`, `abort_all()`) started: make sure an interrupt
    will abort it."""
    if threading.current_thread() is not threading.main_thread():
        return
    _agents.add(agent)
    if _state["previous"] is not None:
        return
    kernel = _kernel()
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # an idle kernel
        signal.signal(signal.SIGINT, _on_interrupt)
    elif getattr(kernel, "saved_sigint_handler", None) is signal.SIG_IGN:
        # inside a cell: ipykernel restores `saved_sigint_handler` when the cell ends
        kernel.saved_sigint_handler = _on_interrupt
    else:
        return  # a script keeps Python's own Ctrl+C
    _state["loop"] = asyncio.get_running_loop()
    _state["previous"] = signal.SIG_IGN


def unwatch(agent: Any) -> None:
    """A turn of `agent` ended: remove the handler once no turn runs anywhere."""
    if agent.active:
        return
    _agents.discard(agent)
    if not any(a.active for a in list(_agents)) and _state["previous"] is not None:
        kernel = _kernel()
        if getattr(kernel, "saved_sigint_handler", None) is _on_interrupt:
            kernel.saved_sigint_handler = signal.SIG_IGN
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is _on_interrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        _state["previous"] = None


class Heard:
    """What `loop_wakes_on_interrupt` heard: `stop` is True once Kernel → Interrupt (Jupyter's
    Stop) reached the cell while it awaited."""

    stop = False

    def user_stop(self, task: asyncio.Task | None) -> bool:
        """True when the cancellation `task` (the cell's) is getting now is the user's Stop and only
        that (no other cancel is pending on it): then it is withdrawn (`Task.uncancel`), and the
        awaiting call may end the cell cleanly. False otherwise: the caller re-raises."""
        if not self.stop or task is None or task.cancelling() != 1:
            return False
        task.uncancel()
        return True


@contextlib.contextmanager
def loop_wakes_on_interrupt() -> Iterator[Heard]:
    """While a cell awaits something long (`agent.map`), make Kernel → Interrupt reach it; yields
    a `Heard` that says whether it did (so `map` can tell the user's Stop from another cancel).

    ipykernel turns an interrupt of an awaiting cell into a cancel of the cell's task, but its
    SIGINT handler schedules that with `call_soon` from the signal handler (ipython/ipykernel#881):
    when every task waits (rows waiting on a slow model or on an approval), the loop sleeps in
    `select` and never runs it. This chains a handler that also wakes the loop
    (`call_soon_threadsafe`), so the cancel runs at once. Outside an ipykernel, or off the main
    thread, it does nothing (and hears nothing: a script's Ctrl-C stays a KeyboardInterrupt)."""
    heard = Heard()
    if threading.current_thread() is not threading.main_thread() or _kernel() is None:
        yield heard
        return
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        heard.stop = True
        try:
            if callable(previous):
                previous(signum, frame)
        finally:
            loop.call_soon_threadsafe(lambda: None)  # wakes `select`: the scheduled cancel runs

    signal.signal(signal.SIGINT, handler)
    try:
        yield heard
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, previous)


def _kernel() -> Any:
    """The running ipykernel kernel, or None outside one."""
    import sys

    if "ipykernel" not in sys.modules:
        return None
    from ipykernel.kernelbase import Kernel

    return Kernel.instance() if Kernel.initialized() else None


def stop_pending() -> bool:
    """True while an interrupt `_on_interrupt` heard has not yet aborted the running turns (the
    aborts wait for the loop): a turn's code that checks this before a long synchronous step
    (`run_code`'s `exec`) stops there instead of running with the interrupt spent."""
    return bool(_state["pending"])


@contextlib.contextmanager
def frame_latches_interrupt() -> Iterator[None]:
    """While a panel frame is handled on the kernel's loop inside ipykernel's message handler
    (SIGINT raising `KeyboardInterrupt` there), an interrupt is latched instead (`stop_pending`)
    and aborts every running turn once the loop runs, the turns the frame starts included (see
    the module docstring). Elsewhere (no ipykernel, another thread, another handler) it does nothing."""
    if threading.current_thread() is not threading.main_thread() or _kernel() is None or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop to abort turns on: nothing runs
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        _state["pending"] = True  # a turn the frame starts checks it before its code runs
        loop.call_soon_threadsafe(_abort_all)  # after the frame: its turns are registered by then

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # ipykernel's, which it restores after


def _on_interrupt(signum: int, frame: Any) -> None:
    loop = _state["loop"]
    if loop is not None and not loop.is_closed():
        _state["pending"] = True  # latched first: the turn's own code may run before the loop does
        loop.call_soon_threadsafe(_abort_all)


def _abort_all() -> None:
    _state["pending"] = False  # an interrupt heard after this line schedules its own `_abort_all`
    for agent in list(_agents):
        agent.abort_all()
