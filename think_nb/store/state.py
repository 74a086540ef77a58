"""Small per-agent JSON values (table `think_agent_state`): the leaf pointer of each session, Think's
config blob, the last client tools, the active session, ...

`get(key, default)` / `set(key, value)`; values are JSON (None deletes nothing: it stores null).
"""

from __future__ import annotations

from typing import Any

from think_nb import jsonsafe
from think_nb.store.db import Database


class AgentState:
    """The `think_agent_state` rows of one agent (`agent_key` = "<class>:<name>")."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def get(self, key: str, default: Any = None) -> Any:
        rows = self.db.read("SELECT value FROM think_agent_state WHERE agent_key = ? AND key = ?",
                            (self.agent_key, key))
        return jsonsafe.loads_stored(rows[0][0]) if rows and rows[0][0] is not None else default

    def set(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO think_agent_state VALUES (?, ?, ?)",
                        (self.agent_key, key, jsonsafe.dumps_stored(value)))

    def delete(self, key: str) -> None:
        self.db.execute("DELETE FROM think_agent_state WHERE agent_key = ? AND key = ?", (self.agent_key, key))

    def keys(self, prefix: str = "") -> list[str]:
        """The keys starting with `prefix`, sorted."""
        rows = self.db.read("SELECT key FROM think_agent_state WHERE agent_key = ? AND substr(key, 1, ?) = ? "
                            "ORDER BY key", (self.agent_key, len(prefix), prefix))
        return [r[0] for r in rows]

