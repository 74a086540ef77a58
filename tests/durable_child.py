"""Fork server for the SIGKILL tests (`tests/test_sigkill.py`).

Imports think_nb and litellm once, prints `ready`, then for every JSON line on stdin
`{"db": path, "side": path, "listener": bool}` forks a child that runs one agent turn and prints
the child's pid. The test SIGKILLs that child at a chosen point. SIGCHLD is ignored, so killed
children are reaped by the kernel.

The child's turn: three steps (text + tool call, text + tool call, text) on a ScriptedModel with a
small delay; the tool `work` writes `<side>.tool<n>` when it starts and sleeps 0.3 s. With
`listener`, a panel-like listener appends every chunk it hears to the side file as a JSON line
`{"rid", "chunk"}`, fsync'd: the record of what was broadcast. After the turn the child waits to
be killed. With `stop_at` the child runs `run_fast` instead (a fast stream stopped mid-way). With
`submit` the turn is a submission's (`submit_messages(..., submission_id="job")`, then the drain);
with `hold_tool` the tool call `work(n=hold_tool)` never returns (the child waits there to be killed).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

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


class SideBatches:
    """A listener that hears recorded batches (deltas joined), as a panel's hub does: writes
    every chunk of each batch to `path`, as `SideFile` does, durably."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def on_chunks(self, request_id: str, chunks: list[dict], continuation: bool) -> None:
        os.write(self.fd, "".join(json.dumps({"rid": request_id, "chunk": c}) + "\n" for c in chunks).encode())
        os.fsync(self.fd)


FAST_DELTAS = 4000
"""The fast turn's text deltas (one step, no delay: the engine holds and records them in runs)."""


def touch(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


async def run(cmd: dict) -> None:
    side = cmd["side"]
    if cmd.get("fast"):
        return await run_fast(cmd)

    @tool
    async def work(n: int) -> int:
        """Do some work."""
        touch(f"{side}.tool{n}")
        if n == cmd.get("hold_tool"):
            await asyncio.Event().wait()
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
    if cmd.get("submit"):
        from think_nb.messages import user_message

        await agent.submit_messages([user_message("go")], submission_id="job")
        assert agent.submissions_task is not None
        await agent.submissions_task
    else:
        await agent.send("go")
    touch(f"{side}.done")
    await asyncio.Event().wait()  # wait to be killed


async def run_fast(cmd: dict) -> None:
    """One step of `FAST_DELTAS` text deltas with no delay, heard by a per-chunk listener (`side`)
    and a batch listener (`side` + `.batches`). With `stop_at`, an `on_chunk` hook writes
    `<side>.stopped` at the `stop_at`-th delta and holds the process there, mid-stream, until it
    is killed; without, no hook runs (the engine holds deltas and publishes them in runs) and the
    test kills the child whenever it likes."""
    side, stop_at = cmd["side"], int(cmd.get("stop_at") or 0)
    script = S([[S.deltas([f"{n % 10}" for n in range(FAST_DELTAS)])]])
    seen = [0]

    def on_chunk(self: Think, chunk: dict) -> None:
        if chunk.get("type") == "text-delta":
            seen[0] += 1
            if seen[0] == stop_at:
                touch(f"{side}.stopped")
                time.sleep(3600)  # the loop stops here: nothing more is written or heard

    class Durable(Think):  # the name `check` reopens it by
        def get_model(self) -> str:
            return script.model

    if stop_at:
        Durable.on_chunk = on_chunk  # type: ignore[method-assign]
    agent = Durable("d", db=cmd["db"])
    runtime_of(agent).subscribe(SideFile(side))
    runtime_of(agent).subscribe(SideBatches(f"{side}.batches"))
    await agent.send("go")
    touch(f"{side}.done")
    await asyncio.Event().wait()


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
