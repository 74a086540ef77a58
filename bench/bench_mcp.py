"""MCP call overhead (issue 15): N calls of a local stdio MCP server's `add` tool, written with the
SDK (tests/mcp_server.py), made (1) directly with the SDK's `mcp.Client` and (2) through think_nb's
MCP tool (the `Tool` a turn runs: our connection, the call bound, result conversion). Runs
alternate; medians and the ratio are printed. No model is involved.

    python bench/bench_mcp.py            # 1,000 calls, 5 alternated runs
    python bench/bench_mcp.py --quick    # 50 calls, 1 run (CI: it must run, figures are printed)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from think_nb.binding import runtime_of

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_server.py"


async def raw_sdk(calls: int) -> float:
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"]),
                      mode="legacy") as client:
        start = time.perf_counter()
        for n in range(calls):
            await client.call_tool("add", {"a": n, "b": 1})
        return (time.perf_counter() - start) / calls * 1000


async def through_think_nb(calls: int, folder: Path) -> float:
    from think_nb import Think

    class Bench(Think):
        pass

    agent = Bench("mcp-bench", db=folder / "bench.sqlite")
    await agent.add_mcp_server("demo", f"{sys.executable} {SERVER} stdio")
    tool = runtime_of(agent).mcp_tools()["demo_add"]
    start = time.perf_counter()
    for n in range(calls):
        await tool.invoke({"a": n, "b": 1})
    elapsed = (time.perf_counter() - start) / calls * 1000
    await agent.remove_mcp_server("demo")
    await agent.shutdown()
    return elapsed


async def main(calls: int, runs: int) -> None:
    raw, ours = [], []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(runs):
            raw.append(await raw_sdk(calls))
            ours.append(await through_think_nb(calls, Path(folder)))
    r, o = statistics.median(raw), statistics.median(ours)
    print(f"calls per run        {calls}")
    print(f"runs (alternated)    {runs}")
    print(f"mcp SDK direct       {r:.3f} ms/call (spread {min(raw):.3f}-{max(raw):.3f})")
    print(f"think_nb MCP tool    {o:.3f} ms/call (spread {min(ours):.3f}-{max(ours):.3f})")
    print(f"ratio think_nb/SDK   {o / r:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 calls, 1 run")
    args = parser.parse_args()
    asyncio.run(main(50 if args.quick else 1000, 1 if args.quick else 5))
