"""Extension costs (issue 15): load time, a tool call through an extension, a hook, in the real
pydantic-monty sandbox; compared with calling the same function as a plain local tool. No model.

    python bench/bench_extensions.py            # 20 loads, 500 calls, 200 hooks
    python bench/bench_extensions.py --quick    # 3 loads, 20 calls, 10 hooks (CI: it must run)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from think_nb.binding import runtime_of

SOURCE = '''
def add(a, b):
    return {"result": a + b}

async def read(path):
    return await read_file(path)

def before_turn(ctx):
    return {"temperature": 0.1}

tools = {"add": {"description": "Add", "parameters": {"a": {"type": "number"}, "b": {"type": "number"}},
                 "function": add},
         "read": {"description": "Read", "parameters": {"path": {"type": "string"}}, "function": read}}
hooks = {"before_turn": before_turn}
'''


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples):.2f} ms (min {min(samples):.2f}, max {max(samples):.2f})"


async def main(loads: int, calls: int, hooks: int) -> None:
    from think_nb import Think, tool
    from think_nb.turns.hooks import TurnContext

    class Bench(Think):
        include_workspace_tools = False

    @tool
    def add(a: float, b: float) -> dict:
        """Add."""
        return {"result": a + b}

    with tempfile.TemporaryDirectory() as folder:
        agent = Bench("ext-bench", db=Path(folder) / "bench.sqlite")
        agent.workspace.pipe_file("/a.txt", b"hello")
        manifest = {"name": "b0", "version": "1", "permissions": {"workspace": "read"}}
        start = time.perf_counter()
        await agent.load_extension(manifest, SOURCE)
        first = (time.perf_counter() - start) * 1000
        load = []
        for n in range(1, loads + 1):
            start = time.perf_counter()
            info = await agent.load_extension({**manifest, "name": f"b{n}"}, SOURCE)
            load.append((time.perf_counter() - start) * 1000)
            assert info["state"] == "loaded", info
        tools = await runtime_of(agent).extension_tools()
        ext_add, ext_read = tools["b0_add"], tools["b0_read"]
        ext, local, host = [], [], []
        for n in range(calls):
            t0 = time.perf_counter()
            await ext_add.invoke({"a": n, "b": 1})
            t1 = time.perf_counter()
            await add.invoke({"a": n, "b": 1})
            t2 = time.perf_counter()
            await ext_read.invoke({"path": "/a.txt"})
            t3 = time.perf_counter()
            ext.append((t1 - t0) * 1000)
            local.append((t2 - t1) * 1000)
            host.append((t3 - t2) * 1000)
        for n in range(1, loads + 1):
            await agent.unload_extension(f"b{n}")
        ctx = TurnContext(system="s", messages=[], tools={}, model="m")
        hook = []
        for _ in range(hooks):
            start = time.perf_counter()
            await runtime_of(agent).extension_hook("before_turn", ctx, None)
            hook.append((time.perf_counter() - start) * 1000)
        await agent.shutdown()
    print(f"first load (starts the Monty pool)   {first:.2f} ms")
    print(f"load, warm pool ({loads} loads)          {median_ms(load)}")
    print(f"extension tool call ({calls} calls)      {median_ms(ext)}")
    print(f"same function as a local tool        {median_ms(local)}")
    print(f"extension call with read_file        {median_ms(host)}")
    print(f"before_turn hook ({hooks} calls)         {median_ms(hook)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 loads, 20 calls, 10 hooks")
    args = parser.parse_args()
    asyncio.run(main(3, 20, 10) if args.quick else main(20, 500, 200))
