"""The stall guard (issue 29 §6): a test fails when a callback think_nb scheduled (a turn's step,
a comm message, a timer: no test frame on its stack) holds the event loop for more than `LIMIT_S`
seconds of CPU, in the test's set-up, call or teardown. think_nb called synchronously by the test
is the test's time, as a notebook cell's call is the cell's.

A `think_nb.stalls.StallMonitor` watches the main thread (where pytest-asyncio runs every test's
loop) for the whole session. CPU time, not wall time, is compared, so a loaded machine does not
make a test fail. A stall in a test's own code (a test that blocks on purpose) is not think_nb's
and is ignored. A test whose stall is known and not yet fixed says so with
`@pytest.mark.allow_stall("why")`. `THINK_NB_STALL_LIMIT_S=0` turns the guard off.

What it does not see: the loop waiting for the GIL while another thread holds it (a garbage
collection or a native call on a think_nb thread, such as litellm's import thread). The loop thread
then spends no CPU (it waits, in the selector or mid-callback), so no callback's CPU grows, and the
sampler cannot run either. That is not added here: which thread held the GIL cannot be read
from Python, and another thread's CPU burned during a late sample is not proof (native code that
releases the GIL, or a loaded machine, does the same), so a failure on it would be flaky; and a
collection's length is the whole heap's, like the ones this guard already counts apart. Those
stalls are measured in fresh processes instead (bench/bench_first_turn.py's first hosted turn,
every thread's CPU clock per 1 ms beat) and their causes checked by count (tests/test_litellm_off_loop.py).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

from think_nb.stalls import StallMonitor

LIMIT_S = float(os.environ.get("THINK_NB_STALL_LIMIT_S", "0.25"))
_monitor: StallMonitor | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _monitor
    config.addinivalue_line("markers", "allow_stall(reason): a known loop stall in think_nb's code (the guard "
                                       "reports it instead of failing the test)")
    if LIMIT_S > 0 and _monitor is None:
        _monitor = StallMonitor(threshold=LIMIT_S, roots=(str(Path(__file__).parent),))


def _guard(item: pytest.Item) -> Generator[None, None, None]:
    if _monitor is None:
        yield
        return
    _monitor.take()
    yield
    stalls = [s for s in _monitor.take() if s.owner == "think_nb"]
    if not stalls:
        return
    text = "; ".join(str(s) for s in stalls)
    marker = item.get_closest_marker("allow_stall")
    if marker is not None:
        item.add_report_section("call", "loop stalls", f"allowed ({marker.args[0]}): {text}")
        return
    raise AssertionError(f"think_nb held the event loop over {LIMIT_S * 1000:.0f} ms of CPU in one callback: "
                         f"{text}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    yield from _guard(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield from _guard(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    yield from _guard(item)
