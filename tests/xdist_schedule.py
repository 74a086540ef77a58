"""How `.ci/test` spreads the non-browser suite over pytest-xdist workers (`-n 2 --dist loadfile`).

`--dist loadfile` keeps each test file on one worker, so a module-scoped fixture (a kernel per module,
tests/kernel/conftest.py) starts once. Two changes to it, made here:

- the long files start first (longest-processing-time-first: a long file that starts last leaves the
  other worker idle at the end); `LONG` holds each long file's seconds of a serial run (2026-12-04, at
  load ~10: only the order matters), and every other file keeps its collection order after them;
- `SPLIT` files are not kept together: each of their tests is its own unit (test_benchmarks' cases are
  independent subprocesses, 430 s in all, longer than half the suite on one worker).

Without xdist (`-n` not given) nothing changes: the collection order is the usual one.
"""

from __future__ import annotations

import pytest

LONG = {  # file: seconds of its tests in a serial run (the order is what counts)
    "tests/test_notebooks.py": 121,
    "tests/kernel/test_processes_kernel.py": 103,
    "tests/test_llama_server.py": 93,
    "tests/test_browser_tools.py": 72,
    "tests/test_mcp.py": 46,
    "tests/test_sigkill.py": 45,
    "tests/kernel/test_schedules_kernel.py": 41,
    "tests/test_stalls.py": 39,
    "tests/test_gate_collisions.py": 30,
    "tests/test_conversation.py": 26,
    "tests/test_stored_form.py": 23,
    "tests/test_provider_failures.py": 23,
}
SPLIT = {  # file: {test id: seconds}, each test its own unit
    "tests/test_benchmarks.py": {"bench_growth": 91, "bench_agents": 58, "bench_first_turn": 58,
                                 "bench_local_eval": 40, "bench_peers": 35, "bench_embedded": 28, "bench_mcp": 26,
                                 "bench_stream": 23, "bench_stalls": 21, "bench_transcript": 16, "bench_batch": 10},
}


def _cost(nodeid: str) -> float:
    path, _, rest = nodeid.partition("::")
    if path in SPLIT:
        return next((s for name, s in SPLIT[path].items() if f"[{name}]" in rest), 1)
    return LONG.get(path, 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # not an xdist worker: the usual order
        return
    # A stable sort: the files of equal cost (most of them: 0) keep their order, and a file's tests stay
    # together and in order (every test of a LONG file has its file's cost).
    items.sort(key=lambda item: -_cost(item.nodeid))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getoption("dist") != "loadfile":
        return None  # xdist's own scheduler for the mode asked for
    from xdist.scheduler import LoadScopeScheduling

    class LongFilesFirst(LoadScopeScheduling):
        """`--dist loadfile`, with the `SPLIT` files' tests as units of their own; the units are handed
        out in collection order (which `pytest_collection_modifyitems` made longest first)."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPLIT else path

    config.option.loadscopereorder = False  # keep that order (xdist's reorder puts the big files first)
    return LongFilesFirst(config, log)
