"""Benchmark: the embedded model's first turn in a fresh process, without litellm (issue 18 §2).

Each run is a fresh process that imports think_nb, creates an agent on the default model (the
embedded SmolLM2-135M, in-process through the model seam) and sends one message. Reported (medians
and spreads over the runs):

- `import think_nb`, s;
- first token after the import, s: agent creation + the GGUF model load (part of it) + prompt
  evaluation + the first streamed delta — the figure a user waits for (target ≤ 1.0 s);
- the model load alone, s (the `loading the local model…` wait row of the turn's trace: what is left of
  the load the agent's creation started in the background);
- first token when the message is sent 2 s after the agent was created (a notebook's later cell: the
  background load has ended), s;
- the whole turn, s;
- RSS after the turn, MiB, and whether litellm was imported (it must not be);
- `think-nb chat "What is 2 plus 40? Use the add tool."` end to end (the README's main job), s.

    python bench/bench_embedded.py [--runs 3] [--quick]
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
from pathlib import Path

CHILD = r'''
import json, os, sys, tempfile, time
t0 = time.perf_counter()
import think_nb
t_import = time.perf_counter() - t0
import asyncio
from think_nb import Think
from think_nb.binding import runtime_of

first = []

class Mark:
    def on_chunk(self, request_id, chunk, continuation):
        if chunk.get("type") == "text-delta" and not first:
            first.append(time.perf_counter())

async def main():
    start = time.perf_counter()
    agent = Think("bench", db=os.path.join(tempfile.mkdtemp(), "bench.sqlite"))
    runtime_of(agent).subscribe(Mark())
    if float(sys.argv[1]):  # a notebook: the agent's cell ran, the message comes a moment later
        await asyncio.sleep(float(sys.argv[1]))
        start = time.perf_counter()
    result = await agent.send("Say hello in five words.")
    end = time.perf_counter()
    trace = agent.trace()
    load = trace[trace["kind"] == "wait"]["duration_ms"].sum() / 1000
    with open("/proc/self/status") as f:
        rss = next(int(l.split()[1]) / 1024 for l in f if l.startswith("VmRSS:"))
    print(json.dumps({"status": result.status, "import_s": t_import, "first_token_s": first[0] - start,
                      "load_s": float(load), "turn_s": end - start, "rss_mib": rss,
                      "litellm": "litellm" in sys.modules}))
asyncio.run(main())
'''


def child(pause: float = 0.0) -> dict:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("THINK_NB_MODEL", None)
    done = subprocess.run([sys.executable, "-c", CHILD, str(pause)], capture_output=True, text=True, env=env,
                          timeout=600, check=False, cwd=tempfile.gettempdir())
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == "completed", out
    return out


def chat() -> float:
    cli = Path(sys.executable).with_name("think-nb")
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        done = subprocess.run([str(cli), "chat", "What is 2 plus 40? Use the add tool."], capture_output=True,
                              text=True, timeout=600, check=False, cwd=folder)
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"think-nb chat failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


PAUSE_S = 2.0
"""The pause between creating the agent and sending, for the 'later cell' figure: the model's
background load (`think_nb.models.local.preload`, started at the agent's creation) has ended."""


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f}  ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 run (CI: it must run and print)")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    results, chats, later = [], [], []
    for _ in range(runs):
        results.append(child())
        later.append(child(PAUSE_S))
        chats.append(chat())
    print(f"runs (fresh processes)          {runs}; load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    for key, label in [("import_s", "import think_nb, s"), ("first_token_s", "first token after import, s"),
                       ("load_s", "of which model load, s"), ("turn_s", "whole turn, s"),
                       ("rss_mib", "RSS after the turn, MiB")]:
        print(f"{label:31} {spread([r[key] for r in results])}")
    print(f"first token, sent {PAUSE_S:g} s after the agent was created (a later cell), s "
          f"{spread([r['first_token_s'] for r in later])}")
    print(f"litellm imported                {any(r['litellm'] for r in results + later)}")
    print(f"think-nb chat (main job), s     {spread(chats)}")


if __name__ == "__main__":
    main()
