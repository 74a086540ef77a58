"""Fork server for the agent-tool SIGKILL tests (`tests/test_agent_tool_runs.py`).

Imports think_nb and the test agents once, prints `ready`, then for every JSON line on stdin
`{"db": path, "side": path, "mode": "settled" | "cut"}` forks a child that runs one `Lead` turn
(whose tool delegates to `Scout`) and prints the child's pid; the test SIGKILLs it:

- "settled": the scout answers at once; the lead's tool then touches `<side>.hang` and waits, so
  the kill lands after the scout's run was settled and before the lead's call has a result;
- "cut": the scout streams slowly and touches `<side>.streaming` at its first text delta, so the
  kill lands while the scout's turn runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

from agent_tool_agents import Lead, Scout
from think_nb.testing import ScriptedModel as S

ANSWER = "The scout's answer."
PARTIAL = "Scouting the ground, " * 40


async def run(cmd: dict) -> None:
    side = cmd["side"]
    Lead.script = S([[S.tool_call("research", {"question": "where?"})], [S.text("never reached")]])
    if cmd["mode"] == "settled":
        Scout.script = S([[S.text(ANSWER)]])
        Lead.hang = f"{side}.hang"
    else:
        Scout.script = S([[S.text(PARTIAL, chunk_size=2)]], delay=0.01)
        Scout.streaming = f"{side}.streaming"
    await Lead("lead", db=cmd["db"]).send("go")
    await asyncio.Event().wait()  # wait to be killed


def main() -> None:
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
