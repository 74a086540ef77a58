"""Agent creation: instructions per agent (valgrind, deterministic) and agents per second, think_nb
against agno (issue 29 §4: 100 agents in one kernel, a class's sub-agents or `agent.map` rows).

Each side makes the agents a user makes: think_nb `Bench(f"a{i}", db=...)` (a `Think` subclass with
a scripted model, one SQLite file), agno `Agent(model=..., name=f"a{i}")` (a stub `Model`, no
storage). Both after one warm agent in the same process, so imports and the file's opening are not
counted. Rows:

- think_nb, new agents: names never stored (their registration is written with the file's next
  write, counted here: it happens at exit);
- think_nb, agents again: the same names made again after they were stored (a new kernel making
  its sub-agents again: what it must find out about them is read);
- think_nb, reopened agents: the same, after each stored agent ran `HISTORY` turns (its turn log
  rows, written through the store's own `turn_log`): what start-up reads must not grow with them;
- agno, new agents.

Instructions per agent = (I(N) - I(0)) / N of whole fresh processes under cachegrind; agents per
second from `perf_counter` over N agents (noisy on a shared machine; the instructions are not).

    python bench/bench_agents.py            # N = 200
    python bench/bench_agents.py --quick    # N = 20 (CI: it must run and print)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import cachegrind

CASES = ("think_nb new", "think_nb again", "think_nb reopened", "agno new")
HISTORY = 50
"""Turns each agent of `think_nb reopened` ran before it is made again."""


def make(case: str, n: int, stored: int) -> float:
    """Make `n` agents of `case` after a warm one (`think_nb again`: after `stored` agents were made and
    stored, the first `n` of them again); returns the seconds the `n` took."""
    folder = tempfile.mkdtemp()
    if case.startswith("think_nb"):
        from think_nb import Think
        from think_nb.binding import runtime_of
        from think_nb.store import open_database
        from think_nb.testing import ScriptedModel as S

        script = S([[S.text("hi")]], record=False)

        class Bench(Think):
            def get_model(self):  # type: ignore[no-untyped-def]
                return script.model

        db = os.path.join(folder, "bench.sqlite")
        Bench("warm", db=db)
        if case in ("think_nb again", "think_nb reopened"):
            for i in range(stored):
                store = runtime_of(Bench(f"a{i}", db=db)).store
                store.state.set("n", i)  # stored: a next kernel finds them
                if case == "think_nb reopened":
                    with store.transaction():
                        for t in range(HISTORY):
                            started = store.turn_log.start(f"r{t}", "send", False)
                            store.turn_log.finish(f"r{t}", "completed", None, started)
            open_database(db).flush_agents()
        start = time.perf_counter()
        for i in range(n):
            Bench(f"a{i}", db=db)
        return time.perf_counter() - start
    from agno.agent import Agent
    from agno.models.base import Model

    class Stub(Model):  # agno's abstract model, with nothing behind it (creation never calls it)
        def invoke(self, *a, **k): ...  # type: ignore[no-untyped-def]
        async def ainvoke(self, *a, **k): ...  # type: ignore[no-untyped-def]
        def invoke_stream(self, *a, **k): ...  # type: ignore[no-untyped-def]
        def ainvoke_stream(self, *a, **k): ...  # type: ignore[no-untyped-def]
        def _parse_provider_response(self, r, **k): ...  # type: ignore[no-untyped-def]
        def _parse_provider_response_delta(self, r): ...  # type: ignore[no-untyped-def]

    model = Stub(id="stub")
    Agent(model=model, name="warm")
    start = time.perf_counter()
    for i in range(n):
        Agent(model=model, name=f"a{i}")
    return time.perf_counter() - start


def worker(case: str, n: int, stored: int) -> list[str]:
    return [sys.executable, __file__, "--worker", case, str(n), str(stored)]


def instructions(case: str, n: int, stored: int) -> int:
    """CPU instructions of one fresh worker process (cachegrind)."""
    return cachegrind.instructions(worker(case, n, stored)[1:], f"{case} ({n} agents)")


def per_second(case: str, n: int) -> float:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run(worker(case, n, n), capture_output=True, text=True, env=env, timeout=900, check=True)
    return n / float(out.stdout.split()[-1])


def main(n: int, counted: tuple[str, ...] = CASES) -> None:
    """Instructions per agent for the `counted` cases (valgrind), agents per second for all."""
    cachegrind.require_valgrind()
    with ThreadPoolExecutor(max_workers=2 * len(counted)) as pool:
        runs = {(c, k): pool.submit(instructions, c, k, n) for c in counted for k in (0, n)}
        counts = {key: run.result() for key, run in runs.items()}
    rates = {c: per_second(c, n) for c in CASES}
    per = {c: (counts[c, n] - counts[c, 0]) / n for c in counted}
    print(f"agents per process  {n}" + ("" if counted == CASES else
                                         f"  (--quick: instructions counted for {', '.join(counted)} only)"))
    print(f"{'case':24} {'instructions per agent':>24} {'agents per second':>18} {'vs agno':>8}")
    for case in CASES:
        count = f"{per[case] / 1e3:>22,.1f} k" if case in per else f"{'—':>24}"
        ratio = (f"{per[case] / per['agno new']:>7.2f}x" if case in per and "agno new" in per
                 else f"{rates['agno new'] / rates[case]:>7.2f}t")  # t: by time, agno's rate over this one's
        print(f"{case:24} {count} {rates[case]:>18,.0f} {ratio}")

if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        print(make(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="20 agents, instructions of think_nb new only (CI: it must run and print)")
    args = parser.parse_args()
    main(20, ("think_nb new",)) if args.quick else main(200)
