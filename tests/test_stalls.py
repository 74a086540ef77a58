"""The loop-stall monitor and the suite's stall guard (issue 29 §6, `think_nb.stalls`,
tests/loop_stalls.py), on real callbacks: CPU burnt in think_nb's code is a stall of think_nb's,
CPU burnt in a test's own code is not, and a sleep (no CPU) is not a stall at all."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from think_nb.redact import scrub
from think_nb.stalls import StallMonitor

HERE = Path(__file__).parent
TEXT = "x" * 2_000_000


def burn_in_think_nb(seconds: float) -> None:
    """Keep the loop in think_nb's code (`scrub`, pure string work) for `seconds` of CPU."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        scrub(TEXT, {f"secret-{n:04d}-long-enough" for n in range(20)})


def burn_here(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(range(10_000))


@pytest.mark.allow_stall("it burns CPU in think_nb's scrub on purpose")
async def test_cpu_in_one_callback_is_a_stall_owned_by_the_code_it_ran_in() -> None:
    monitor = StallMonitor(threshold=0.2, roots=(str(HERE),))
    try:
        monitor.take()
        burn_in_think_nb(0.4)  # this coroutine's step is one callback
        await asyncio.sleep(0.05)  # the step ends; the monitor sees the callback end
        burn_here(0.4)
        await asyncio.sleep(0.05)
        time.sleep(0.4)  # noqa: ASYNC251 (blocking on purpose: wall time, no CPU, is not a stall)
        await asyncio.sleep(0.05)
        stalls = monitor.take()
    finally:
        monitor.stop()
    assert [s.owner for s in stalls] == ["think_nb", "other"], stalls
    assert all(s.cpu_s >= 0.2 for s in stalls)
    assert stalls[0].where[0].startswith(str(HERE.parent / "think_nb" / "redact.py"))
    assert "burn_here" in stalls[1].where[0]


GUARDED = '''
import pytest
from test_stalls import burn_in_think_nb, burn_here

async def test_think_nb_stalls():
    burn_in_think_nb(0.5)

@pytest.mark.allow_stall("known: a test of the marker")
async def test_allowed():
    burn_in_think_nb(0.5)

async def test_own_code_stalls():
    burn_here(0.5)
'''


def test_the_guard_fails_a_test_whose_think_nb_code_holds_the_loop(tmp_path: Path) -> None:
    (tmp_path / "test_guarded.py").write_text(GUARDED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)]),
           "THINK_NB_STALL_LIMIT_S": "0.25"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "loop_stalls", "-o", "asyncio_mode=auto", "-q",
                           "-p", "no:cacheprovider", "test_guarded.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "1 failed, 2 passed" in done.stdout, done.stdout
    assert "FAILED test_guarded.py::test_think_nb_stalls" in done.stdout
    assert "think_nb held the event loop over 250 ms of CPU in one callback" in done.stdout
    assert "think_nb/redact.py:" in done.stdout  # where: the innermost think_nb frame
