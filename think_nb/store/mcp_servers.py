"""The MCP servers of one agent (table `think_mcp_servers`; Think's `cf_agents_mcp_servers`).

What is needed to connect again when the agent is created: name, transport, command or URL,
arguments, environment and headers (secret values only as `${VAR}` references: see
`think_nb.mcp.config`), which tools need approval (names; a predicate is not stored), and the
call timeout. Connection state lives in memory (`think_nb.mcp.connection`).
"""

from __future__ import annotations

import time

from think_nb import jsonsafe
from think_nb.store.db import Database

COLUMNS = ("name", "transport", "target", "args", "env", "headers", "approval", "timeout", "created_at")
JSON_COLUMNS = ("args", "env", "headers", "approval")


class McpServerRows:
    """The MCP server rows of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def put(self, row: dict) -> None:
        self.db.execute(f"INSERT OR REPLACE INTO think_mcp_servers (agent_key, {', '.join(COLUMNS)}) VALUES "
                        f"(?, {', '.join('?' for _ in COLUMNS)})",
                        (self.agent_key, *(jsonsafe.dumps_stored(row[c]) if c in JSON_COLUMNS else row[c]
                                           for c in COLUMNS[:-1]), time.time()))

    def all(self) -> list[dict]:
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_mcp_servers WHERE agent_key = ? "
                            "ORDER BY created_at", (self.agent_key,))
        out = []
        for row in rows:
            item = dict(zip(COLUMNS, row, strict=True))
            for c in JSON_COLUMNS:
                item[c] = jsonsafe.loads_stored(item[c])
            out.append(item)
        return out

    def delete(self, name: str) -> bool:
        return self.db.execute("DELETE FROM think_mcp_servers WHERE agent_key = ? AND name = ?",
                               (self.agent_key, name)).rowcount == 1
