"""Time to the first streamed text and to the end of the answer, for a plain question to the
quickstart's agents on the embedded model (issue 27 §7: "answers a plain question in seconds").

Agents: `Calc`, the class of notebooks/quickstart.ipynb (its prompt and its `add` tool; on the
embedded model an agent gets no workspace tools), and `think-nb chat`'s TerminalAgent (the README's main job:
add, multiply, current_time). Each run is a fresh conversation (a new SQLite file) with the model
already loaded, as in a notebook where the agent's creation loaded it a cell earlier, and nothing
of the prompt already evaluated (llama.cpp keeps the last prompt's tokens and would skip the common
prefix: a repeated question answers in 0.1 s, which no class's first question does). Per agent ×
tool policy of the embedded model (`think_nb.models.local.TOOL_POLICY`: `named`, the default, and
`all`, what every agent got before issue 27) it prints the median, min and max over the runs of
the seconds to the first `text-delta` and to the end of the turn, the prompt's tokens (llama.cpp's count
of the last call), the tools called, and the ratio
of `all` to `named` (the baseline: every tool offered). The machine's load average is printed
first: the figures scale with it.

    python bench/quickstart_latency.py ["What is the capital of France?"] [--runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.frontends.cli import TerminalAgent
from think_nb.models import local


@tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


class Calc(Think):
    """notebooks/quickstart.ipynb's class, as written there."""

    max_steps = 4

    def get_system_prompt(self) -> str:
        return "You are a careful calculator. Use the add tool for sums."

    def get_tools(self) -> list:
        return [add]


AGENTS: dict[str, type[Think]] = {"quickstart Calc": Calc, "think-nb chat": TerminalAgent}


class Clock:
    """Notes when the first text delta of the turn arrives."""

    def __init__(self) -> None:
        self.first: float | None = None

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        if chunk.get("type") == "text-delta" and self.first is None:
            self.first = time.perf_counter()


def one_run(cls: type[Think], prompt: str, n: int) -> dict[str, Any]:
    local.get_llama().reset()  # a cold prompt: llama.cpp would reuse the last run's evaluated prefix
    with tempfile.TemporaryDirectory() as folder:
        agent = cls(f"latency-{n}", db=Path(folder) / "q.sqlite")
        clock = Clock()
        runtime_of(agent).subscribe(clock)
        started = time.perf_counter()
        result = agent.run(prompt)
        ended = time.perf_counter()
        parts = agent.messages[-1]["parts"]
        usage = (agent.messages[-1].get("metadata") or {}).get("usage") or {}
    return {"prompt_tokens": usage.get("prompt_tokens"), "first": (clock.first or ended) - started,
            "whole": ended - started, "status": result.status,
            "tools": [p["type"][5:] for p in parts if p["type"].startswith("tool-")],
            "reply": " ".join(p["text"] for p in parts if p["type"] == "text").strip()}


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prompt", nargs="?", default="What is the capital of France?")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--policies", default="named,all")
    parser.add_argument("--quick", action="store_true", help="one run, the quickstart's Calc, the default policy")
    args = parser.parse_args()
    runs, policies, agents = args.runs, args.policies.split(","), list(AGENTS)
    if args.quick:
        runs, policies, agents = 1, [local.TOOL_POLICY], agents[:1]
    local.get_llama()
    print(f"quickstart latency: {args.prompt!r}, {runs} run(s) each; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores", flush=True)
    default_policy = local.TOOL_POLICY
    for name in agents:
        wholes: dict[str, float] = {}
        for policy in policies:
            local.TOOL_POLICY = policy
            rows = [one_run(AGENTS[name], args.prompt, n) for n in range(runs)]
            local.TOOL_POLICY = default_policy
            wholes[policy] = statistics.median(r["whole"] for r in rows)
            tools = sorted({t for r in rows for t in r["tools"]}) or "none"
            print(f"{name:16} tools {policy:5}  first text {spread([r['first'] for r in rows])}  "
                  f"whole answer {spread([r['whole'] for r in rows])}  prompt tokens {rows[0]['prompt_tokens']}  "
                  f"tool calls {tools}  "
                  f"{','.join(sorted({r['status'] for r in rows}))}  reply {rows[0]['reply'][:50]!r}", flush=True)
        if "all" in wholes and "named" in wholes:
            print(f"{name:16} ratio all tools / named tools (whole answer): {wholes['all'] / wholes['named']:.2f}")


if __name__ == "__main__":
    main()
