"""CPU instructions of one fresh Python process, counted by valgrind's cachegrind.

Wall time on this shared 2-core machine swings run to run; the instructions a process runs do not
(deterministic to ~0.01 % with a fixed hash seed). A benchmark runs a worker twice, at two sizes, and
divides the difference: `(I(N2) - I(N1)) / (N2 - N1)` is the cost of one unit of work, without the
interpreter's start, the imports and the set-up (bench_agents, bench_annotations, bench_first_turn,
bench_growth, bench_peers). Under valgrind a process runs ~50x slower and its threads one at a time, so
independent workers run side by side (a thread pool of `instructions` calls).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys


def require_valgrind() -> None:
    """Stop the benchmark with a one-line message when valgrind is not installed."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")


def instructions(argv: list[str], what: str, env: dict[str, str] | None = None, timeout: float = 3600,
                 cwd: str | None = None) -> int:
    """Instructions (cachegrind's `I refs`) that `python *argv` runs, start to exit.

    Args:
        argv: the interpreter's arguments (a script and its worker arguments, or `-c CODE`).
        what: names the run in the error when it fails.
        env: variables on top of this process's environment, offline litellm and `PYTHONHASHSEED=0`.
        timeout: seconds the run may take under valgrind.
        cwd: the run's working directory (None: this one).

    Raises:
        SystemExit: the run failed or printed no count (the end of its stderr says why).
    """
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONHASHSEED": "0", **(env or {})}
    out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          sys.executable, *argv], capture_output=True, text=True, env=env, timeout=timeout,
                         check=False, cwd=cwd)
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"{what} failed under valgrind:\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))
