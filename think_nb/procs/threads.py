"""At exit, let native threads leave Python before the interpreter finalizes (issue 28 §12).

pydantic-monty runs its async API on a Rust (tokio) thread pool that completes each awaited
call by calling into Python (`loop.call_soon_threadsafe`, whose self-pipe `send` releases the
GIL). The awaiting coroutine can resume, and the program end, while that thread is still inside
the call, waiting to take the GIL back. Once the interpreter finalizes, such a thread is ended
with `pthread_exit`, whose forced unwinding through Rust frames aborts the process: SIGABRT
after everything printed (`bench/bench_extensions.py --quick` on a loaded machine; reproduced with
a bare `AsyncMonty` about 1 run in 5 under CPU load, backtrace: `tokio-rt-worker` in
`take_gil` -> `PyThread_exit_thread` -> `__pthread_unwind` -> `abort`).

`register()` (called where a Monty pool is made) adds, once per process, an `atexit` handler
that waits, giving up the GIL, until no thread the `threading` module does not know holds a
Python thread state (a foreign thread in a call into Python holds one from `PyGILState_Ensure` to
`PyGILState_Release`), for at most `EXIT_WAIT_S` seconds (a bound for a thread stuck in Python, so
exit never hangs). Atexit handlers run before finalization starts, so the thread finishes its call
normally.
"""

from __future__ import annotations

import atexit
import threading

EXIT_WAIT_S = 5.0
_registered = False
_lock = threading.Lock()


def register() -> None:
    """Install the exit handler (idempotent)."""
    global _registered
    with _lock:
        if not _registered:
            atexit.register(wait_for_foreign_threads)
            _registered = True


def foreign_thread_states() -> int:
    """How many Python thread states belong to threads `threading` does not know (0 when no
    native thread is in a call into Python)."""
    import ctypes

    api = ctypes.pythonapi
    api.PyInterpreterState_Get.restype = ctypes.c_void_p
    api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
    api.PyInterpreterState_ThreadHead.restype = ctypes.c_void_p
    api.PyThreadState_Next.argtypes = [ctypes.c_void_p]
    api.PyThreadState_Next.restype = ctypes.c_void_p
    # the GIL is held (pythonapi calls keep it): no thread state is deleted while this walks the list;
    # a new one is inserted at its head, which a walk from an older head does not see (counted next time)
    states, state = 0, api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Get())
    while state:
        states += 1
        state = api.PyThreadState_Next(state)
    known = sum(1 for t in threading.enumerate() if not isinstance(t, threading._DummyThread))
    return max(0, states - known)


def wait_for_foreign_threads(timeout: float = EXIT_WAIT_S) -> bool:
    """Wait until `foreign_thread_states()` is 0, sleeping 1 ms at a time (which releases the GIL
    for them); True when it is, False after `timeout` s."""
    import time

    deadline = time.monotonic() + timeout
    while foreign_thread_states():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True
