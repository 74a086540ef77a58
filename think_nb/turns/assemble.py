"""Assembling a turn's inputs from the agent (Think's order): the system prompt (session context
blocks, else `get_system_prompt()`), the merged tools (the built-in families of slot "first" →
`get_tools()` → `get_actions()` → loaded extensions' tools → the built-in families of slot "memory" → MCP tools →
client tools; later sources win, but a call by a name needs approval if any tool that gave the
name needs it, and no extension or MCP tool takes a built-in's name: `think_nb.tools.collisions`;
the families are `think_nb.tools.builtin.BUILTINS`) and the
history the model reads (compaction overlays applied, compacting first when the session's
threshold is exceeded)."""

from __future__ import annotations

import logging
from typing import Any

from think_nb.errors import UserError
from think_nb.tools import builtin
from think_nb.tools.client import from_schemas
from think_nb.tools.collisions import is_gated, keep_gates
from think_nb.tools.tool import Tool
from think_nb.tools.toolset import resolve_tools
from think_nb.turns.hooks import call_hook
from think_nb.turns.host import AgentHost

log = logging.getLogger("think_nb")

LAST_CLIENT_TOOLS = "lastClientTools"
"""agent_state key of the panel-registered client tool schemas of the last request (Think's name)."""


async def system_prompt(host: AgentHost) -> str:
    """The system prompt of the next model call."""
    prompt = await (await host.session_ready()).system_prompt()
    if prompt is None:
        prompt = await call_hook(host.agent, "get_system_prompt")
        if not isinstance(prompt, str):
            raise UserError(f"{type(host.agent).__name__}.get_system_prompt() returned {prompt!r:.60}; return the "
                            "system prompt as a string.")
    return prompt


async def tools(host: AgentHost) -> dict[str, Any]:
    """The merged tools of a turn, `{name: Tool}`: built-in slot "first" (workspace tools, the
    model's `load_extension`/`list_extensions`) → `get_tools()` → `get_actions()` (`think_nb.actions`) →
    loaded extensions' tools →
    built-in slot "memory" (context, skill, `session_search` tools) → MCP tools (when
    `include_mcp_tools`; after `wait_for_mcp_connections`) → client tools."""
    ctx = builtin.BuiltinContext(host)
    extension = await ctx.extension_tools()  # first: waits for the extensions restored at creation
    first = await builtin.offered(ctx, "first")
    loaded = {n: t for n, t in extension.items() if n not in first}
    local = {**first, **resolve_tools(await call_hook(host.agent, "get_tools"))}
    actions = await host.actions.tools() if host.overrides("get_actions") else {}  # Think's default: none
    local = {**local, **keep_gates(local, actions, "action")}  # Think: after getTools()
    for name in local.keys() & loaded.keys():
        log.warning("tool %r: the extension tool replaces the local tool of the same name (later sources win)", name)
    merged = {**local, **keep_gates(local, loaded, "extension"), **await builtin.offered(ctx, "memory")}
    if host.include_mcp_tools:
        await host.mcp_ready()
        remote = host.mcp_tools()
        if remote:  # think_nb.mcp loads with the first server (a turn without one does not import it)
            from think_nb.mcp.servers import merge as mcp_merge

            merged = mcp_merge(merged, keep_gates(merged, remote, "MCP"))
    client = {n: t for n, t in from_schemas(host.store.state.get(LAST_CLIENT_TOOLS)).items()
              if not _refused_over_a_gate(merged, n)}
    return {**merged, **client}


def _refused_over_a_gate(tools: dict[str, Tool], name: str) -> bool:
    """A client tool the panel declares may not take the name of a gated tool (it would run in the
    browser, ungated): the gated tool keeps the name."""
    if name in tools and is_gated(tools[name]):
        log.warning("client tool %r: a tool of that name needs approval; the panel's tool is not offered", name)
        return True
    return False


async def history(host: AgentHost) -> list[dict]:
    """The UIMessages the model sees, oldest first."""
    session = await host.session_ready()
    if not session.compacts:
        return session.history()
    return await session.prepare_history(await system_prompt(host))
