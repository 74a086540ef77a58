"""An agent's MCP servers and the tools they give each turn (Think's MCP client on the agent).

`McpServers` holds one `Connection` per server, persists the configuration
(`think_nb.store.mcp_servers`) and reconnects it when the agent is created again, and turns the
servers' tools into `Tool`s for a turn (`tools()`):

- names are `<server>_<tool>` (letters, digits, `_`, `-`; at most 64); merged after
  `get_tools()` and the session's tools and before client tools, so on a clash with a local tool
  the MCP tool wins (Think's "later keys win"; a warning is logged), gated if the local tool was
  (`think_nb.tools.collisions`). A built-in tool's name (server `load` + tool `extension`) is
  refused. Two servers can give one name (`gh` + `repo_delete`, `gh_repo` + `delete`, or two
  names cut at 64): the server added first serves it, needing approval if either server's tool
  does, and a warning names both;
- the description ends with "(MCP server <name>)", which the approval card shows;
- `needs_approval`: True, a list of tool names, or `predicate(server, tool, input)` (a predicate
  is kept in memory; after a restart pass it again to `add_mcp_server`); not given, a server
  added again under its name keeps the gates it had (a new one has none; False drops them);
- a call returns the tool's structured content, else its text, else its content blocks as JSON;
  an `isError` result, a timeout or a broken connection is a tool error the model sees.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from think_nb.aio import task_loop
from think_nb.mcp.config import ServerConfig, make
from think_nb.mcp.connection import Connection, McpCallError
from think_nb.tools.collisions import combined, refused_builtin
from think_nb.tools.tool import Tool

if TYPE_CHECKING:
    from pathlib import Path

    from think_nb.store.agent import AgentStore

log = logging.getLogger("think_nb")
DEFAULT_WAIT_S = 10.0
MAX_WAIT_S = 600.0
"""The longest wait `wait_for_mcp_connections` takes: seconds beyond it are refused (Think's
`{timeout: 5000}` is milliseconds; read as seconds it would wait 83 minutes)."""


def wait_seconds(wait: Any) -> float:
    """How long `wait_for_mcp_connections = wait` waits, in seconds: False/0 → 0, True → 10,
    a number → that many seconds, `{"timeout": s}` → s seconds (a dict without `timeout` → 10).
    Values are checked where the setting is written (`think_nb.names`, at most `MAX_WAIT_S`)."""
    if isinstance(wait, dict):
        return float(wait.get("timeout", DEFAULT_WAIT_S))
    if isinstance(wait, bool) or not wait:
        return DEFAULT_WAIT_S if wait is True else 0.0
    return float(wait)


def still_connecting(connection: Connection, waited: float) -> None:
    """Warn, naming the setting, when `add_mcp_server` waited `connect_timeout` s (> 0) and the server is
    still connecting (a slow start on a loaded machine): it goes on connecting in the background."""
    if waited > 0 and connection.state == "connecting":
        log.warning("MCP server %r is still connecting after connect_timeout=%g s; it goes on connecting in "
                    "the background and its tools join the turns once it is connected (mcp_servers() shows its "
                    "state). Pass a larger connect_timeout= to add_mcp_server to wait for it, or set "
                    "wait_for_mcp_connections for turns to wait.", connection.config.name, waited)


class McpHost(Protocol):
    """What the MCP servers need of their agent (`think_nb.runtime.AgentRuntime` implements it)."""

    store: AgentStore
    db_path: Path


class McpServers:
    """The MCP servers of one agent (see the module docstring)."""

    def __init__(self, host: McpHost, on_change: Callable[[list[dict]], None] | None = None) -> None:
        self.host = host
        self.on_change = on_change
        """Called with `table()` whenever a server is added, removed or changes state."""
        self.rows = host.store.mcp_servers
        self.live: dict[str, Connection] = {}
        self.predicates: dict[str, Callable[..., Any]] = {}

    def restore(self) -> None:
        """Reconnect the stored servers (on the running loop, else the script loop)."""
        for row in self.rows.all():
            self._start(ServerConfig.from_row(row))

    async def add(self, name: Any, target: Any, *, args: Any = None, env: Any = None, headers: Any = None,
                  needs_approval: Any = None, timeout: Any = 60.0, connect_timeout: float = 10.0) -> dict:
        if needs_approval is None:  # not given: a server added again keeps the gates set before
            needs_approval = self.gates_of(name)
        config = make(name, target, args, env, headers, needs_approval, timeout)
        if callable(needs_approval):
            self.predicates[config.name] = needs_approval
        else:
            self.predicates.pop(config.name, None)
        old = self.live.get(config.name)
        if old is not None and old.config.row() == config.row() and old.state in ("connecting", "connected"):
            await old.settled(connect_timeout)  # the same server again (a re-run cell): keep its connection
            still_connecting(old, connect_timeout)
            return self.describe(config.name)
        if old is not None:
            changed = [k for k, v in config.row().items() if old.config.row().get(k) != v]
            log.warning("MCP server %r replaced (%s changed)", config.name, ", ".join(changed) or "reconnect")
            del self.live[config.name]
            await old.close()
        self.rows.put(config.stored())  # literal secrets of args/env stay in memory only
        connection = self._start(config)
        await connection.settled(connect_timeout)
        still_connecting(connection, connect_timeout)
        return self.describe(config.name)

    def gates_of(self, name: Any) -> Any:
        """The `needs_approval` the server `name` has now (its predicate, its stored True or list of
        tool names), or False for a server not added yet."""
        if name in self.predicates:
            return self.predicates[name]
        live = self.live.get(name)
        if live is not None:
            return live.config.approval
        stored = [row["approval"] for row in self.rows.all() if row["name"] == name]
        return stored[0] if stored else False

    async def remove(self, name: str) -> bool:
        connection = self.live.pop(name, None)
        if connection is not None:
            connection.on_change = None
            await connection.close()
        self.predicates.pop(name, None)
        removed = self.rows.delete(name) or connection is not None
        self.changed()
        return removed

    def changed(self) -> None:
        """Tell `on_change` (the agent's listeners) the servers' table now."""
        if self.on_change is not None:
            try:
                self.on_change(self.table())
            except Exception:  # a display must never break a connection
                log.exception("MCP state listener failed")

    async def close(self) -> None:
        """Close every connection (the configuration stays stored)."""
        for connection in list(self.live.values()):
            await connection.close()

    async def ready(self, wait: Any) -> None:
        """Think's `waitForMcpConnections`: wait for servers still connecting, as long as
        `wait_seconds(wait)` says (True: 10 s, seconds, `{"timeout": s}`, False: not at all)."""
        timeout = wait_seconds(wait)
        if not timeout or not self.live:
            return
        await asyncio.gather(*(c.settled(timeout) for c in self.live.values() if c.state == "connecting"))

    def describe(self, name: str) -> dict:
        c = self.live[name]
        return {"name": name, "transport": c.config.transport, "target": c.config.target, "state": c.state,
                "tools": len(c.tools) if c.state == "connected" else 0,
                "tool_names": [tool_name(name, t.name) for t in c.tools] if c.state == "connected" else [],
                "last_error": c.last_error, "calls": c.calls,
                "log": str(c.log_path) if c.config.transport == "stdio" else None}

    def table(self) -> list[dict]:
        return [self.describe(name) for name in self.live]

    def tools(self) -> dict[str, Tool]:
        """The tools of every connected server, `{name: Tool}`, in the order the servers were added;
        a built-in's name is refused and a name two servers give is the first's, gated if either is
        (see the module docstring)."""
        out: dict[str, Tool] = {}
        owner: dict[str, str] = {}
        for server, connection in self.live.items():
            if connection.state != "connected":
                continue
            for spec in connection.tools:
                tool = self._tool(connection, spec)
                if refused_builtin(tool.name, f"MCP server {server!r}"):
                    continue
                if tool.name in out:
                    out[tool.name] = _shared(out[tool.name], tool, owner[tool.name], server)
                    continue
                out[tool.name], owner[tool.name] = tool, server
        return out

    def _start(self, config: ServerConfig) -> Connection:
        loop = task_loop()
        folder = self.host.db_path.with_name(self.host.db_path.name + ".mcp")
        connection = Connection(config, folder / f"{config.name}.log")
        connection.on_change = self.changed
        connection.start(loop)
        self.live[config.name] = connection
        self.changed()
        return connection

    def _tool(self, connection: Connection, spec: Any) -> Tool:
        server, remote = connection.config.name, spec.name

        async def call(**arguments: Any) -> Any:
            result = await connection.call(remote, arguments)
            try:  # what the server answers is scrubbed of its secrets, as all it says (issue 28 §5)
                return connection.scrub_value(output(server, remote, result))
            except McpCallError as exc:
                raise McpCallError(connection.scrub_value(str(exc))) from None

        return Tool(name=tool_name(server, remote),
                    description=f"{(spec.description or remote).strip()} (MCP server {server})",
                    parameters=spec.input_schema or {"type": "object", "properties": {}},
                    function=call, needs_approval=self._approval(connection.config, server, remote))

    def _approval(self, config: ServerConfig, server: str, remote: str) -> Any:
        predicate = self.predicates.get(server)
        if predicate is not None:
            return lambda arguments: predicate(server, remote, arguments)
        if isinstance(config.approval, list):
            return remote in config.approval
        return bool(config.approval)


def _shared(first: Tool, second: Tool, first_server: str, second_server: str) -> Tool:
    """The tool serving a name two servers give: `first`'s, needing approval if either needs it."""
    log.warning("tool %r: MCP servers %r and %r both give this name; %r (added first) serves it, needing "
                "approval if either server's tool does; %r's is not offered", first.name, first_server,
                second_server, first_server, second_server)
    return combined(first, second)


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: `<server>_<tool>`, other characters as `_`, at most 64."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}_{tool}")[:64]


def output(server: str, tool: str, result: Any) -> Any:
    """What the model gets from a `CallToolResult` (see the module docstring); raises
    `McpCallError` for an error result."""
    blocks = list(getattr(result, "content", None) or [])
    texts = [getattr(b, "text", None) for b in blocks]
    if getattr(result, "is_error", None):
        message = " ".join(t for t in texts if t) or "the tool reported an error"
        raise McpCallError(f"MCP server {server!r}, tool {tool!r}: {message}")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured
    if blocks and all(t is not None for t in texts):
        return "\n".join(t for t in texts if t is not None)
    return [b.model_dump(mode="json") if hasattr(b, "model_dump") else str(b) for b in blocks]


def merge(local: dict[str, Tool], remote: dict[str, Tool]) -> dict[str, Tool]:
    """`local` then `remote` (later keys win, as Think merges), warning about each clash."""
    for name in local.keys() & remote.keys():
        log.warning("tool %r: the MCP tool replaces the local tool of the same name (later sources win)", name)
    return {**local, **remote}

