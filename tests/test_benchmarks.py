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


@pytest.mark.localmodel
def test_bench_local_eval_quick() -> None:
    out = run_quick("bench_local_eval.py")
    assert "embedded-model eval: 5 prompts" in out and "smollm2  chosen" in out and "degenerate" in out
