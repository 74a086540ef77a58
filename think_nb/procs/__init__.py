"""No process think_nb starts outlives the process that started it (the kernel).

Every child (an MCP stdio server, the `execute` tool's and the extensions' Monty workers) is
started under `think_nb/procs/guard.py`: a small stdlib-only Python process that makes its own
process group, runs the command in it with a parent-death signal, and kills the whole group with
SIGKILL as soon as its owner exits, whether the kernel shut down, restarted or was SIGKILLed
(a pidfd on the owner, so no polling). A command that exits on its own gives the guard its
exit status, and a non-zero one is written to the command's stderr (`think-nb: <command> exited
with code N`).

- `guarded(command, args) -> (executable, args)`: the argv that runs `command args` under the
  guard (for `mcp`'s `StdioServerParameters`);
- `guarded_binary(path) -> str`: an executable file that runs `path` under the guard, for a
  library that takes a binary path and appends its own arguments (`pydantic_monty`'s
  `binary_path`); written once per (python, path) into a private temporary folder;
- `monty_pool(**options)`: the `AsyncMonty` pool the `execute` tool and the extensions use;
- `RAY_REAPER`: `ray_reaper.py`, which a kernel that started a local Ray cluster (`ray.init()`) and
  ran `agent.map(engine="ray")` on it runs beside it, to kill the cluster's processes when the
  kernel exits (Ray's own fate-sharing leaves some behind).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

GUARD = str(Path(__file__).with_name("guard.py"))
RAY_REAPER = str(Path(__file__).with_name("ray_reaper.py"))
"""Kills the Ray processes a kernel started when the kernel exits (`agent.map(engine="ray")`)."""


def guarded(command: str, args: list[str]) -> tuple[str, list[str]]:
    """`(sys.executable, ["-IS", GUARD, command, *args])`."""
    return sys.executable, ["-IS", GUARD, command, *args]


def guarded_binary(path: str) -> str:
    """The path of an executable that runs `path ARGS...` under the guard (see the module docstring);
    raises `OSError` when the private folder cannot be made safely."""
    python = sys.executable
    digest = hashlib.sha256(f"{python}\0{path}\0{GUARD}".encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"think-nb-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{folder} is not a private folder of this user; remove it and try again")
    wrapper = folder / f"guard-{Path(path).name}-{digest}"
    if not wrapper.exists():
        script = (f"#!{python} -IS\nimport sys\nsys.argv[1:1] = [{path!r}]\n"
                  f"__file__ = {GUARD!r}\nexec(compile(open(__file__).read(), __file__, 'exec'))\n")
        staging = wrapper.with_name(f"{wrapper.name}.{os.getpid()}")
        staging.write_text(script)
        staging.chmod(0o700)
        os.replace(staging, wrapper)
    return str(wrapper)


def monty_binary() -> str:
    """`pydantic_monty`'s worker binary, under the guard (`binary_path=` of `Monty`/`AsyncMonty`)."""
    from pydantic_monty._binary import find_monty_binary

    return guarded_binary(find_monty_binary())


def monty_pool(**options: Any) -> Any:
    """A `pydantic_monty.AsyncMonty(**options)` whose workers run under the guard, with the exit
    handler of `think_nb.procs.threads` installed (its Rust threads call into Python: see there).
    The one place think_nb makes a Monty pool."""
    import pydantic_monty as pm

    from think_nb.procs import threads

    threads.register()
    return pm.AsyncMonty(binary_path=monty_binary(), **options)
