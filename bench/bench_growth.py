"""Does a tool turn get slower as the history grows? Counted in CPU instructions, not timed (issue 18 §4).

`bench_peers.py` times turns 1-10 against turns 91-100; on a shared, loaded machine that ratio
swings from 0.4x to 3x run to run. This counts instructions instead (valgrind's cachegrind, which
is deterministic to ~0.01% run to run), for the same worker as `bench_peers.py` (`tools`: a warm-up
turn, then K short tool turns), at K = 20, 60 and 100 in fresh processes. With a turn at history
position k costing `a + s·k` instructions and `C` for start-up,
`I(K) = C + a·K + s·K(K-1)/2`, so three runs give `a` (a turn's own cost) and `s` (what one more
turn of history adds to every later turn), and the growth `(a + 94.5·s) / (a + 4.5·s)` that
`bench_peers.py` measures as "last 10% / first 10%". Garbage collection is counted too (a full
collection lands at a different turn for each K: `s` is good to about ±6k instructions).

    python bench/bench_growth.py                 # think_nb (10 CPU-minutes, valgrind is ~50x slower; runs in parallel)
    python bench/bench_growth.py --pydantic-ai   # pydantic-ai too
    python bench/bench_growth.py --quick         # 2, 4 and 6 turns (CI: it must run and print)
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor

import cachegrind

SIZES = (20, 60, 100)
QUICK_SIZES = (2, 4, 6)
HERE = os.path.dirname(os.path.abspath(__file__))


def instructions(framework: str, turns: int) -> int:
    """CPU instructions of one fresh `bench_peers.py --worker FRAMEWORK tools TURNS` process."""
    return cachegrind.instructions([os.path.join(HERE, "bench_peers.py"), "--worker", framework, "tools", str(turns)],
                                   f"{framework} {turns} turns")


def fit(counts: dict[int, int]) -> tuple[float, float]:
    """`(a, s)` from I(K) at three sizes (20, 60, 100; see the module docstring)."""
    k1, k2, k3 = sorted(counts)
    pair = lambda k: k * (k - 1) / 2  # noqa: E731
    s = (counts[k3] - 2 * counts[k2] + counts[k1]) / (pair(k3) - 2 * pair(k2) + pair(k1))
    a = (counts[k2] - counts[k1] - s * (pair(k2) - pair(k1))) / (k2 - k1)
    return a, s


def main(frameworks: list[str], sizes: tuple[int, int, int] = SIZES) -> None:
    cachegrind.require_valgrind()
    print(f"turn counts {sizes}" + ("  (--quick: too few turns for a meaningful fit; it checks the bench runs)"
                                    if sizes != SIZES else ""))
    print(f"{'framework':12} {'per turn (a)':>16} {'per turn of history (s)':>24} {'turns 91-100 / 1-10':>20}")
    # The runs are independent, single-threaded (valgrind serialises a process's threads) and their counts do
    # not depend on the machine's load, so they run side by side: on 2 cores that halves the wall time.
    with ThreadPoolExecutor(max_workers=len(frameworks) * len(sizes)) as pool:
        runs = {(f, k): pool.submit(instructions, f, k) for f in frameworks for k in sizes}
        counts = {key: run.result() for key, run in runs.items()}
    for framework in frameworks:
        a, s = fit({k: counts[framework, k] for k in sizes})
        print(f"{framework:12} {a / 1e6:>13.2f} M {s / 1e3:>21.1f} k {(a + 94.5 * s) / (a + 4.5 * s):>19.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pydantic-ai", action="store_true", help="count pydantic-ai's turns too")
    parser.add_argument("--quick", action="store_true", help="2, 4 and 6 turns (CI: it must run and print)")
    args = parser.parse_args()
    main(["think_nb", "pydantic_ai"] if args.pydantic_ai else ["think_nb"], QUICK_SIZES if args.quick else SIZES)
