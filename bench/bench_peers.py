"""The scoreboard: think_nb against pydantic-ai and agno on the same work, side by side (issues 18, 29).

Four measures, each in fresh processes, frameworks alternated run by run, medians and spreads:

1. `deltas`: one turn of N small text deltas (after one warm-up turn in the same process), every
   side with the same consumer: a listener that keeps each text delta as it arrives (think_nb: a
   subscribed listener's `on_chunk`; pydantic-ai: `stream_text(delta=True, debounce_by=None)`, no
   debouncing; agno: `arun(stream=True)`'s `RunContent` events). think_nb's panel path is its own
   row (`think_nb+panel`: a `ChatPanel` on an in-process comm, as `bench_stream.py`, besides the
   listener).
2. `tools`: K short tool turns in a row after a warm-up turn (the model calls `add`, then answers),
   history kept as each
   framework keeps it (think_nb: its SQLite transcript; pydantic-ai: `message_history`); per-turn
   mean, and turns 1-10 vs the last 10 (does a turn get slower as history grows?).
3. `first`: from process start to the first token of the first turn (imports included): a text turn,
   no tool of the user's on any side (think_nb offers its workspace tools, as it does by default);
   only think_nb's process imports think_nb. `bench_first_turn.py` counts its instructions.
4. `rss`: resident memory after one turn (MiB).
5. instructions per delta (valgrind's cachegrind, deterministic where wall time is not on a shared
   machine): (I(N2) - I(N1)) / (N2 - N1) of two whole `deltas` workers, N1 = 2,000 and N2 = 12,000
   deltas (`--quick`: 200 and 1,200, think_nb's rows only). Goal (issue 29 §5): think_nb with its
   panel <= 20 k, and its wall time <= agno's. Measured (2 cores, load 5-7): think_nb 17.4-17.9 k,
   with its panel 19.1-19.8 k, agno 121.0 k instructions per delta (before: 37.4 k and 41.6 k);
   the 10,000-delta turn 33.9 ms, with its panel 33.8 ms, agno 246.7 ms (medians of 7 alternated
   runs at load 5; before: think_nb+panel 1.55x agno).

The panel row's warm-up waits for what the panel does once per process after its first turn
(its status counts tokens: the tokenizer loads on a thread, ~0.15 s of CPU); every side's timed
turn starts after a `gc.collect()`.

Same work on every side: think_nb runs a `ScriptedModel` (the code users run, model replaced at
the litellm provider seam); pydantic-ai a `FunctionModel` streaming the same strings / calling
the same tool; agno an `Agent` whose `Model` subclass yields the same strings (its `tools` and
`first` rows run agno's own tool loop and run path). pydantic-ai and agno come from the `bench`
extra (`pip install -e .[bench]`). Every process runs with bytecode: think_nb's sources are
compiled first (`compileall`), as `uv pip install --compile-bytecode` does for the dependencies.

    python bench/bench_peers.py           # N=10,000 deltas, K=100 turns, 5 alternated runs
    python bench/bench_peers.py --quick   # N=500, K=10, 1 run (CI: it must run and print)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

START = time.time()
FRAMEWORKS = ("think_nb", "pydantic_ai", "agno")
PANEL = "think_nb+panel"
"""think_nb with its panel attached: a row of the `deltas` measure only."""


class Keep:
    """The consumer every side gets: keeps each text delta as it arrives."""

    def __init__(self) -> None:
        self.deltas: list[str] = []

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:  # think_nb's listener
        if chunk.get("type") == "text-delta":
            self.deltas.append(chunk["delta"])


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

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    if tools:
        add = tool(add)

    class Bench(Think):
        def get_model(self):  # type: ignore[no-untyped-def]
            return script.model

        def get_tools(self):  # type: ignore[no-untyped-def]
            return [add] if tools else []

    return Bench("bench", db=os.path.join(folder, "bench.sqlite"))


async def think_worker(measure: str, size: int, folder: str) -> dict:
    from think_nb.binding import runtime_of  # here: a peer's process never imports think_nb
    from think_nb.testing import ScriptedModel as S

    if measure in ("deltas", "panel"):
        agent = think_agent([[S.deltas(["w"] * 10)], [S.deltas([f"{n % 10}" for n in range(size)])]], folder)
        keep = Keep()
        runtime_of(agent).subscribe(keep)
        panel = None
        if measure == "panel":
            import comm
            from comm.base_comm import BaseComm

            class Quiet(BaseComm):  # an in-process comm: frames are made, then dropped
                def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):  # type: ignore[no-untyped-def]
                    pass

            comm.create_comm = Quiet
            panel = agent.panel()
        await agent.send("warm up")
        if panel is not None:  # the panel's status after a turn counts tokens: once per process, it loads
            from think_nb.session.tokens import aready  # the tokenizer on a thread (~0.15 s of CPU); a warm-up

            await aready(None)  # cost, waited for here (else that thread runs through the timed turn)
        keep.deltas.clear()
        gc.collect()  # every side: the warm-up's garbage (a panel's fresh imports) is not collected in the timed turn
        start = time.perf_counter()
        result = await agent.send("go")
        elapsed = (time.perf_counter() - start) * 1000
        assert result.status == "completed" and len(keep.deltas) == size, (result.status, len(keep.deltas))
        if panel is not None:
            panel.close()
        return {"ms": elapsed}
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
            async for _ in run.stream_text(delta=True, debounce_by=None):
                pass
        keep = Keep()
        gc.collect()
        start = time.perf_counter()
        async with agent.run_stream("go") as run:
            async for text in run.stream_text(delta=True, debounce_by=None):
                keep.deltas.append(text)
        elapsed = (time.perf_counter() - start) * 1000
        assert len(keep.deltas) == size, len(keep.deltas)
        return {"ms": elapsed}
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


# -- agno ------------------------------------------------------------------------------------------
def agno_agent(answer, tools: bool = True):  # type: ignore[no-untyped-def]
    """An agno `Agent` whose model streams what `answer(messages)` yields: strings (text deltas) or
    `(name, arguments)` (a tool call); with `tools`, it offers `add`."""
    from agno.agent import Agent
    from agno.models.base import Model
    from agno.models.response import ModelResponse

    class Scripted(Model):
        def invoke(self, *a, **k): ...  # type: ignore[no-untyped-def]
        async def ainvoke(self, *a, **k): ...  # type: ignore[no-untyped-def]
        def invoke_stream(self, *a, **k): ...  # type: ignore[no-untyped-def]

        async def ainvoke_stream(self, messages, assistant_message, *a, **k):  # type: ignore[no-untyped-def]
            for item in answer(messages):
                yield self._parse_provider_response_delta(item)

        def _parse_provider_response(self, response, **k):  # type: ignore[no-untyped-def]
            return self._parse_provider_response_delta(response)

        def _parse_provider_response_delta(self, item):  # type: ignore[no-untyped-def]
            if isinstance(item, str):
                return ModelResponse(role="assistant", content=item)
            name, arguments = item
            return ModelResponse(role="assistant", tool_calls=[{
                "id": f"call_{len(arguments)}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}])

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return Agent(model=Scripted(id="scripted"), tools=[add] if tools else [])


async def agno_turn(agent, message: str, keep: Keep | None = None) -> None:  # type: ignore[no-untyped-def]
    async for event in agent.arun(message, stream=True):
        if keep is not None and getattr(event, "event", None) == "RunContent" and event.content:
            keep.deltas.append(event.content)


async def agno_worker(measure: str, size: int) -> dict:
    if measure == "deltas":
        sizes = iter([10, size])
        agent = agno_agent(lambda messages: (f"{n % 10}" for n in range(next(sizes))))
        await agno_turn(agent, "warm up")
        keep = Keep()
        gc.collect()
        start = time.perf_counter()
        await agno_turn(agent, "go", keep)
        elapsed = (time.perf_counter() - start) * 1000
        assert len(keep.deltas) == size, len(keep.deltas)
        return {"ms": elapsed}
    if measure == "tools":
        def answer(messages):  # type: ignore[no-untyped-def]
            last = messages[-1]
            if last.role == "tool":
                return [f"= {last.content}"]
            return [("add", {"a": len(messages), "b": 1})]

        from agno.db.in_memory import InMemoryDb

        agent = agno_agent(answer)
        agent.db, agent.add_history_to_context, agent.num_history_runs = InMemoryDb(), True, None  # all history
        calls = []
        agent.tools = [lambda a, b: calls.append(a) or a + b]
        agent.tools[0].__name__, agent.tools[0].__doc__ = "add", "Add two numbers."  # type: ignore[attr-defined]
        await agno_turn(agent, "warm up")
        times = []
        for n in range(size):
            start = time.perf_counter()
            await agno_turn(agent, f"{n} + 1?")
            times.append((time.perf_counter() - start) * 1000)
        assert len(calls) == size + 1, len(calls)  # the tool ran once per turn
        return {"per_turn": times}
    first: list[float] = []
    agent = agno_agent(lambda messages: ["hello there"], tools=False)  # a text turn, as on the other sides
    async for event in agent.arun("hi", stream=True):
        if getattr(event, "event", None) == "RunContent" and event.content and not first:
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


def instructions(framework: str, measure: str, size: int) -> int:
    """Instructions of one whole `deltas`/`panel` worker of `size` deltas under cachegrind."""
    import cachegrind  # here: a worker process of this file imports only what it measures

    return cachegrind.instructions([__file__, "--worker", framework, measure, str(size)],
                                   f"{framework} {measure} ({size})", timeout=1800)


def per_delta(quick: bool) -> dict[str, float]:
    """Instructions per delta of each row (see the module docstring)."""
    import cachegrind

    cachegrind.require_valgrind()
    small, large = (200, 1_200) if quick else (2_000, 12_000)
    rows = [("think_nb", "think_nb", "deltas"), (PANEL, "think_nb", "panel")]
    if not quick:
        rows.append(("agno", "agno", "deltas"))
    return {row: (instructions(f, m, large) - instructions(f, m, small)) / (large - small) for row, f, m in rows}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.1f} ({min(values):,.1f}-{max(values):,.1f})"


def compile_sources() -> None:
    """Every process runs with bytecode: think_nb's own sources compiled (an editable install is not)."""
    import compileall

    import think_nb

    compileall.compile_dir(os.path.dirname(think_nb.__file__), quiet=1)


