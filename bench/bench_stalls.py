"""The longest event-loop stall of each scenario (issue 29 §6): how long one callback held the loop
while the scenario ran (its set-up is not measured), in CPU ms (its own work, the same on a loaded
machine) and wall ms, and where.

    python bench/bench_stalls.py [--quick]

`think_nb.stalls.StallMonitor` samples the loop thread's stack every 5 ms while each scenario
runs in one fresh agent (a scripted model, a temporary SQLite file). The budget is 50 ms per
callback (DESIGN: "no step of ours stalls the loop over 50 ms"); the test suite fails a test at
250 ms (tests/loop_stalls.py). Scenarios:

- first turn: a new agent's creation and first tool turn (imports, schemas, the file's first writes);
- big tool output: a tool returning a list of N integers (serialised for the model and stored);
- long reply: one turn of N streamed deltas;
- search: full-text search over a session of N messages (agent.search);
- compaction: `compact()` of N messages with a scripted summariser (through the model seam);
- grep: the workspace `grep` tool over a file of N lines;
- MCP server: `add_mcp_server` of tests/mcp_server.py over stdio (the SDK's first import), one call;
- browser: a turn whose N `browser_markdown` calls and one `browser_screenshot` start the kernel's
  browser (Playwright's import and Chromium's launch, on the browser thread) and read N pages.

"CPU ms" is the callback's own work; "import" the CPU it spent importing modules, which a first use
in a fresh process pays (the test suite's guard leaves imports to this benchmark).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("THINK_NB_ALLOW_MODEL_REQUESTS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from think_nb import Think, tool
from think_nb.stalls import StallMonitor
from think_nb.testing import ScriptedModel as S

BUDGET_MS = 50


def agent_of(script: S, db: Path, **attrs: object) -> Think:
    cls = type("Bench", (Think,), {"get_model": lambda self: script.model, **attrs})
    return cls("bench", db=db)


# Each scenario sets up (not measured) and returns the coroutine function that is measured.
Run = Callable[[], Awaitable[object]]


async def first_turn(db: Path, n: int) -> Run:
    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("42")]])
    return lambda: agent_of(script, db, get_tools=lambda self: [add]).send("add")


async def big_tool_output(db: Path, n: int) -> Run:
    @tool
    def numbers() -> list:
        """Many numbers."""
        return list(range(n))

    script = S([[S.tool_call("numbers", {})], [S.text("done")]])
    agent = agent_of(script, db, get_tools=lambda self: [numbers])
    return lambda: agent.send("go")


async def long_reply(db: Path, n: int) -> Run:
    agent = agent_of(S([[S.deltas(["word "] * n)]]), db)
    return lambda: agent.send("talk")


def history(n: int) -> list[dict]:
    words = ["alpha", "beta", "gamma", "delta", "kernel", "notebook", "panel", "tool"]
    return [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant",
             "parts": [{"type": "text", "text": f"{words[i % 8]} {words[(i * 3) % 8]} message {i}"}]}
            for i in range(n)]


async def search(db: Path, n: int) -> Run:
    agent = agent_of(S([]), db)
    agent.import_messages(history(n))
    agent.search("warm")  # pandas and the views are imported once, as in any notebook

    async def run() -> None:
        for query in ("kernel", "notebook panel", "message 7"):
            agent.search(query)
            await asyncio.sleep(0)
    return run


async def compaction(db: Path, n: int) -> Run:
    agent = agent_of(S([[S.text("A summary of the conversation so far.")]]), db)
    agent.import_messages(history(n))
    return agent.compact


SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_server.py"


async def mcp_server(db: Path, n: int) -> Run:
    server = SERVER
    script = S([[S.tool_call("demo_add", {"a": 2, "b": 40})], [S.text("42")]])
    agent = agent_of(script, db, include_workspace_tools=False)

    async def run() -> None:
        await agent.add_mcp_server("demo", f"{sys.executable} {server} stdio")
        await agent.send("add")
        await agent.shutdown()
    return run


async def grep(db: Path, n: int) -> Run:
    script = S([[S.tool_call("grep", {"query": "needle [0-9]+"})], [S.text("found")]])
    agent = agent_of(script, db, include_workspace_tools=True)
    agent.workspace.pipe_file("/big.txt", "".join(f"hay line {i}\n" if i % 100 else f"needle {i}\n"
                                                  for i in range(n)).encode())
    return lambda: agent.send("find the needles")


async def browser(db: Path, n: int) -> Run:
    from think_nb.browser import browser_tools

    page = "<h1>Page</h1>" + "<p>some text to read</p>" * 200
    calls = [S.tool_call("browser_markdown", {"html": page}) for _ in range(n)]
    script = S([[*calls, S.tool_call("browser_screenshot", {"html": page})], [S.text("read")]])
    agent = agent_of(script, db, include_workspace_tools=False, get_tools=lambda self: browser_tools())

    async def run() -> None:
        await agent.send("read")
        await agent.shutdown()
    return run


SCENARIOS: list[tuple[str, Callable[[Path, int], Awaitable[Run]], int, int]] = [
    # (name, scenario, full size, quick size)
    ("first turn", first_turn, 1, 1),
    ("big tool output (N ints)", big_tool_output, 1_000_000, 10_000),
    ("long reply (N deltas)", long_reply, 10_000, 500),
    ("search (N messages)", search, 10_000, 500),
    ("compaction (N messages)", compaction, 2_000, 100),
    ("grep (N lines)", grep, 200_000, 2_000),
    ("MCP server: add, one call", mcp_server, 1, 1),
    ("browser: launch, N pages, shot", browser, 10, 2),
]


async def measure(scenario: Callable[[Path, int], Awaitable[Run]], n: int) -> tuple[float, float, float, str, float]:
    monitor = StallMonitor(threshold=0.0, interval=0.005, roots=(str(Path(__file__).parent),))
    with tempfile.TemporaryDirectory() as folder:
        run = await scenario(Path(folder) / "bench.sqlite", n)
        await asyncio.sleep(0.02)
        started = time.perf_counter()
        await asyncio.to_thread(monitor.reset_longest)  # waits for samples off the loop
        await run()
        await asyncio.sleep(0.02)  # the last callback ends and is sampled
        wall = time.perf_counter() - started
        longest = await asyncio.to_thread(monitor.reset_longest)
    monitor.stop()
    if longest is None:
        return 0.0, 0.0, 0.0, "-", wall
    where = (longest.where or ["?"])[0].split("/")[-1]
    return longest.cpu_s * 1000, longest.import_s * 1000, longest.wall_s * 1000, where, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the benchmark runs (CI)")
    args = parser.parse_args()
    print(f"longest loop stall per scenario (budget {BUDGET_MS} ms per callback, own CPU and imports together)")
    print(f"{'scenario':28} {'N':>10} {'CPU ms':>8} {'import':>8} {'wall ms':>8} {'total s':>8}  over  where")
    for name, run, full, quick in SCENARIOS:
        n = quick if args.quick else full
        cpu, imports, wall, where, total = asyncio.run(measure(run, n))
        flag = "OVER" if cpu + imports > BUDGET_MS else "ok"
        if where == "-":  # no callback was under way at two samples: every one was shorter than 5 ms
            print(f"{name:28} {n:>10,} {'< 5':>8} {'-':>8} {'< 5':>8} {total:>8.2f}  {flag:4}  -")
        else:
            print(f"{name:28} {n:>10,} {cpu:>8.1f} {imports:>8.1f} {wall:>8.1f} {total:>8.2f}  {flag:4}  {where}")


if __name__ == "__main__":
    main()
