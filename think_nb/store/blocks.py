"""Memory rows (Think's `cf_agents_context_blocks` and `cf_agents_search_entries` + FTS5):

- `BlockRows`: one row of `think_context_blocks` per (agent, label): the content of writable blocks
  without a provider, and the cached system prompt (`_system_prompt:<conversation>` labels);
- `SearchRows`: keyed entries of a searchable block, full-text indexed (`think_search_entries_fts`).
"""

from __future__ import annotations

import time

from think_nb.store.db import Database


class BlockRows:
    """`think_context_blocks` rows of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def get(self, label: str) -> str | None:
        rows = self.db.read("SELECT content FROM think_context_blocks WHERE agent_key = ? AND label = ?",
                            (self.agent_key, label))
        return rows[0][0] if rows else None

    def set(self, label: str, content: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO think_context_blocks VALUES (?, ?, ?, ?)",
                        (self.agent_key, label, content, time.time()))

    def delete(self, label: str) -> None:
        self.db.execute("DELETE FROM think_context_blocks WHERE agent_key = ? AND label = ?", (self.agent_key, label))


class SearchRows:
    """`think_search_entries` of one agent's searchable block `label`."""

    def __init__(self, db: Database, agent_key: str, label: str) -> None:
        self.db, self.agent_key, self.label = db, agent_key, label

    def count(self) -> int:
        return self.db.read("SELECT count(*) FROM think_search_entries WHERE agent_key = ? AND label = ?",
                            (self.agent_key, self.label))[0][0]

    def set(self, key: str, content: str) -> None:
        now = time.time()
        self.db.execute("INSERT INTO think_search_entries (agent_key, label, key, content, created_at, updated_at) "
                        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_key, label, key) DO UPDATE SET "
                        "content = excluded.content, updated_at = excluded.updated_at",
                        (self.agent_key, self.label, key, content, now, now))

    def match(self, fts_query: str, limit: int) -> list[tuple[str, str]]:
        """`(key, content)` of the entries matching an FTS5 query, best bm25 rank first."""
        return [(k, c) for k, c in self.db.read(
            "SELECT e.key, e.content FROM think_search_entries_fts f JOIN think_search_entries e ON e.seq = f.rowid "
            "WHERE think_search_entries_fts MATCH ? AND e.agent_key = ? AND e.label = ? ORDER BY f.rank LIMIT ?",
            (fts_query, self.agent_key, self.label, limit))]
