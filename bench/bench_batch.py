"""Benchmark: batch runs (`agent.map`, issue 33) against their floor.

Every row is "Double N": the model calls a `double` tool, then answers (two model calls and one
tool call per row), on the same `FunctionModel`. Three ways to run N rows, 8 at a time:

1. floor: the model alone, driven by a bare `asyncio.gather` loop (a semaphore of 8): the
   function model's two calls and the tool per row, no turn, no storage;
2. hand loop: what a user writes today, 8 agents each `send`ing its share of the rows (full
   turns, stored), gathered;
3. `agent.map(df, concurrency=8)`: full turns, each row a stored session, through the ledger;
4. `agent.map(df, engine="ray", concurrency=2)` on a local Ray cluster (`ray.init(num_cpus=2)`): two
   actors, each one agent running its rows one after another, the driver storing each row.

Prints rows per second of each at two sizes (default 100 and 1,000 rows; Ray at the larger) and the
ratios, map's seconds a row at the larger size over the smaller (flat per-row cost: about 1), and
the memory per in-flight row: locally, the Python heap peak (tracemalloc) of a map at concurrency
16 minus at concurrency 1, over 15; on Ray, where an actor runs one row at a time, an actor
process's peak unique memory (USS, sampled).
`--quick` (CI) leaves Ray out (starting a cluster and its actors takes 20-40 s) and says so.

    python bench/bench_batch.py [--rows 100 1000] [--quick] [--no-ray]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd

from think_nb import Think, tool
from think_nb.testing import FunctionModel, number_tool_reply, start_local_ray

CONCURRENCY = 8


@tool
def double(x: int) -> int:
    """Double x."""
    return 2 * x


MODEL = FunctionModel(number_tool_reply("double", "double is"))  # "Double 4": calls double(x=4), says "double is 8"


class Doubler(Think):
    include_workspace_tools = False

    def get_model(self) -> str:
        return MODEL.model

    def get_tools(self) -> list:
        return [double]


async def floor(rows: int) -> float:
    """Rows per second of the model alone (two calls and the tool per row), gathered 8 at a time."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def row(n: int) -> None:
        async with gate:
            messages = [{"role": "user", "content": f"Double {n}"}]
            await MODEL.respond(messages, {})
            output = double.function(x=n)
            await MODEL.respond([*messages, {"role": "tool", "tool_call_id": "c", "content": str(output)}], {})

    start = time.perf_counter()
    await asyncio.gather(*(row(n) for n in range(rows)))
    return rows / (time.perf_counter() - start)


async def hand_loop(rows: int, tag: str) -> float:
    """Rows per second of 8 agents each sending its share of the rows (the loop users write today)."""
    agents = [Doubler(f"hand-{tag}-{i}") for i in range(CONCURRENCY)]

    async def lane(agent: Think, share: list[int]) -> None:
        for n in share:
            await agent.send(f"Double {n}")

    start = time.perf_counter()
    await asyncio.gather(*(lane(a, list(range(i, rows, CONCURRENCY))) for i, a in enumerate(agents)))
    return rows / (time.perf_counter() - start)


async def mapped(rows: int, tag: str, concurrency: int = CONCURRENCY) -> float:
    agent = Doubler(f"map-{tag}")
    df = pd.DataFrame({"n": range(rows)})
    start = time.perf_counter()
    results = await agent.map(df, "Double {n}", concurrency=concurrency, progress=False)
    elapsed = time.perf_counter() - start
    assert (results["status"] == "completed").all(), results["status"].value_counts()
    return rows / elapsed


async def heap_peak(rows: int, concurrency: int, tag: str) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    await mapped(rows, tag, concurrency)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


