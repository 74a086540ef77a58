"""A parent's sub-agents: which exist, aborting one, deleting one (Think's `hasSubAgent`,
`listSubAgents`, `abortSubAgent`, `deleteSubAgent`; `Think` calls these).

Which sub-agents exist is read from the parent's SQLite file (`think_nb.store.sub_agents`: a child
is registered when `sub_agent` first makes it), so a new parent object after a kernel restart
knows the children of the old one. Aborting and stopping reach the child objects this process
made (`AgentRuntime.children`): a turn runs only in the process that started it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from think_nb.agent_tools import DELETED_TEXT
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.store import sub_agents

if TYPE_CHECKING:
    from think_nb.runtime import AgentRuntime

DELETED = DELETED_TEXT
"""The abort reason of a child's turns when it is deleted."""


def class_name(cls: Any, method: str) -> str:
    """The class name a sub-agent method was given (a Think subclass or its name), else `UserError`."""
    if isinstance(cls, str) and cls:
        return cls
    if isinstance(cls, type) and any(f"{c.__module__}.{c.__qualname__}" == "think_nb.agent.Think" for c in cls.__mro__):
        return cls.__name__  # (checked by name: think_nb.agent imports this module)
    raise UserError(f"{method}({cls!r}): pass the sub-agent's class (a Think subclass) or its class name.")


def has(runtime: AgentRuntime, cls: Any, name: str | None) -> bool:
    found = sub_agents.children(runtime.store.db, runtime.key, class_name(cls, "has_sub_agent"))
    return any(name is None or row["name"] == name for row in found)


def listed(runtime: AgentRuntime, cls: Any) -> list[dict[str, Any]]:
    wanted = None if cls is None else class_name(cls, "list_sub_agents")
    return sub_agents.children(runtime.store.db, runtime.key, wanted)


def runs(runtime: AgentRuntime, status: str | None) -> list[dict[str, Any]]:
    """`Think.agent_tool_runs`: the ledger rows without their internal columns."""
    drop = ("class_ref", "input_message_id", "owner")
    return [{k: v for k, v in row.items() if k not in drop} for row in runtime.store.child_runs.select(status)]


def abort(runtime: AgentRuntime, cls: Any, name: str, reason: str | None) -> bool:
    """Settle the child's running agent-tool runs `aborted` with `reason` (what the delegating tool
    reports), then abort the turns of the child and its sub-agents; True when one was running."""
    key = sub_agents.child_key(runtime.key, class_name(cls, "abort_sub_agent"), name)
    why = reason or "aborted by abort_sub_agent()"
    for row in runtime.store.child_runs.select("running", child_key=key):
        runtime.store.child_runs.settle(row["run_id"], "aborted", error=why)
    aborted = [_abort_tree(child, why) for child in live(runtime, key)]  # every one, no short cut
    return any(aborted)


async def delete(runtime: AgentRuntime, cls: Any, name: str) -> bool:
    """Abort, stop and erase the child `key` (see `Think.delete_sub_agent`); False when unknown."""
    key = sub_agents.child_key(runtime.key, class_name(cls, "delete_sub_agent"), name)
    abort(runtime, cls, name, DELETED)
    for child in live(runtime, key):
        await _stop_tree(child)
    for pair in [p for p, child in runtime.children.items() if runtime_of(child).key == key]:
        del runtime.children[pair]
    known = sub_agents.exists(runtime.store.db, key)
    spills = await asyncio.to_thread(sub_agents.erase, runtime.store.db, key)  # seconds for a long transcript
    files = runtime.db_path.parent / f"{runtime.db_path.stem}.files"  # the workspace's spill folder
    for spill in spills:
        (files / spill).unlink(missing_ok=True)
    return known


def live(runtime: AgentRuntime, key: str) -> list[Any]:
    """The child objects with storage key `key` this process made (any class object of that name)."""
    return [child for child in runtime.children.values() if runtime_of(child).key == key]


def _abort_tree(agent: Any, reason: str) -> bool:
    """Abort the turns of `agent` and of the sub-agents it made; True when one was running or queued."""
    runtime = runtime_of(agent)
    running = runtime.engine.is_running
    for request_id in list(runtime.engine.active):
        runtime.engine.abort_request(request_id, reason)
    below = [_abort_tree(child, reason) for child in list(runtime.children.values())]
    return running or any(below)


async def _stop_tree(agent: Any) -> None:
    """Wait for the aborted turns of `agent` and its sub-agents to end, then stop their MCP
    connections, extensions and scheduled tasks."""
    runtime = runtime_of(agent)
    for child in list(runtime.children.values()):
        await _stop_tree(child)
    if runtime.engine.active:
        await asyncio.wait(list(runtime.engine.active.values()))
    await runtime.shutdown()
