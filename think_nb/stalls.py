"""Loop stalls: how long one event-loop callback held a thread, and in whose code.

    monitor = StallMonitor(threshold=0.25)     # watches the calling thread (the kernel's loop)
    ...                                        # run turns
    monitor.take()                             # [Stall(cpu_s=0.41, wall_s=0.43, owner="think_nb", where=[...])]
    monitor.stop()

Everything on an asyncio loop runs inside one callback at a time (`asyncio.Handle._run`): a turn
step, a comm message, a timer. A callback that keeps the thread for long freezes the kernel —
the panel's buttons, other cells' output, every other turn. A daemon thread samples the watched
thread's stack every `interval` seconds (`sys._current_frames`); while the same `Handle._run`
frame is on it, that callback's wall time and the watched thread's own CPU time
(`time.pthread_getcpuclockid`) add up. A callback whose CPU time passes `threshold` seconds is a
`Stall`. CPU time, not wall time, is what is compared: it is the callback's own work, the same on
an idle machine and on a loaded CI runner (a thread waiting for a CPU burns none), so a test that
fails on it is not flaky. Only callbacks think_nb scheduled count as its own: its code called
synchronously by a caller in `roots` (a test, like a notebook cell calling `agent.search()`) is
the caller's time. Time spent importing (a sample inside `importlib`) is counted apart, in
`import_s`, not in `cpu_s`: what a first import costs depends on what ran before in the process
and on whether bytecode was cached, so it is measured in fresh processes (`bench/bench_stalls.py`,
which prints it), not by a test in the middle of a suite. Time in Python's cyclic garbage
collector on the watched thread (`gc.callbacks`) is counted apart too, in `gc_s`: a full
collection walks the whole heap (150-300 ms at the end of this suite), whichever callback's
allocation happened to trigger it. Native code that holds the GIL (a tokenizer built from JSON)
stops the sampler too: such a callback is seen at its last sample before and its first after, and
its CPU is counted whole. A GIL held by another thread (its collection, its native call) is not
counted: the watched thread waits for it (in the selector or mid-callback) spending no CPU
(bench/bench_first_turn.py measures those). Each stall says whose code it was in:
the innermost frame on the stack that is in `think_nb` or in one of `roots` (e.g. the test files)
decides `owner`.

Used by the test suite's stall guard (tests/loop_stalls.py: a test fails when think_nb's code
holds the loop over 250 ms of CPU) and by `bench/bench_stalls.py` (the longest stall of each
scenario). Sampling costs ~20 µs every `interval`; a stall shorter than `interval` is not seen.
"""

from __future__ import annotations

import asyncio.events
import gc
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

PACKAGE = str(Path(__file__).resolve().parent) + "/"
_RUN = asyncio.events.Handle._run.__code__


@dataclass
class Stall:
    """One callback that held the loop: `cpu_s`/`wall_s` seconds (at the last sample, so up to one
    `interval` short), `owner` "think_nb" or "other", `where` the innermost project frames
    ("path:line function", innermost first)."""

    cpu_s: float
    wall_s: float
    owner: str
    where: list[str] = field(default_factory=list)
    import_s: float = 0.0
    """CPU seconds the callback spent importing modules (not in `cpu_s`)."""
    gc_s: float = 0.0
    """CPU seconds the callback spent in the cyclic garbage collector (not in `cpu_s`)."""

    def __str__(self) -> str:
        imports = f", +{self.import_s * 1000:.0f} ms importing" if self.import_s >= 0.001 else ""
        imports += f", +{self.gc_s * 1000:.0f} ms collecting garbage" if self.gc_s >= 0.001 else ""
        return f"{self.cpu_s * 1000:.0f} ms CPU ({self.wall_s * 1000:.0f} ms wall{imports}) in {self.owner}: " + \
            " <- ".join(self.where[:4])


