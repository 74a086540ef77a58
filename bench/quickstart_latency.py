"""First-token and whole-reply latency of the quickstart's agent (`think-nb chat`'s TerminalAgent:
the embedded model with the demo tools add, multiply, current_time) for a plain question, under
each tool policy of the embedded model (`think_nb.models.local.TOOL_POLICY`).

    python bench/quickstart_latency.py ["What is the capital of France?"] [--policies all,named]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from think_nb.binding import runtime_of
from think_nb.frontends.cli import TerminalAgent
from think_nb.models import local


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prompt", nargs="?", default="What is the capital of France?")
    parser.add_argument("--policies", default="all,named")
    args = parser.parse_args()
    local.get_llama()
    print(f"quickstart latency: {args.prompt!r}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for policy in args.policies.split(","):
        local.TOOL_POLICY = policy
        seen: dict[str, float] = {}

        class View:
            def __init__(self, seen: dict[str, float]) -> None:
                self.seen = seen

            def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
                if chunk.get("type") in ("text-delta", "tool-input-start") and "first" not in self.seen:
                    self.seen["first"] = time.perf_counter()

        with tempfile.TemporaryDirectory() as folder:
            agent = TerminalAgent(f"latency-{policy}", db=Path(folder) / "q.sqlite")
            runtime_of(agent).subscribe(View(seen))
            started = time.perf_counter()
            result = agent.run(args.prompt)
            ended = time.perf_counter()
            parts = agent.messages[-1]["parts"]
            tools = [p["type"] for p in parts if p["type"].startswith("tool-")]
            text = " ".join(p["text"] for p in parts if p["type"] == "text").strip()
        print(f"tools {policy:6} first visible chunk {seen.get('first', ended) - started:6.2f} s  whole turn "
              f"{ended - started:6.2f} s  {result.status}  tool calls {tools or 'none'}  reply {text[:60]!r}",
              flush=True)


if __name__ == "__main__":
    main()
