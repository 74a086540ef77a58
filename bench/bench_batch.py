"""Benchmark: batch runs (`agent.map`, issue 33) against their floor.

Every row is "Double N": the model calls a `double` tool, then answers (two model calls and one
tool call per row), on the same `FunctionModel`. Three ways to run N rows, 8 at a time:

1. floor: the model alone, driven by a bare `asyncio.gather` loop (a semaphore of 8): the
   function model's two calls and the tool per row, no turn, no storage;
2. hand loop: what a user writes today, 8 agents each `send`ing its share of the rows (full
   turns, stored), gathered;
3. `agent.map(df, concurrency=8)`: full turns, each row a stored session, through the ledger.

Prints rows per second of each at two sizes (default 100 and 1,000 rows) and the ratios, map's
seconds a row at the larger size over the smaller (flat per-row cost: about 1), and the memory
per in-flight row: the Python heap peak (tracemalloc) of a map at concurrency 16 minus at
concurrency 1, over 15.

    python bench/bench_batch.py [--rows 100 1000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd

from think_nb import Think, tool
from think_nb.testing import FunctionModel
from think_nb.testing import ScriptedModel as S

CONCURRENCY = 8


@tool
def double(x: int) -> int:
    """Double x."""
    return 2 * x


def reply(messages: list[dict], info: object) -> object:
    last = messages[-1]
    if last["role"] == "tool":
        return [f"double is {last['content']}", S.usage(10, 3)]
    text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
    return [S.tool_call("double", {"x": int(text.split()[-1])}), S.usage(10, 2)]


MODEL = FunctionModel(reply)


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


async def sizes(rows: list[int]) -> None:
    """Rows per second of the floor, the hand loop and map at each size, and map's per-row cost
    at the largest size over the smallest (1.0: flat; a cost that grows with rows shows here)."""
    print(f"rows/s at each size (2 model calls + 1 tool call a row, {CONCURRENCY} at a time)")
    print(f"{'rows':>8} {'floor':>9} {'hand loop':>10} {'agent.map':>10} {'map/floor':>10} {'map/hand':>9}")
    rates = {}
    for n in rows:
        base = await floor(n)
        hand = await hand_loop(n, f"run{n}")
        batch = await mapped(n, f"run{n}")
        rates[n] = batch
        print(f"{n:>8,} {base:9.1f} {hand:10.1f} {batch:10.1f} {batch / base:10.3f} {hand and batch / hand:9.3f}")
    small, large = min(rows), max(rows)
    if large > small:
        print(f"map seconds a row at {large:,} / at {small:,} rows  {rates[small] / rates[large]:8.3f}")


async def main(rows: list[int], memory_rows: int) -> None:
    await mapped(8, "warm")  # first-call set-up (imports, the store) out of the timings
    await sizes(rows)
    one = await heap_peak(memory_rows, 1, "mem1")
    many = await heap_peak(memory_rows, 16, "mem16")
    print(f"heap peak, concurrency 1       {one / 1e6:10.2f} MB")
    print(f"heap peak, concurrency 16      {many / 1e6:10.2f} MB")
    print(f"memory per in-flight row       {(many - one) / 15 / 1e3:10.1f} KB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100, 1000], help="the sizes to run (rows)")
    parser.add_argument("--quick", action="store_true", help="small sizes (CI)")
    args = parser.parse_args()
    sizes_run = [16, 48] if args.quick else args.rows
    with tempfile.TemporaryDirectory() as folder:
        os.environ["THINK_NB_DB"] = str(Path(folder) / "bench.sqlite")
        asyncio.run(main(sizes_run, 32 if args.quick else 160))
