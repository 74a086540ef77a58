"""The scoreboard: think_nb against pydantic-ai on the same work, side by side (issue 18).

Four measures, each in fresh processes, frameworks alternated run by run, medians and spreads:

1. `deltas`: one turn of N small text deltas (after one warm-up turn in the same process).
2. `tools`: K short tool turns in a row after a warm-up turn (the model calls `add`, then answers),
   history kept as each
   framework keeps it (think_nb: its SQLite transcript; pydantic-ai: `message_history`); per-turn
   mean, and turns 1-10 vs the last 10 (does a turn get slower as history grows?).
3. `first`: from process start to the first token of the first turn (imports included).
4. `rss`: resident memory after one turn (MiB).

Same work on both sides: think_nb runs a `ScriptedModel` (the code users run, model replaced at
the litellm provider seam); pydantic-ai a `FunctionModel` streaming the same strings / calling
the same tool. pydantic-ai comes from the `bench` extra (`pip install -e .[bench]`).

    python bench/bench_peers.py           # N=10,000 deltas, K=100 turns, 5 alternated runs
    python bench/bench_peers.py --quick   # N=500, K=10, 1 run (CI: it must run and print)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from think_nb.binding import runtime_of

START = time.time()
FRAMEWORKS = ("think_nb", "pydantic_ai")


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- think_nb --------------------------------------------------------------------------------------
def think_agent(steps: list, folder: str, tools: bool = False):  # type: ignore[no-untyped-def]
    from think_nb import Think, tool
    from think_nb.testing import ScriptedModel as S

    script = S(steps, record=False)  # a provider keeps nothing of what it was sent

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    class Bench(Think):
        def get_model(self):  # type: ignore[no-untyped-def]
            return script.model

        def get_tools(self):  # type: ignore[no-untyped-def]
            return [add] if tools else []

    return Bench("bench", db=os.path.join(folder, "bench.sqlite"))


async def think_worker(measure: str, size: int, folder: str) -> dict:
    from think_nb.testing import ScriptedModel as S

    if measure == "deltas":
        agent = think_agent([[S.deltas(["w"] * 10)], [S.deltas([f"{n % 10}" for n in range(size)])]], folder)
        await agent.send("warm up")
        start = time.perf_counter()
        result = await agent.send("go")
        assert result.status == "completed"
        return {"ms": (time.perf_counter() - start) * 1000}
    if measure == "tools":
        steps = [s for n in range(size + 1) for s in ([S.tool_call("add", {"a": n, "b": 1})], [S.text(f"= {n + 1}")])]
        agent = think_agent(steps, folder, tools=True)
        await agent.send("warm up")  # first call set-up (litellm's lazy imports) is not a turn's cost
        agent.clear_messages()
        times = []
        for n in range(size):
            start = time.perf_counter()
            result = await agent.send(f"{n} + 1?")
            times.append((time.perf_counter() - start) * 1000)
            assert result.status == "completed"
        return {"per_turn": times}
    first: list[float] = []

    class Mark:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            if chunk.get("type") == "text-delta" and not first:
                first.append(time.time())

    agent = think_agent([[S.text("hello there")]], folder)
    runtime_of(agent).subscribe(Mark())
    await agent.send("hi")
    return {"first_token_s": first[0] - START, "rss_mib": rss_mib()}


# -- pydantic-ai -----------------------------------------------------------------------------------
async def pydantic_worker(measure: str, size: int) -> dict:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    if measure == "deltas":
        sizes = iter([10, size])

        async def stream(messages, info):  # type: ignore[no-untyped-def]
            for n in range(next(sizes)):
                yield f"{n % 10}"

        agent = Agent(FunctionModel(stream_function=stream))
        async with agent.run_stream("warm up") as run:
            async for _ in run.stream_text(delta=True):
                pass
        start = time.perf_counter()
        async with agent.run_stream("go") as run:
            async for _ in run.stream_text(delta=True):
                pass
        return {"ms": (time.perf_counter() - start) * 1000}
    if measure == "tools":
        async def answer(messages, info):  # type: ignore[no-untyped-def]
            last = messages[-1].parts[-1]
            if isinstance(last, ToolReturnPart):
                yield f"= {last.content}"
            else:
                yield {0: DeltaToolCall(name="add", json_args=json.dumps({"a": len(messages), "b": 1}))}

        agent = Agent(FunctionModel(stream_function=answer))

        @agent.tool_plain
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        async with agent.run_stream("warm up") as run:
            async for _ in run.stream_text(delta=True):
                pass
        history: list = []
        times = []
        for n in range(size):
            start = time.perf_counter()
            async with agent.run_stream(f"{n} + 1?", message_history=history) as run:
                async for _ in run.stream_text(delta=True):
                    pass
            history = run.all_messages()
            times.append((time.perf_counter() - start) * 1000)
        return {"per_turn": times}
    first: list[float] = []

    async def hello(messages, info):  # type: ignore[no-untyped-def]
        yield "hello there"

    agent = Agent(FunctionModel(stream_function=hello))
    async with agent.run_stream("hi") as run:
        async for _ in run.stream_text(delta=True):
            if not first:
                first.append(time.time())
    return {"first_token_s": first[0] - START, "rss_mib": rss_mib()}


# -- the scoreboard ----------------------------------------------------------------------------------
def run_worker(framework: str, measure: str, size: int) -> dict:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, __file__, "--worker", framework, measure, str(size)], capture_output=True,
                         text=True, env=env, timeout=900, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{framework} {measure} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.1f} ({min(values):,.1f}-{max(values):,.1f})"


def main(deltas: int, turns: int, runs: int) -> None:
    rows: dict[str, dict[str, list[float]]] = {f: {} for f in FRAMEWORKS}
    for run in range(runs):
        order = FRAMEWORKS if run % 2 == 0 else FRAMEWORKS[::-1]
        for framework in order:
            figures = rows[framework]
            figures.setdefault("deltas_ms", []).append(run_worker(framework, "deltas", deltas)["ms"])
            per_turn = run_worker(framework, "tools", turns)["per_turn"]
            head, tail = per_turn[: max(1, turns // 10)], per_turn[-max(1, turns // 10):]
            figures.setdefault("turn_ms", []).append(statistics.mean(per_turn))
            figures.setdefault("growth", []).append(statistics.mean(tail) / statistics.mean(head))
            first = run_worker(framework, "first", 0)
            figures.setdefault("first_s", []).append(first["first_token_s"])
            figures.setdefault("rss_mib", []).append(first["rss_mib"])
    load = os.getloadavg()
    print(f"runs (alternated, fresh processes)  {runs}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{os.cpu_count()} cores")
    print(f"{'measure (median, spread)':44} {'think_nb':>24} {'pydantic-ai':>24} {'ratio':>7}")
    labels = {"deltas_ms": f"one turn of {deltas:,} deltas, ms", "turn_ms": f"{turns} tool turns, ms per turn",
              "growth": "last 10% of turns / first 10%", "first_s": "first token in a fresh process, s",
              "rss_mib": "RSS after one turn, MiB"}
    for key, label in labels.items():
        ours, theirs = rows["think_nb"][key], rows["pydantic_ai"][key]
        ratio = statistics.median(ours) / statistics.median(theirs)
        print(f"{label:44} {spread(ours):>24} {spread(theirs):>24} {ratio:>6.2f}x")
    print(f"deltas per second: think_nb {deltas / statistics.median(rows['think_nb']['deltas_ms']) * 1000:,.0f}, "
          f"pydantic-ai {deltas / statistics.median(rows['pydantic_ai']['deltas_ms']) * 1000:,.0f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        import asyncio

        framework, measure, size = sys.argv[2], sys.argv[3], int(sys.argv[4])
        with tempfile.TemporaryDirectory() as folder:
            result = asyncio.run(think_worker(measure, size, folder) if framework == "think_nb"
                                 else pydantic_worker(measure, size))
        print(json.dumps(result))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 deltas, 10 turns, 1 run")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    main(500 if args.quick else 10_000, 10 if args.quick else 100, 1 if args.quick else args.runs)
