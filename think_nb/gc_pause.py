"""A pause of CPython's cyclic garbage collector around a large import on a background thread, so
the import does not stall the event loop.

    with gc_pause.paused(freeze=True):   # on the importing thread
        import litellm

The collector runs on whichever thread's allocation crosses its threshold, and it holds the GIL
for the whole collection; a full (generation 2) collection walks every tracked object of the
process. `import litellm` (1.110) creates ~540,000 tracked objects, so while it imports on its
own thread its allocations set off 6-7 full collections of a growing heap: single GIL holds of
40, 80, 110, 150, 175, 275 and 330 ms of CPU (2 cores, load 3-7), during which the loop thread
cannot run a line (it waits for the GIL inside the selector, spending no CPU of its own). On a
loaded machine the collecting thread gets a fraction of a core, so one hold lasts several times
its CPU in wall time: the 0.4-3.3 s stalls of a first hosted turn at load ~9. Measured apart, the
import's other native steps that keep the GIL (its JSON loads and dumps, a module compiled from
source) are 20-30 ms of CPU each.

`paused()` turns the collector off for the block: the whole process's, since there is one
collector (every thread's allocations go uncollected until the block ends; reference counting
frees everything that is not in a cycle, as always). With `freeze=True` it then moves every
object the collector tracks into the permanent generation (`gc.freeze()`, O(1)) before turning
it back on: the import's half a million objects are never walked again, by the first collection
after the pause (which would otherwise walk them all as generation 0) or by any later full
collection of the kernel (one right after `import litellm`: 195-250 ms of CPU without, 0 with).
The price: an object in a reference cycle when the freeze comes is never reclaimed by the
collector, whichever thread made it: cyclic garbage made during the pause (measured: 1,473 objects
for litellm's import and a first hosted turn beside it; a cell that made 100,000 self-referencing lists
a second through the ~4 s import kept all 408,000), and cycles alive then that become garbage
later. Objects without cycles are freed by reference counting as always, and `gc.unfreeze()` hands
everything back to the collector (its next full collection then walks it all: ~400 ms). That is
why the freeze is for a once-per-process import and not for every pause. The import itself gets
faster: litellm 2.0 s of CPU instead of 3.2 s (a third of it was collecting).

Blocks nest and may run on several threads at once: the collector stays off until the last one
ends, and is turned back on only if it was on when the first began (a user who turned it off
keeps it off).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_depth = 0  # blocks under way, on every thread
_was_enabled = False  # the collector's state when the first of them began


@contextlib.contextmanager
def paused(*, freeze: bool = False) -> Iterator[None]:
    """Turn the cyclic garbage collector off for the block (see the module docstring); with
    `freeze`, move every tracked object into the permanent generation at its end (even when the
    block raises: what was imported stays imported)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            if freeze:
                gc.freeze()
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def active() -> bool:
    """True while some thread is inside `paused()`."""
    return _depth > 0