class StallMonitor:
    """Samples `thread_id`'s stack (default: the calling thread) from a daemon thread; see the
    module docstring. `threshold`, `interval` in seconds; `roots` are folders whose frames count
    as "other" project code (a frame in neither think_nb nor a root is library code, skipped)."""

    def __init__(self, threshold: float = 0.25, interval: float = 0.01, thread_id: int | None = None,
                 roots: tuple[str, ...] = ()) -> None:
        self.threshold = threshold
        self.interval = interval
        self.thread_id = thread_id if thread_id is not None else threading.get_ident()
        self.roots = tuple(str(Path(r).resolve()) for r in roots)
        self.longest: Stall | None = None  # the longest callback seen (any length), for benchmarks
        self._clock = time.pthread_getcpuclockid(self.thread_id)
        self._stalls: list[Stall] = []
        self._lock = threading.Lock()
        self._count = 0  # samples taken
        self._samples = threading.Condition()
        self._stop = threading.Event()
        self._gc_total = 0.0  # CPU seconds the watched thread spent in finished collections
        self._gc_started: float | None = None  # its CPU clock when a collection under way began
        gc.callbacks.append(self._on_gc)
        self._thread = threading.Thread(target=self._sample, name="think-nb-stall-monitor", daemon=True)
        self._thread.start()

    def take(self) -> list[Stall]:
        """The stalls recorded since the last `take()` (and forget them). Call it outside any
        callback of the watched thread (after a loop has returned): it first waits for two more
        samples, so a callback that just ended is counted."""
        self._settle()
        with self._lock:
            taken, self._stalls = self._stalls, []
        return taken

    def reset_longest(self) -> Stall | None:
        """The longest callback since the last call (None if none was sampled twice), then forget it.
        Call it outside any callback of the watched thread, as `take()`."""
        self._settle()
        with self._lock:
            longest, self.longest = self.longest, None
        return longest

    def _settle(self) -> None:
        """Wait for two more samples (at most 1 s): a callback that just ended is then counted."""
        with self._samples:
            seen = self._count
            self._samples.wait_for(lambda: self._count >= seen + 2 or not self._thread.is_alive(), timeout=1.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        """`gc.callbacks`: time the watched thread's collections (runs on the collecting thread)."""
        if threading.get_ident() != self.thread_id:
            return
        now = time.clock_gettime(self._clock)
        if phase == "start":
            self._gc_started = now
        elif self._gc_started is not None:
            self._gc_total += now - self._gc_started
            self._gc_started = None

    def _collected(self, now: float) -> float:
        """CPU seconds the watched thread has spent collecting garbage, one under way included."""
        started = self._gc_started
        return self._gc_total + (now - started if started is not None else 0.0)

    def _sample(self) -> None:
        current: FrameType | None = None  # the Handle._run frame under way (held: its id is not reused)
        start = previous = (0.0, 0.0)
        importing = 0.0  # CPU seconds of the current callback spent in imports (sampled)
        collected = 0.0  # the watched thread's garbage-collection CPU when the callback began
        last: Stall | None = None
        while not self._stop.wait(self.interval):
            frame = sys._current_frames().get(self.thread_id)
            if frame is None:
                return  # the watched thread ended
            handle = _innermost_run(frame)
            now = (time.perf_counter(), time.clock_gettime(self._clock))
            if handle is not current:
                self._finish(last)
                current, start, importing, last = handle, now, 0.0, None
                collected = self._collected(now[1])
            elif handle is not None:
                owner, where, in_import = self._owner(frame)
                importing += (now[1] - previous[1]) if in_import else 0.0
                gc_s = self._collected(now[1]) - collected
                last = Stall(now[1] - start[1] - importing - gc_s, now[0] - start[0], owner, where, importing, gc_s)
            previous = now
            del frame, handle
            with self._samples:
                self._count += 1
                self._samples.notify_all()
        self._finish(last)

    def _finish(self, stall: Stall | None) -> None:
        if stall is None:
            return
        with self._lock:
            if self.longest is None or stall.cpu_s > self.longest.cpu_s:
                self.longest = stall
            if stall.cpu_s > self.threshold:
                self._stalls.append(stall)

    def _owner(self, frame: FrameType | None) -> tuple[str, list[str], bool]:
        """(owner, where, whether an import is under way) of the watched thread's stack. The
        owner is "think_nb" when the innermost project frame is think_nb's and no frame of
        `roots` is on the stack: a callback think_nb scheduled (a turn's step, a comm message, a
        timer). think_nb code called synchronously from a root (a test, as from a notebook cell)
        is that caller's time, "other"."""
        owner, where, in_import, rooted = "", [], False, False
        while frame is not None and frame.f_code is not _RUN:
            path = frame.f_code.co_filename
            in_import = in_import or path.startswith("<frozen importlib._bootstrap")
            mine = path.startswith(PACKAGE)
            rooted = rooted or (not mine and bool(self.roots) and path.startswith(self.roots))
            if mine or (self.roots and path.startswith(self.roots)):
                owner = owner or ("think_nb" if mine else "other")
                where.append(f"{path}:{frame.f_lineno} {frame.f_code.co_name}")
            frame = frame.f_back
        return ("other" if rooted or not owner else owner), where, in_import


def _innermost_run(frame: FrameType | None) -> FrameType | None:
    while frame is not None:
        if frame.f_code is _RUN:
            return frame
        frame = frame.f_back
    return None