def main(deltas: int, turns: int, runs: int, quick: bool = False) -> None:
    compile_sources()
    columns = (*FRAMEWORKS, PANEL)
    rows: dict[str, dict[str, list[float]]] = {f: {} for f in columns}
    for run in range(runs):
        order = columns if run % 2 == 0 else columns[::-1]
        for framework in order:
            figures = rows[framework]
            if framework == PANEL:
                figures.setdefault("deltas_ms", []).append(run_worker("think_nb", "panel", deltas)["ms"])
                continue
            figures.setdefault("deltas_ms", []).append(run_worker(framework, "deltas", deltas)["ms"])
            per_turn = run_worker(framework, "tools", turns)["per_turn"]
            head, tail = per_turn[: max(1, turns // 10)], per_turn[-max(1, turns // 10):]
            figures.setdefault("turn_ms", []).append(statistics.mean(per_turn))
            figures.setdefault("growth", []).append(statistics.mean(tail) / statistics.mean(head))
            first = run_worker(framework, "first", 0)
            figures.setdefault("first_s", []).append(first["first_token_s"])
            figures.setdefault("rss_mib", []).append(first["rss_mib"])
    load = os.getloadavg()
    print(f"runs (alternated, fresh processes, bytecode)  {runs}; load average {load[0]:.2f} {load[1]:.2f} "
          f"{load[2]:.2f}; {os.cpu_count()} cores")
    print(f"{'measure (median, spread)':40} {'think_nb':>22} {'pydantic-ai':>22} {'agno':>22} {'vs agno':>8}")
    labels = {"deltas_ms": f"one turn of {deltas:,} deltas, ms", "turn_ms": f"{turns} tool turns, ms per turn",
              "growth": "last 10% of turns / first 10%", "first_s": "first token in a fresh process, s",
              "rss_mib": "RSS after one turn, MiB"}
    for key, label in labels.items():
        ours, agno = rows["think_nb"][key], rows["agno"][key]
        print(f"{label:40} {spread(ours):>22} {spread(rows['pydantic_ai'][key]):>22} {spread(agno):>22} "
              f"{statistics.median(ours) / statistics.median(agno):>7.2f}x")
        if key == "deltas_ms":
            panel = rows[PANEL][key]
            print(f"{'  same, think_nb with its panel, ms':40} {spread(panel):>22} {'':>22} {'':>22} "
                  f"{statistics.median(panel) / statistics.median(agno):>7.2f}x")
    rate = {f: deltas / statistics.median(rows[f]["deltas_ms"]) * 1000 for f in columns}
    print("deltas per second: " + ", ".join(f"{f} {r:,.0f}" for f, r in rate.items()))
    counted = per_delta(quick)
    print("instructions per delta (valgrind, goal: think_nb+panel <= 20 k): "
          + ", ".join(f"{row} {n / 1000:,.1f} k" for row, n in counted.items()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        import asyncio

        framework, measure, size = sys.argv[2], sys.argv[3], int(sys.argv[4])
        with tempfile.TemporaryDirectory() as folder:
            work = {"think_nb": lambda: think_worker(measure, size, folder),
                    "pydantic_ai": lambda: pydantic_worker(measure, size), "agno": lambda: agno_worker(measure, size)}
            result = asyncio.run(work[framework]())
        print(json.dumps(result))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 deltas, 10 turns, 1 run")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    main(500 if args.quick else 10_000, 10 if args.quick else 100, 1 if args.quick else args.runs, args.quick)
