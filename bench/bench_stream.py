"""Benchmark: one turn of 10,000 text deltas through the whole engine vs. the raw model stream.

Two paths, each against its own floor (runs interleaved, medians compared):
- hosted path: ScriptedModel through litellm (`ModelConfig(..., via_litellm=True)`, litellm's
  custom-provider stream wrapper, as every hosted model) → chunk translation → accumulation →
  SQLite persistence (write-ahead) → ChatPanel frames to an in-process comm; baseline = consuming the
  same litellm stream raw, with nothing else. Target (issue 12): ≤ 1.2×.
- in-process path: the same ScriptedModel called directly through the model seam
  (`think_nb.models.inprocess`: what the embedded and scripted models use), baseline = consuming
  the model's own generator raw (`play_batches`: its chunks in the lists the client reads). This
  ratio is the engine's whole cost per delta; `bench_peers.py` counts its instructions per delta.

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

from think_nb import ModelConfig, Think
from think_nb.models.litellm_env import get_litellm
from think_nb.testing import ScriptedModel, play_batches


class CountingComm(BaseComm):
    """An in-process comm that serialises nothing and counts what the panel sends."""

    frames = 0

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        CountingComm.frames += 1


def script(deltas: int) -> ScriptedModel:
    # distinct 5-character deltas (litellm rejects a stream that repeats one chunk many times)
    text = "".join(f"{i % 10_000:04d} " for i in range(deltas))
    # usage reported, as hosted providers do: without it litellm estimates it at the end of the stream
    # by tokenizing the whole reply (0.8-1.1 s for 10,000 deltas here, varying run to run)
    return ScriptedModel([[ScriptedModel.text(text, chunk_size=5), ScriptedModel.usage(12, deltas)]])


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


async def raw_generator(deltas: int) -> float:
    model = script(deltas).model
    start = time.perf_counter()
    text = "".join([c["text"] async for batch in play_batches(model, [{"role": "user", "content": "go"}], {})
                    for c in batch])
    elapsed = time.perf_counter() - start
    assert len(text) == 5 * deltas
    return elapsed


async def engine(deltas: int, db: Path, n: int, via_litellm: bool) -> float:
    model = ModelConfig(script(deltas).model, via_litellm=via_litellm)

    class Bench(Think):
        def get_model(self) -> ModelConfig:
            return model

    agent = Bench(f"bench-{n}-{via_litellm}", db=db)
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
    await engine(100, db, -1, True)
    await engine(100, db, -1, False)
    times: dict[str, list[float]] = {"raw litellm": [], "via litellm": [], "raw generator": [], "direct": []}
    frames = []
    for n in range(args.runs):
        times["raw litellm"].append(await raw(args.deltas))
        CountingComm.frames = 0
        times["via litellm"].append(await engine(args.deltas, db, n, True))
        frames.append(CountingComm.frames)
        times["raw generator"].append(await raw_generator(args.deltas))
        times["direct"].append(await engine(args.deltas, db, n, False))
    m = {k: statistics.median(v) for k, v in times.items()}
    print(f"deltas per turn                 {args.deltas}")
    for key, label in [("raw litellm", "raw litellm stream"), ("via litellm", "think_nb turn, via litellm"),
                       ("raw generator", "raw in-process generator"), ("direct", "think_nb turn, in-process")]:
        spread = f"{min(times[key]) * 1000:.0f}-{max(times[key]) * 1000:.0f}"
        print(f"{label:31} {m[key] * 1000:8.1f} ms  ({args.deltas / m[key]:,.0f} deltas/s; runs {spread} ms)")
    print(f"panel comm messages             {statistics.median(frames):8.0f} per turn")
    print(f"ratio via litellm / raw litellm {m['via litellm'] / m['raw litellm']:8.2f}x  (target <= 1.2x)")
    print(f"ratio in-process / raw gen.     {m['direct'] / m['raw generator']:8.2f}x  "
          f"(engine cost {(m['direct'] - m['raw generator']) / args.deltas * 1e6:.0f} us per delta)")
    print(f"in-process turn vs raw litellm  {m['direct'] / m['raw litellm']:8.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