async def on_ray(rows: int) -> tuple[float, int, int]:
    """Rows per second of `map(engine="ray")` on a local cluster, the actors' peak unique memory
    (USS: what the process alone holds, without the shared object store and libraries; bytes, the
    largest of them) and how many actor processes were seen."""
    import psutil

    stop = start_local_ray(2, join=True)  # joined as a notebook joins a cluster; a start that timed out retried
    peaks: dict[int, int] = {}
    done = threading.Event()

    def sample() -> None:  # the actors live only while the run does: sample their memory as it goes
        while not done.wait(0.1):
            for proc in psutil.process_iter(["pid", "cmdline"]):
                if "_RowWorker" in " ".join(proc.info["cmdline"] or []):
                    with contextlib.suppress(psutil.Error):
                        peaks[proc.pid] = max(peaks.get(proc.pid, 0), proc.memory_full_info().uss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        agent = Doubler("map-ray")
        df = pd.DataFrame({"n": range(rows)})
        await agent.map(df.head(8), "Double {n}", run_id="warm", engine="ray", concurrency=2, progress=False)
        start = time.perf_counter()
        results = await agent.map(df, "Double {n}", engine="ray", concurrency=2, progress=False)
        elapsed = time.perf_counter() - start
        assert (results["status"] == "completed").all(), results["status"].value_counts()
    finally:
        done.set()
        sampler.join()
        stop()
    return rows / elapsed, max(peaks.values(), default=0), len(peaks)


async def sizes(rows: list[int]) -> tuple[float, float]:
    """Rows per second of the floor, the hand loop and map at each size, and map's per-row cost
    at the largest size over the smallest (1.0: flat; a cost that grows with rows shows here).
    Returns the floor's and map's rows/s at the largest size."""
    print(f"rows/s at each size (2 model calls + 1 tool call a row, {CONCURRENCY} at a time)")
    print(f"{'rows':>8} {'floor':>9} {'hand loop':>10} {'agent.map':>10} {'map/floor':>10} {'map/hand':>9}")
    rates = {}
    for n in rows:
        base = await floor(n)
        hand = await hand_loop(n, f"run{n}")
        batch = await mapped(n, f"run{n}")
        rates[n] = (base, batch)
        print(f"{n:>8,} {base:9.1f} {hand:10.1f} {batch:10.1f} {batch / base:10.3f} {batch / hand:9.3f}")
    small, large = min(rows), max(rows)
    if large > small:
        print(f"map seconds a row at {large:,} / at {small:,} rows  {rates[small][1] / rates[large][1]:8.3f}")
    return rates[large]


async def main(rows: list[int], memory_rows: int, with_ray: bool) -> None:
    await mapped(8, "warm")  # first-call set-up (imports, the store) out of the timings
    base, batch = await sizes(rows)
    one = await heap_peak(memory_rows, 1, "mem1")
    many = await heap_peak(memory_rows, 16, "mem16")
    print(f"heap peak, concurrency 1       {one / 1e6:10.2f} MB")
    print(f"heap peak, concurrency 16      {many / 1e6:10.2f} MB")
    print(f"memory per in-flight row       {(many - one) / 15 / 1e3:10.1f} KB")
    if not with_ray:
        print("engine='ray'                   skipped (--quick or --no-ray: a local cluster takes 20-40 s to start)")
        return
    remote, actor_rss, actors = await on_ray(max(rows))
    print(f"agent.map engine='ray', rows/s {remote:10.1f} (local cluster, 2 CPUs, 2 actors)")
    print(f"ratio ray / floor              {remote / base:10.3f}")
    print(f"ratio ray / local map          {remote / batch:10.3f}")
    print(f"ray actor peak USS             {actor_rss / 1e6:10.1f} MB per in-flight row (an actor runs one row at a "
          f"time; {actors} actor processes)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100, 1000], help="the sizes to run (rows)")
    parser.add_argument("--quick", action="store_true", help="small sizes, no Ray (CI)")
    parser.add_argument("--no-ray", action="store_true", help="leave out engine='ray'")
    args = parser.parse_args()
    rows = [16, 48] if args.quick else args.rows
    with tempfile.TemporaryDirectory() as folder:
        os.environ["THINK_NB_DB"] = str(Path(folder) / "bench.sqlite")
        asyncio.run(main(rows, 32 if args.quick else 160, not (args.quick or args.no_ray)))
