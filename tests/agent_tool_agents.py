"""The agents of the agent-tool re-attach tests, shared by the process that is killed
(`tests/agent_tool_child.py`) and the test that creates them again over its file
(`tests/test_agent_tool_runs.py`): one module, so a re-attach finds the child's class by its
`module:qualname`, as a notebook re-run finds `__main__:Scout`.

`Lead`'s tool `research` delegates to its sub-agent `Scout("s1")`. Each process sets the scripts
and the switches (class attributes) before making them.
"""

from __future__ import annotations

import asyncio
import os

from think_nb import RecoveryDecision, Think
from think_nb.testing import ScriptedModel as S


def touch(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


class Scout(Think):
    """The child. `resume`: its `on_chat_recovery` continues a turn a dead process cut;
    `streaming`: a file touched at its first text delta."""

    script: S = S([])
    resume = False
    streaming: str | None = None

    def get_model(self):
        return type(self).script.model

    def on_chunk(self, chunk: dict) -> None:
        if chunk["type"] == "text-delta" and type(self).streaming:
            touch(str(type(self).streaming))

    def on_chat_recovery(self, ctx):
        return RecoveryDecision(continue_=type(self).resume)


class Lead(Think):
    """The parent. `hang`: after `delegate` returned, `research` touches this file and waits to be
    killed (the child's run is settled, the parent's call has no result yet). Its recovery continues."""

    script: S = S([])
    hang: str | None = None
    include_workspace_tools = False

    def get_model(self):
        return type(self).script.model

    def get_tools(self):
        return [self.research]

    async def research(self, question: str) -> str:
        """Ask the scout."""
        answer = await self.delegate(self.sub_agent(Scout, "s1"), question)
        if type(self).hang:
            touch(str(type(self).hang))
            await asyncio.Event().wait()
        return answer

    def on_chat_recovery(self, ctx):
        return RecoveryDecision(continue_=True)
