"""Benchmark: the workspace tools and the `execute` sandbox.

1. `grep` (Think's tool, through `Tool.invoke`) over N workspace files in the notebook's SQLite
   (default 10,000 files of ~20 lines each; one match per 100 files), and `find` over the same.
2. One `execute` call whose code makes M inner tool calls (default 100 `add` calls): the whole
   round trip (worker start, prelude, M host round trips, result) and the cost per inner call.
3. The same code in a turn (a scripted model calls `execute`, then answers) whose agent overrides
   `before_tool_call` and `after_tool_call`: every inner call goes through the turn's hook site,
   so the difference to 2. is the hooks' cost per inner call (plus one model step and the turn).
   A first turn is run before and not counted: it imports litellm.

    python bench/bench_workspace.py [--files 10000] [--calls 100] [--runs 3] [--quick]
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

from think_nb import Think, tool
from think_nb.workspace.execute import execute_tool
from think_nb.workspace.tools import workspace_tools


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def fill(agent: Think, files: int) -> float:
    fs = agent.workspace
    body = "".join(f"line {i}: some ordinary text about item {i}\n" for i in range(20))
    start = time.perf_counter()
    for n in range(files):
        extra = "needle found here\n" if n % 100 == 0 else ""
        fs.pipe_file(f"/dir{n % 50}/file{n}.txt", (body + extra).encode())
    return time.perf_counter() - start


async def grep_runs(agent: Think, runs: int, files: int) -> tuple[list[float], list[float]]:
    tools = workspace_tools(agent.workspace)
    greps, finds = [], []
    for _ in range(runs):
        start = time.perf_counter()
        out = await tools["grep"].invoke({"query": "needle"})
        greps.append(time.perf_counter() - start)
        assert out["filesSearched"] == files and out["totalMatches"] == (files + 99) // 100, out
        start = time.perf_counter()
        found = await tools["find"].invoke({"pattern": "**/file1*.txt"})
        finds.append(time.perf_counter() - start)
        assert found["count"] > 0
    return greps, finds


async def execute_runs(calls: int, runs: int) -> list[float]:
    run = execute_tool(tools=[add], max_calls=calls + 10)
    code = f"total = 0\nfor i in range({calls}):\n    total = tools.add(a=total, b=i)\ntotal"
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = await run.invoke({"code": code})
        times.append(time.perf_counter() - start)
        assert out["result"] == sum(range(calls)) and out["calls"] == calls, out
    return times


async def turn_runs(calls: int, runs: int, db: Path) -> list[float]:
    from think_nb.testing import ScriptedModel

    code = f"total = 0\nfor i in range({calls}):\n    total = tools.add(a=total, b=i)\ntotal"
    seen: list[str] = []

    class Hooked(Think):
        def get_model(self) -> object:
            return script.model

        def get_tools(self) -> list:
            return [add, execute_tool(self, max_calls=calls + 10)]

        def before_tool_call(self, ctx: object) -> None:
            seen.append("before")

        def after_tool_call(self, ctx: object) -> None:
            seen.append("after")

    times = []
    for n in range(runs + 1):  # the first turn (imports litellm, ~5-40 s on a loaded machine) is a warm-up
        script = ScriptedModel([[ScriptedModel.tool_call("execute", {"code": code})], [ScriptedModel.text("ok")]])
        agent = Hooked(f"turn{n}", db=db)
        seen.clear()
        start = time.perf_counter()
        result = await agent.send("go")
        times.append(time.perf_counter() - start)
        part = next(p for p in agent.messages[1]["parts"] if p["type"] == "tool-execute")
        assert result.status == "completed" and part["output"]["result"] == sum(range(calls)), part
        assert seen.count("before") == calls + 1, len(seen)  # every inner call, and execute itself
    return times[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI (500 files, 100 calls, 1 run)")
    args = parser.parse_args()
    if args.quick:
        args.files, args.runs = 500, 1
    with tempfile.TemporaryDirectory() as tmp:
        agent = Think("bench", db=Path(tmp) / "bench.sqlite")
        filled = fill(agent, args.files)
        greps, finds = asyncio.run(grep_runs(agent, args.runs, args.files))
        executes = asyncio.run(execute_runs(args.calls, args.runs))
        turns = asyncio.run(turn_runs(args.calls, args.runs, Path(tmp) / "turns.sqlite"))
    grep_s, exec_s = statistics.median(greps), statistics.median(executes)
    print(f"workspace files          {args.files:,}")
    print(f"write all files          {filled:.2f} s ({filled / args.files * 1e3:.3f} ms/file)")
    print(f"grep over {args.files:,} files   {grep_s * 1e3:.0f} ms median of {args.runs}")
    print(f"find over {args.files:,} files   {statistics.median(finds) * 1e3:.0f} ms median of {args.runs}")
    print(f"execute, {args.calls} inner calls  {exec_s * 1e3:.0f} ms round trip "
          f"({exec_s / args.calls * 1e3:.2f} ms per inner call), median of {args.runs}")
    turn_s = statistics.median(turns)
    print(f"same in a hooked turn    {turn_s * 1e3:.0f} ms turn ({(turn_s - exec_s) / args.calls * 1e3:.2f} ms more "
          f"per inner call: hooks + the turn), median of {args.runs}")


if __name__ == "__main__":
    main()
