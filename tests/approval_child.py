"""Child process for the approval-used-once SIGKILL test (`tests/test_approval_once.py`).

`python approval_child.py DB COUNT GATED`: an agent (class `Once`, name "once") on the SQLite file
DB whose model calls `danger` once; `danger` appends one line to COUNT, then never returns, so the
test can SIGKILL this process while the call runs. GATED ("1"/"0"): `danger` needs approval; the
child approves it (as a user would) and the approved call runs in the continuation.
"""

from __future__ import annotations

import asyncio
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from think_nb import Think, tool
from think_nb.testing import ScriptedModel as S


async def main(db: str, count: str, gated: bool) -> None:
    @tool(needs_approval=gated)
    async def danger(path: str) -> str:
        """Do something that must not happen twice."""
        fd = os.open(count, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, f"ran {path}\n".encode())
        os.fsync(fd)
        os.close(fd)
        await asyncio.Event().wait()  # running when the test kills the process
        return "done"

    script = S([[S.tool_call("danger", {"path": "/data"}, id="c-danger")], [S.text("Done.")]])

    class Once(Think):
        include_workspace_tools = False

        def get_model(self) -> str:
            return script.model

        def get_tools(self) -> list:
            return [danger]

    agent = Once("once", db=db)
    if gated:
        await agent.send("go")  # pauses: the call waits for approval
        task = agent.approve("c-danger")
        assert task is not None
        await task  # never finishes: danger runs until the kill
    else:
        await agent.send("go")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] == "1"))
