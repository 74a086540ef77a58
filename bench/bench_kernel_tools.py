"""Benchmark: the kernel tools (issue 26) over a large namespace and a large DataFrame.

1. `list_variables` over N user names (default 10,000: lists, ints, strings, small frames): ms per
   call and the tokens of what the model reads (bounded by `namespace.LIST_TOKENS`).
2. `describe_variable` of a 1,000,000-row DataFrame (4 columns): ms per call, tokens (bounded by
   `namespace.DESCRIBE_TOKENS`), and the part of it spent on the event loop's thread (the
   snapshot; the description runs in a worker thread).
3. `run_code` round trips: the tool alone (`x = x + 1`, capture, namespace diff, report), and a
   whole turn in which a scripted model calls it (run="allow") and answers; the first turn is a
   warm-up (it imports litellm) and is not counted.

Outside IPython the tools work on `__main__`'s namespace, which this script fills.

    python bench/bench_kernel_tools.py [--names 10000] [--rows 1000000] [--runs 5] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd

from think_nb import Think
from think_nb.data_context import snapshot
from think_nb.kernel import kernel_tools
from think_nb.kernel import namespace as kns
from think_nb.session.tokens import count_tokens
from think_nb.testing import ScriptedModel as S

NS = sys.modules["__main__"].__dict__


def fill(names: int, rows: int) -> None:
    small = pd.DataFrame({"a": [1, 2, 3]})
    for i in range(names):
        kind = i % 4
        NS[f"var_{i:05d}"] = [i] * (i % 20) if kind == 0 else i if kind == 1 else f"text {i}" if kind == 2 else small
    rng = np.random.default_rng(0)
    NS["big"] = pd.DataFrame({"id": np.arange(rows), "x": rng.random(rows), "y": rng.integers(0, 100, rows),
                              "label": rng.choice(["a", "b", "c"], rows)})
    NS["x"] = 0


async def timed(runs: int, call: object, *args: object) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = await call(*args)  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1e3)
    return times, out


async def main_async(args: argparse.Namespace, db: Path) -> None:
    tools = kernel_tools("allow")
    await tools["list_variables"].invoke({"pattern": "var_0000*"})  # warm-up: the tokenizer loads once (~1 s)
    listed_ms, listed = await timed(args.runs, tools["list_variables"].invoke, {})
    described_ms, described = await timed(args.runs, tools["describe_variable"].invoke, {"name": "big"})
    snaps = []
    for _ in range(args.runs):
        start = time.perf_counter()
        snapshot(NS["big"])
        snaps.append((time.perf_counter() - start) * 1e3)
    runs_ms, ran = await timed(args.runs, tools["run_code"].invoke, {"code": "x = x + 1\nx"})
    assert listed["total"] >= args.names and listed["truncated"], listed["total"]  # type: ignore[index]
    assert ran["result"] == str(args.runs), ran  # type: ignore[index]

    turns = []
    for n in range(args.runs + 1):
        script = S([[S.tool_call("run_code", {"code": "x = x + 1"})], [S.text("ok")]])

        class Runner(Think):
            include_workspace_tools = False
            include_kernel_tools = "allow"

            def get_model(self) -> object:
                return script.model  # noqa: B023 - each turn's own script

        agent = Runner(f"turn{n}", db=db)
        start = time.perf_counter()
        result = await agent.send("go")
        turns.append((time.perf_counter() - start) * 1e3)
        assert result.status == "completed", result
    med = statistics.median
    print(f"namespace                      {len(NS):,} names ({args.names:,} filled), a {args.rows:,}-row frame")
    print(f"list_variables over {args.names:,} names  {med(listed_ms):.1f} ms median of {args.runs} "
          f"(max {max(listed_ms):.1f}); {count_tokens(listed['text'])} tokens, "  # type: ignore[index]
          f"{listed['shown']} of {listed['total']:,} listed")  # type: ignore[index]
    print(f"describe_variable of {args.rows:,} rows  {med(described_ms):.1f} ms median of {args.runs}; "
          f"{described['tokens']} tokens (bound {kns.DESCRIBE_TOKENS}); on the loop's thread "  # type: ignore[index]
          f"{med(snaps):.1f} ms (the snapshot)")
    print(f"run_code round trip (tool)     {med(runs_ms):.2f} ms median of {args.runs}")
    print(f"run_code in a whole turn       {med(turns[1:]):.1f} ms median of {args.runs} (model call, run, answer)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI (1,000 names, 10,000 rows, 1 run)")
    args = parser.parse_args()
    if args.quick:
        args.names, args.rows, args.runs = 1_000, 10_000, 1
    fill(args.names, args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main_async(args, Path(tmp) / "bench.sqlite"))


if __name__ == "__main__":
    main()
