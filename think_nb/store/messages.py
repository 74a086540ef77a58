"""An agent's UIMessages in SQLite: a tree of messages and a pointer to the current leaf.

The current branch (what the agent and the panel show) is the path from the root to the leaf.
Appending moves the leaf; regenerating appends a sibling under an earlier parent, so the old
reply stays reachable (Think's branch-on-regenerate).
"""

from __future__ import annotations

import json
import time

from think_nb.store.db import Database

LEAF = "leaf_id"

_BRANCH_SQL = """
WITH RECURSIVE chain(id, parent_id, content, depth) AS (
    SELECT id, parent_id, content, 0 FROM messages WHERE agent_key = :agent AND id = :leaf
    UNION ALL
    SELECT m.id, m.parent_id, m.content, chain.depth + 1
    FROM messages m JOIN chain ON m.id = chain.parent_id AND m.agent_key = :agent
)
SELECT content FROM chain ORDER BY depth DESC
"""


class MessageStore:
    """Messages and small state values of one agent (`agent_key` = "<class>:<name>")."""

    def __init__(self, db: Database, agent_key: str, class_name: str, name: str) -> None:
        self.db = db
        self.agent_key = agent_key
        db.execute("INSERT OR IGNORE INTO agents VALUES (?, ?, ?, ?)", (agent_key, class_name, name, time.time()))

    # -- state ----------------------------------------------------------------
    def get_state(self, key: str, default: object = None) -> object:
        rows = self.db.read("SELECT value FROM agent_state WHERE agent_key = ? AND key = ?", (self.agent_key, key))
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else default

    def set_state(self, key: str, value: object) -> None:
        self.db.execute("INSERT OR REPLACE INTO agent_state VALUES (?, ?, ?)",
                        (self.agent_key, key, json.dumps(value)))

    # -- messages -------------------------------------------------------------
    @property
    def leaf_id(self) -> str | None:
        return self.get_state(LEAF)  # type: ignore[return-value]

    def branch(self) -> list[dict]:
        """The current branch, root first."""
        leaf = self.leaf_id
        if leaf is None:
            return []
        return [json.loads(row[0]) for row in self.db.read(_BRANCH_SQL, {"agent": self.agent_key, "leaf": leaf})]

    def append(self, message: dict, parent_id: str | None) -> None:
        """Store a new message under `parent_id` and make it the leaf. Idempotent by id (an
        existing id is updated in place, never re-parented)."""
        now = time.time()
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO messages (agent_key, id, parent_id, role, content, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_key, id) DO UPDATE SET "
                "content = excluded.content, updated_at = excluded.updated_at",
                (self.agent_key, message["id"], parent_id, message["role"], json.dumps(message), now, now))
            conn.execute("INSERT OR REPLACE INTO agent_state VALUES (?, ?, ?)",
                         (self.agent_key, LEAF, json.dumps(message["id"])))

    def update(self, message: dict) -> bool:
        """Replace a stored message's content; returns False when the id is unknown."""
        cursor = self.db.execute("UPDATE messages SET content = ?, updated_at = ? WHERE agent_key = ? AND id = ?",
                                 (json.dumps(message), time.time(), self.agent_key, message["id"]))
        return cursor.rowcount > 0

    def get(self, message_id: str) -> dict | None:
        rows = self.db.read("SELECT content FROM messages WHERE agent_key = ? AND id = ?", (self.agent_key, message_id))
        return json.loads(rows[0][0]) if rows else None

    def set_leaf(self, message_id: str | None) -> None:
        self.set_state(LEAF, message_id)

    def clear(self) -> None:
        """Delete every message of this agent (Think's `clearMessages`)."""
        with self.db.write() as conn:
            conn.execute("DELETE FROM messages WHERE agent_key = ?", (self.agent_key,))
            conn.execute("DELETE FROM agent_state WHERE agent_key = ? AND key = ?", (self.agent_key, LEAF))
