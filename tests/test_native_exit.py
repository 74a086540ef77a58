"""A process that used Monty exits cleanly even when a Rust thread is still inside a call into
Python as the program ends (issue 28 §12: `bench/bench_extensions.py --quick` died of SIGABRT at
exit on a loaded machine; think_nb.procs.threads has the backtrace). The child
(tests/native_exit_child.py) makes that timing certain; before the fix it aborted every time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

CHILD = Path(__file__).with_name("native_exit_child.py")


def test_exit_waits_for_a_monty_thread_still_in_python(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "THINK_NB_ALLOW_MODEL_REQUESTS": "0"}
    done = subprocess.run([sys.executable, str(CHILD), str(tmp_path)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode != -signal.SIGABRT, f"aborted at exit: {done.stderr[-2000:]}"
    assert (done.returncode, done.stdout.strip()) == (0, "done"), done.stderr[-2000:]


FOREIGN = r'''
import _thread
import threading

from think_nb.procs.threads import foreign_thread_states, wait_for_foreign_threads

assert foreign_thread_states() == 0
release, entered = threading.Event(), threading.Event()

def foreign() -> None:
    entered.set()
    release.wait()

_thread.start_new_thread(foreign, ())  # a thread outside `threading`'s registry, like a Rust one
entered.wait()
assert foreign_thread_states() == 1
assert wait_for_foreign_threads(timeout=0.01) is False
release.set()
assert wait_for_foreign_threads(timeout=60) is True and foreign_thread_states() == 0
print("counted")
'''


def test_foreign_thread_states_counts_a_thread_threading_does_not_know() -> None:
    # In a fresh interpreter: the test's own process may hold foreign threads of its runner (a pytest-xdist
    # worker's execnet thread is started with `_thread`), and `wait_for_foreign_threads` waits for none.
    done = subprocess.run([sys.executable, "-c", FOREIGN], capture_output=True, text=True, timeout=300, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "counted"), done.stderr[-2000:]
