"""What one panel sync's branch annotations cost on a transcript with forks, in CPU instructions.

Every sync (`ViewHub.annotations()`, on every status change and every stored message) annotates each
reply with other versions in the last 100 messages: its siblings and, for a reply made by
`agent.fork`, a comparison with the original. They are remembered per reply and the revision of its
sibling group (`think_nb.panel.hub.ViewHub._branches`), so an unchanged transcript is read in one
query. This counts the instructions of a sync (valgrind's cachegrind, deterministic to ~0.01%: no
timing) as `(I(K2) - I(K1)) / (K2 - K1)` over two fresh worker processes that build the same
transcript (TURNS tool turns, each answered again, the last one forked) and then sync K1 or K2
times, with the memo (`cached`) and with it cleared before each sync (`uncached`: every reply read
and compared again, as before the memo), and prints the ratio.

    python bench/bench_annotations.py           # 20 forked replies, 10 and 40 syncs (valgrind, ~1 CPU-minute)
    python bench/bench_annotations.py --quick   # 2 forked replies, 1 and 3 syncs (CI: it must run and print)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cachegrind

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def worker(turns: int, syncs: int, cached: bool) -> None:
    """Build the transcript, then sync `syncs` times."""
    os.environ["THINK_NB_DIR"] = tempfile.mkdtemp(prefix="bench-annotations-")  # each worker its own file
    os.environ.pop("THINK_NB_DB", None)
    from think_nb import Think, tool
    from think_nb.aio import script_loop
    from think_nb.binding import runtime_of
    from think_nb.panel.hub import ViewHub
    from think_nb.testing import ScriptedModel as S

    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    steps = []
    for n in range(turns):
        steps += [[S.text("Let me add."), S.tool_call("add", {"a": n, "b": 40})], [S.text(f"The sum is {n + 40}.")],
                  [S.text(f"Again: {n + 40}.")]]
    script = S(steps)
    cls = type("Forked", (Think,), {"include_workspace_tools": False, "get_model": lambda self: script.model,
                                    "get_tools": lambda self: [add]})
    agent = cls("bench")
    for n in range(turns):
        agent.run(f"{n} + 40?")
        script_loop().run_until_complete(agent.regenerate())
    original = agent.turns()[-2]["request_id"]
    call = runtime_of(agent).store.records.load(original).record["steps"][0]["calls"][0]
    fork = agent.fork(original, at=f"after_tool_call:{call}", model=S([[S.text("The sum is 0.")]]))
    fork.paused.ctx.output = 0
    fork.run()
    hub = ViewHub.for_agent(runtime_of(agent))
    shown = hub.annotations()["branches"]
    assert len(shown) == turns and sum("compare" in b for b in shown.values()) == 1, shown
    for _ in range(syncs):
        if not cached:
            getattr(hub, "_branch_memo", {}).clear()
        hub.annotations()


def instructions(turns: int, syncs: int, cached: bool) -> int:
    return cachegrind.instructions([__file__, "--worker", str(turns), str(syncs), str(int(cached))],
                                   f"worker ({turns} turns, {syncs} syncs)")


def main(turns: int, k1: int, k2: int) -> None:
    cachegrind.require_valgrind()
    cases = [(syncs, cached) for cached in (True, False) for syncs in (k1, k2)]
    with ThreadPoolExecutor(2) as pool:
        counts = dict(zip(cases, pool.map(lambda c: instructions(turns, *c), cases), strict=True))
    per = {cached: (counts[(k2, cached)] - counts[(k1, cached)]) / (k2 - k1) for cached in (True, False)}
    print(f"transcript: {turns} replies with other versions (one forked); syncs {k1} and {k2}")
    print(f"{'instructions per sync, cached':34} {per[True]:>14,.0f}")
    print(f"{'instructions per sync, uncached':34} {per[False]:>14,.0f}")
    print(f"{'ratio uncached/cached':34} {per[False] / max(per[True], 1):>14.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", nargs=3, type=int, metavar=("TURNS", "SYNCS", "CACHED"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], bool(args.worker[2]))
    elif args.quick:
        main(2, 1, 3)
    else:
        main(20, 10, 40)
