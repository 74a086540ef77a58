"""The session rows of an agent (table `think_sessions`): id, name, fork origin, times.

The default session has id "" and name "default"; its messages are stored under the agent key,
session S's under "<agent key>#S" (`think_nb.store.messages.conversation_key`). The logic
(create, switch, fork, ...) is `think_nb.session.sessions`.
"""

from __future__ import annotations

import time

from think_nb.store.db import Database

DEFAULT_NAME = "default"


class SessionStore:
    """The `think_sessions` rows of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def ensure_default(self) -> None:
        now = time.time()
        self.db.execute("INSERT OR IGNORE INTO think_sessions VALUES (?, '', ?, NULL, NULL, ?, ?)",
                        (self.agent_key, DEFAULT_NAME, now, now))

    def ids_of(self, ref: str) -> list[str]:
        """`[ref]` when a session has id `ref`, else the ids of the sessions named `ref` (point
        lookups: resolving a session costs the same with 10 sessions or 10,000)."""
        self.ensure_default()
        by_id = self.db.read("SELECT id FROM think_sessions WHERE agent_key = ? AND id = ?", (self.agent_key, ref))
        if by_id:
            return [by_id[0][0]]
        return [r[0] for r in self.db.read("SELECT id FROM think_sessions WHERE agent_key = ? AND name = ? "
                                           "ORDER BY created_at, rowid", (self.agent_key, ref))]

    def rows(self) -> list[tuple]:
        """`(id, name, parent_session_id, forked_from_message_id, created_at, updated_at, messages)`, oldest first."""
        self.ensure_default()
        return self.db.read(
            "SELECT s.id, s.name, s.parent_session_id, s.forked_from_message_id, s.created_at, s.updated_at, "
            "(SELECT count(*) FROM think_messages m WHERE m.agent_key = CASE s.id WHEN '' THEN s.agent_key "
            "ELSE s.agent_key || '#' || s.id END) FROM think_sessions s WHERE s.agent_key = ? "
            "ORDER BY s.created_at, s.rowid",
            (self.agent_key,))

    def insert(self, session_id: str, name: str, parent: str | None, forked_from: str | None) -> None:
        self.ensure_default()
        now = time.time()
        self.db.execute("INSERT INTO think_sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (self.agent_key, session_id, name, parent, forked_from, now, now))

    def rename(self, session_id: str, name: str) -> None:
        self.db.execute("UPDATE think_sessions SET name = ?, updated_at = ? WHERE agent_key = ? AND id = ?",
                        (name, time.time(), self.agent_key, session_id))

    def delete(self, session_id: str) -> None:
        self.db.execute("DELETE FROM think_sessions WHERE agent_key = ? AND id = ?", (self.agent_key, session_id))
