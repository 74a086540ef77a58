"""Every benchmark runs in CI in its `--quick` mode (small sizes), so a change that breaks a
benchmark breaks the build; only that it runs and prints its figures is asserted, never a time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def run_quick(name: str) -> str:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, str(BENCH / name), "--quick"], capture_output=True, text=True,
                          timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


QUICK = [  # (benchmark, what its output must say, marks)
    ("bench_stream.py", ["deltas per turn                 500", "ratio via litellm / raw litellm",
                         "ratio in-process / raw gen."], []),
    ("bench_session.py", ["open a 500-message session", "search over 2,000 messages"], []),
    ("bench_browser.py", ["deltas/s rendered", '"deltas": 500', "long reply in 40 frames", "100 KB",
                          "open a 10,000-message session", "ratio before/after (first frame)"],
     [pytest.mark.e2e]),
    ("bench_transcript.py", ["IOPub bytes per turn", "opening the panel", "static transcript per turn"], []),
    ("bench_mcp.py", ["calls per run        50", "ratio think_nb/SDK"], []),
    ("bench_peers.py", ["one turn of 500 deltas", "same, think_nb with its panel", "10 tool turns, ms per turn",
                        "RSS after one turn", "agno", "instructions per delta (valgrind"], []),
    ("bench_first_turn.py", ["turn 1 max loop stall", "first hosted turn", "longest collection off the loop",
                             "kernel: 2nd %%think", "cpu loop alone",
                             "first token in a fresh process, M instructions", "import think_nb "], []),
    ("bench_workspace.py", ["grep over 500 files", "execute, 100 inner calls", "same in a hooked turn"], []),
    ("bench_kernel_tools.py", ["list_variables over 1,000 names", "describe_variable of 10,000 rows",
                               "run_code round trip (tool)", "run_code in a whole turn"], []),
    ("bench_extensions.py", ["extension tool call (20 calls)", "before_turn hook (10 calls)"], []),
    ("bench_local_eval.py", ["embedded-model eval: 7 prompts", "smollm2  chosen", "degenerate"],
     [pytest.mark.localmodel]),
    ("bench_stalls.py", ["longest loop stall per scenario", "first turn", "MCP server: add, one call",
                         "compaction (N messages)", "grep (N lines)", "browser: launch, N pages, shot"], []),
    ("bench_time_travel.py", ["fork + resume from its last hook site (on_chat_response), ms",
                              "record size per turn, 10-step tool turn, bytes", "its trace row"], []),
    ("bench_batch.py", ["rows/s at each size", "map/floor  map/hand", "map seconds a row at 48 / at 16 rows",
                        "memory per in-flight row", "engine='ray'                   skipped"], []),
    ("bench_agents.py", ["instructions per agent", "think_nb new", "think_nb again", "think_nb reopened",
                         "agno new"], []),
    ("bench_media_eviction.py", ["no-op check, us", "ratio scan/index", "longest loop hold during the pass"], []),
    ("bench_growth.py", ["turn counts (2, 4, 6)", "per turn of history (s)", "think_nb"], []),
    ("bench_annotations.py", ["instructions per sync, cached", "instructions per sync, uncached",
                              "ratio uncached/cached"], []),
    ("bench_embedded.py", ["first token after import, s", "litellm imported                False",
                           "think-nb chat (main job), s"], [pytest.mark.localmodel]),
    ("quickstart_latency.py", ["quickstart latency:", "quickstart Calc  tools named  first text", "whole answer",
                               "tool calls none"], [pytest.mark.localmodel]),
]


@pytest.mark.parametrize(("name", "says"), [pytest.param(n, s, marks=m, id=n.removesuffix(".py")) for n, s, m in QUICK])
def test_a_benchmark_runs_in_quick_mode(name: str, says: list[str]) -> None:
    out = run_quick(name)
    missing = [line for line in says if line not in out]
    assert not missing, f"{name} --quick did not print {missing}:\n{out}"
