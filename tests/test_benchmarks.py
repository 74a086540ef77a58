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


def test_bench_stream_quick() -> None:
    out = run_quick("bench_stream.py")
    assert "ratio engine/raw" in out and "deltas per turn      500" in out


def test_bench_session_quick() -> None:
    out = run_quick("bench_session.py")
    assert "open a 500-message session" in out and "search over 2,000 messages" in out


@pytest.mark.e2e
def test_bench_browser_quick() -> None:
    out = run_quick("bench_browser.py")
    assert "deltas/s rendered" in out and '"deltas": 500' in out
    assert "long reply in 40 frames" in out and "100 KB" in out  # time per frame vs reply length


def test_bench_mcp_quick() -> None:
    out = run_quick("bench_mcp.py")
    assert "calls per run        50" in out and "ratio think_nb/SDK" in out


def test_bench_peers_quick() -> None:
    out = run_quick("bench_peers.py")
    assert "one turn of 500 deltas" in out and "10 tool turns, ms per turn" in out and "RSS after one turn" in out


def test_bench_first_turn_quick() -> None:
    out = run_quick("bench_first_turn.py")
    assert "turn 1 max loop stall" in out and "kernel: 2nd %%think" in out and "cpu loop alone" in out


def test_bench_workspace_quick() -> None:
    out = run_quick("bench_workspace.py")
    assert "grep over 500 files" in out and "execute, 100 inner calls" in out and "same in a hooked turn" in out


@pytest.mark.localmodel
def test_bench_local_eval_quick() -> None:
    out = run_quick("bench_local_eval.py")
    assert "embedded-model eval: 5 prompts" in out and "smollm2  chosen" in out and "degenerate" in out
