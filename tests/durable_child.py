"""Fork server for the SIGKILL tests (`tests/test_sigkill.py`).

Imports think_nb and litellm once, prints `ready`, then for every JSON line on stdin
`{"db": path, "side": path, "listener": bool}` forks a child that runs one agent turn and prints
the child's pid. The test SIGKILLs that child at a chosen point. SIGCHLD is ignored, so killed
children are reaped by the kernel.

The child's turn: three steps (text + tool call, text + tool call, text) on a ScriptedModel with a
small delay; the tool `work` writes `<side>.tool<n>` when it starts and sleeps 0.3 s. With
`listener`, a panel-like listener appends every chunk it hears to the side file as a JSON line
`{"rid", "chunk"}`, fsync'd: the record of what was broadcast. After the turn the child waits to
be killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.models.litellm_env import get_litellm
from think_nb.testing import ScriptedModel as S

STEP1 = "Let me work on it. " * 6
STEP2 = "First result in. " * 4
STEP3 = "All done: the answer is 42. " * 3


class SideFile:
    """A panel-like listener that writes every chunk it hears to a file, durably."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        os.write(self.fd, (json.dumps({"rid": request_id, "chunk": chunk}) + "\n").encode())
        os.fsync(self.fd)


def touch(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


async def run(cmd: dict) -> None:
    side = cmd["side"]

    @tool
    async def work(n: int) -> int:
        """Do some work."""
        touch(f"{side}.tool{n}")
        await asyncio.sleep(0.3)
        return n * 10

    script = S([[S.text(STEP1), S.tool_call("work", {"n": 1})],
                [S.text(STEP2), S.tool_call("work", {"n": 2})],
                [S.text(STEP3)]], delay=0.004)

    class Durable(Think):
        def get_model(self) -> str:
            return script.model

        def get_tools(self) -> list:
            return [work]

    agent = Durable("d", db=cmd["db"])
    if cmd["listener"]:
        runtime_of(agent).subscribe(SideFile(side))
    await agent.send("go")
    touch(f"{side}.done")
    await asyncio.Event().wait()  # wait to be killed


def main() -> None:
    get_litellm()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                asyncio.run(run(cmd))
            finally:
                os._exit(0)
        print(pid, flush=True)


if __name__ == "__main__":
    main()
