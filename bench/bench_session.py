"""Benchmark: session scale targets (issue 5).

1. Open a 10,000-message session as a fresh kernel does: the SQLite file opened anew, the agent
   made, its current branch read (`agent.messages`). Each run first closes the file's `Database`:
   think_nb keeps one per file per process (`think_nb.store.db.open_database`), and a made agent
   reads its branch on first use, so making the same agent again in one process measured neither
   (it printed 0.0 ms). The whole branch (`hydration_limit = None`), and again with Think's default
   window (`hydration_limit`, the newest 2,000). Target: ≤ 150 ms (median), wall and CPU time printed.
2. Full-text search (FTS5, `session.search`, 20 results, each hit's `on_branch` flag included) over
   10,000 and 100,000 stored messages, by kind (a common word, a two-word phrase, a rare word).
   Target: median ≤ 10 ms (issue 29 §1: every kind, at 100,000 messages, the branch flag included).
3. Bounded memory: Python heap peak (tracemalloc) of loading the whole 100,000-message branch
   vs. a window of the last 500 (`MessageStore.branch(limit=500)`, Think's hydration budget).

    python bench/bench_session.py [--open 10000] [--search 10000 100000] [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.store import AgentStore, open_database

WORDS = [
    "fox", "dog", "cat", "tundra", "canid", "rodent", "berry", "river", "mountain", "python", "sqlite",
    "notebook", "kernel", "panel", "token", "summary", "memory", "context", "session", "search", "index",
    "query", "model", "agent", "tool", "result", "error", "stream", "chunk", "apple", "banana", "cherry",
    "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november",
    "oscar",
]


def fill(db_path: Path, agent_key: str, n: int, seed: int = 1) -> None:
    """Store a linear conversation of `n` messages (one transaction; triggers index FTS)."""
    rng = random.Random(seed)
    messages = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
        messages.append({"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
                         "parts": [{"type": "text", "text": f"{text} number{i}"}]})
    cls, name = agent_key.split(":")
    AgentStore(open_database(db_path), agent_key, cls, name).messages.extend(messages, None)


class Bench(Think):
    hydration_limit = None  # opening measures loading the whole branch


class SearchBench(Think):
    hydration_limit = 4  # the search needs only the store, not the 100k-message branch in memory


def open_session(cls: type[Think], db_path: Path, size: int, runs: int) -> str:
    """Opening the `size`-message session in `db_path` afresh, `runs` times (see the module docstring,
    1.): the file's `Database` closed (untimed), then a `cls` agent made and its branch read."""
    times, cpu = [], []
    for _ in range(runs):
        open_database(db_path).close()  # as in a new kernel: no open connection to reuse
        start, started_cpu = time.perf_counter(), time.process_time()
        agent = cls("open", db=db_path, key="Bench:open")
        loaded = len(agent.messages)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        assert loaded == min(size, agent.hydration_limit or size), loaded
    return (f"{loaded:,} messages read: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms "
            f"(CPU {statistics.median(cpu):.1f} ms; target <= 150 ms)")


def search(db_path: Path, size: int, runs: int) -> Think:
    """Store `size` messages, time `session.search` by kind, print the medians; the agent searched."""
    start = time.perf_counter()
    fill(db_path, f"Bench:search{size}", size)
    print(f"stored {size:,} messages (FTS-indexed by triggers) in {time.perf_counter() - start:.1f} s")
    agent = SearchBench(f"search{size}", db=db_path, key=f"Bench:search{size}")
    session = agent.session
    rng = random.Random(7)
    queries = [rng.choice(WORDS) for _ in range(runs)] + \
        [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(runs)] + \
        [f"number{rng.randrange(size)}" for _ in range(runs)]
    times, cpu = [], []
    for q in queries:
        start, started_cpu = time.perf_counter(), time.process_time()
        hits = session.search(q, limit=20)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        assert hits or " " in q
        assert all(isinstance(h["on_branch"], bool) for h in hits)  # the branch flag is part of what is timed
    by_kind = [statistics.median(times[i * runs:(i + 1) * runs]) for i in range(3)]
    print(f"search over {size:,} messages: median {statistics.median(times):.2f} ms (target <= 10 ms); "
          f"one common word {by_kind[0]:.2f} ms, two-word phrase {by_kind[1]:.2f} ms, rare word {by_kind[2]:.2f} ms")
    cpu_kind = [statistics.median(cpu[i * runs:(i + 1) * runs]) for i in range(3)]
    print(f"  same in CPU ms (this process's own work, what the load does not inflate): common word "
          f"{cpu_kind[0]:.2f}, two-word phrase {cpu_kind[1]:.2f}, rare word {cpu_kind[2]:.2f} (load average "
          f"{os.getloadavg()[0]:.2f})")
    return agent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--open", type=int, default=10_000)
    parser.add_argument("--search", type=int, nargs="+", default=[10_000, 100_000], help="session sizes searched")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes, 3 runs: checks the benchmark runs (CI)")
    args = parser.parse_args()
    if args.quick:
        args.open, args.search, args.runs = 500, [2_000], 3
    tmp = Path(tempfile.mkdtemp(prefix="think-bench-"))

    db_path = tmp / "open.sqlite"
    fill(db_path, "Bench:open", args.open)
    print(f"open a {args.open:,}-message session, whole branch: {open_session(Bench, db_path, args.open, args.runs)}")
    print(f"  same, Think's default window: {open_session(Think, db_path, args.open, args.runs)}")

    for size in args.search:
        searched = search(tmp / f"search-{size}.sqlite", size, args.runs)

    store = runtime_of(searched).store.messages
    for label, limit in (("whole branch", None), ("window of 500", 500)):
        tracemalloc.start()
        start = time.perf_counter()
        loaded = store.branch(limit=limit)
        elapsed = (time.perf_counter() - start) * 1000
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"load {label} of {args.search[-1]:,}: {len(loaded):,} messages, {elapsed:.0f} ms, peak {peak:.1f} MiB")
        del loaded


if __name__ == "__main__":
    main()
