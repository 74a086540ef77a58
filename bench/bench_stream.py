"""Benchmark: one turn of 10,000 text deltas through the whole engine vs. the raw litellm stream.

Engine = ScriptedModel → litellm → chunk translation → accumulation → SQLite persistence →
ChatPanel frames to an in-process comm. Baseline = consuming the same litellm stream raw, in the
same process, with nothing else. Runs are interleaved; medians are compared. Target: ≤ 1.5×.

    python bench/bench_stream.py [--deltas 10000] [--runs 5] [--quick]
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

import comm
from comm.base_comm import BaseComm

from think_nb import Think
from think_nb.models.litellm_env import get_litellm
from think_nb.testing import ScriptedModel


class CountingComm(BaseComm):
    """An in-process comm that serialises nothing and counts what the panel sends."""

    frames = 0

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        CountingComm.frames += 1


def script(deltas: int) -> ScriptedModel:
    # distinct 5-character deltas (litellm rejects a stream that repeats one chunk many times)
    text = "".join(f"{i % 10_000:04d} " for i in range(deltas))
    return ScriptedModel([[ScriptedModel.text(text, chunk_size=5)]])


async def raw(deltas: int) -> float:
    litellm = get_litellm()
    model = script(deltas).model
    start = time.perf_counter()
    response = await litellm.acompletion(model=model, messages=[{"role": "user", "content": "go"}], stream=True,
                                         stream_options={"include_usage": True})
    text = "".join([c.choices[0].delta.content or "" async for c in response if c.choices])
    elapsed = time.perf_counter() - start
    assert len(text) == 5 * deltas
    return elapsed


async def engine(deltas: int, db: Path, n: int) -> float:
    model = script(deltas).model

    class Bench(Think):
        def get_model(self) -> str:
            return model

    agent = Bench(f"bench-{n}", db=db)
    panel = agent.panel()
    start = time.perf_counter()
    result = await agent.send("go")
    elapsed = time.perf_counter() - start
    assert result.status == "completed", result.error
    assert len(agent.messages[-1]["parts"][-1]["text"]) == 5 * deltas
    panel.close()
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="500 deltas, 2 runs: checks the benchmark runs (CI)")
    args = parser.parse_args()
    if args.quick:
        args.deltas, args.runs = 500, 2
    comm.create_comm = CountingComm
    db = Path(tempfile.mkdtemp()) / "bench.sqlite"
    await raw(100)  # warm up litellm and the provider
    await engine(100, db, -1)
    raws, engines, frames = [], [], []
    for n in range(args.runs):
        raws.append(await raw(args.deltas))
        CountingComm.frames = 0
        engines.append(await engine(args.deltas, db, n))
        frames.append(CountingComm.frames)
    r, e = statistics.median(raws), statistics.median(engines)
    print(f"deltas per turn      {args.deltas}")
    print(f"raw litellm stream   {r * 1000:8.1f} ms  ({args.deltas / r:,.0f} deltas/s)")
    print(f"think_nb turn        {e * 1000:8.1f} ms  ({args.deltas / e:,.0f} deltas/s)")
    print(f"panel comm messages  {statistics.median(frames):8.0f} per turn")
    print(f"ratio engine/raw     {e / r:8.2f}x  (target <= 1.5x)")


if __name__ == "__main__":
    asyncio.run(main())
