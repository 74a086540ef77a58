"""The loop-stall monitor and the suite's stall guard (issue 29 §6, `think_nb.stalls`,
tests/loop_stalls.py), on real callbacks: CPU burnt in think_nb's code is a stall of think_nb's,
CPU burnt in a test's own code is not, and a sleep (no CPU) is not a stall at all."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from think_nb.redact import scrub
from think_nb.stalls import StallMonitor

HERE = Path(__file__).parent
TEXT = "x" * 10_000_000
SECRETS = {f"secret-{n:04d}-long-enough" for n in range(20)}


def schedule_think_nb_work() -> None:
    """One callback of think_nb's own code (`scrub` over 10 MB, ~0.1-0.5 s of CPU) scheduled on
    the loop, as think_nb schedules a turn's step: no test frame is on its stack."""
    asyncio.get_running_loop().call_soon(scrub, TEXT, SECRETS)


def burn_here(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(range(10_000))


@pytest.mark.allow_stall("it schedules CPU-heavy think_nb work on purpose")
async def test_cpu_in_one_callback_is_a_stall_owned_by_the_code_that_scheduled_it() -> None:
    started = time.thread_time()
    scrub(TEXT, SECRETS)
    cost = time.thread_time() - started  # what one such callback costs on this machine
    monitor = StallMonitor(threshold=cost / 3, interval=0.005, roots=(str(HERE),))
    try:
        await asyncio.to_thread(monitor.take)
        schedule_think_nb_work()
        await asyncio.sleep(0.05)  # the callback runs, then ends; the monitor sees it end
        burn_here(cost)  # in the test's own code
        await asyncio.sleep(0.05)
        scrub(TEXT, SECRETS)  # think_nb's code, called synchronously by the test: the test's time
        await asyncio.sleep(0.05)
        time.sleep(cost)  # noqa: ASYNC251 (blocking on purpose: wall time, no CPU, is not a stall)
        await asyncio.sleep(0.05)
        stalls = await asyncio.to_thread(monitor.take)
    finally:
        monitor.stop()
    assert [s.owner for s in stalls] == ["think_nb", "other", "other"], stalls
    assert stalls[0].where[0].startswith(str(HERE.parent / "think_nb" / "redact.py"))
    assert "burn_here" in stalls[1].where[0]
    assert stalls[2].where[0].startswith(str(HERE.parent / "think_nb" / "redact.py"))  # but the test's call


def work_and_collect() -> None:
    burn_here(0.05)
    gc.collect()  # holds the GIL: no sample is taken while it runs
    burn_here(0.05)


async def test_time_in_the_garbage_collector_is_counted_apart_from_the_callbacks_cpu() -> None:
    """A full collection walks the whole heap, whichever callback's allocation set it off: its CPU
    goes in `gc_s`, not `cpu_s` (a long suite's heap takes 150-300 ms to collect)."""
    heap = [[[]] for _ in range(2_000_000)]  # a heap that takes a full collection tens of ms
    for cell in heap:
        cell[0].append(cell)  # cyclic: the collector must walk each one
    monitor = StallMonitor(threshold=10.0, interval=0.005)
    try:
        await asyncio.to_thread(monitor.reset_longest)
        asyncio.get_running_loop().call_soon(work_and_collect)  # the sampler sees it before and after
        await asyncio.sleep(0.05)
        longest = await asyncio.to_thread(monitor.reset_longest)
    finally:
        monitor.stop()
        del heap
    assert longest is not None and longest.gc_s > 0.02, longest
    assert longest.cpu_s < 0.1 + 0.03, longest  # the callback's own work only
    assert "collecting garbage" in str(longest)


GUARDED = '''
import asyncio
import pytest
from test_stalls import burn_here, schedule_think_nb_work

async def test_think_nb_stalls():
    schedule_think_nb_work()
    await asyncio.sleep(0.05)

@pytest.mark.allow_stall("known: a test of the marker")
async def test_allowed():
    schedule_think_nb_work()
    await asyncio.sleep(0.05)

async def test_own_code_stalls():
    burn_here(0.5)
'''


def test_the_guard_fails_a_test_whose_think_nb_code_holds_the_loop(tmp_path: Path) -> None:
    (tmp_path / "test_guarded.py").write_text(GUARDED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)]),
           "THINK_NB_STALL_LIMIT_S": "0.02"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "loop_stalls", "-o", "asyncio_mode=auto", "-q",
                           "-p", "no:cacheprovider", "test_guarded.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "1 failed, 2 passed" in done.stdout, done.stdout
    assert "FAILED test_guarded.py::test_think_nb_stalls" in done.stdout
    assert "think_nb held the event loop over 20 ms of CPU in one callback" in done.stdout
    assert "think_nb/redact.py:" in done.stdout  # where: the innermost think_nb frame
