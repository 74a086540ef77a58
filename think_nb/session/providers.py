"""Context-block providers: where a block's content comes from, and whether the model may write it.

A provider is duck-typed, as in Think (`session/context.ts`); every method may be sync or async:

- `readonly`: `get() -> str`. The model reads it (in the prompt).
- `writable`: `get()`, `set(content)`. The model may `set_context`.
- `skill`: `get()` = catalogue, `load(key)`, optionally `set(key, content, description=None)`.
  The model may `load_context` / `unload_context`.
- `search`: `get()` (optional), `search(query) -> [(key, content)]`, optionally `set(key, content)`.
  The model may `search_context`.

A block without a provider is writable and stored in SQLite (`SqliteBlockProvider`);
`SqliteSearchProvider` is a ready-made search provider over SQLite's FTS5.
"""

from __future__ import annotations

import re
import time
from typing import Any

from think_nb.store.db import Database

KINDS = ("readonly", "writable", "skill", "search")


def provider_kind(provider: Any) -> str:
    """`skill` (has `load`), `search` (has `search`), `writable` (has `set`) or `readonly`."""
    if callable(getattr(provider, "load", None)):
        return "skill"
    if callable(getattr(provider, "search", None)):
        return "search"
    if callable(getattr(provider, "set", None)):
        return "writable"
    return "readonly"


class SqliteBlockProvider:
    """The default writable provider: one row of `context_blocks` per (agent, label).

    Writes are durable at once and shared by every session of the agent (Think: "writes persist
    across sessions").
    """

    def __init__(self, db: Database, agent_key: str, label: str) -> None:
        self.db, self.agent_key, self.label = db, agent_key, label

    def get(self) -> str:
        rows = self.db.read("SELECT content FROM context_blocks WHERE agent_key = ? AND label = ?",
                            (self.agent_key, self.label))
        return rows[0][0] if rows else ""

    def set(self, content: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO context_blocks VALUES (?, ?, ?, ?)",
                        (self.agent_key, self.label, content, time.time()))


class SqliteSearchProvider:
    """A searchable block over `search_entries` + FTS5 (Think's `AgentSearchProvider`).

    `search(query)` quotes each word and requires all of them (implicit AND), best bm25 rank
    first, at most `limit` entries; a query with no words returns [].
    """

    def __init__(self, db: Database, agent_key: str, label: str, limit: int = 10) -> None:
        self.db, self.agent_key, self.label, self.limit = db, agent_key, label, limit

    def get(self) -> str:
        rows = self.db.read("SELECT count(*) FROM search_entries WHERE agent_key = ? AND label = ?",
                            (self.agent_key, self.label))
        return f"{rows[0][0]} entries; search them with search_context." if rows[0][0] else ""

    def set(self, key: str, content: str) -> None:
        now = time.time()
        self.db.execute("INSERT INTO search_entries (agent_key, label, key, content, created_at, updated_at) "
                        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_key, label, key) DO UPDATE SET "
                        "content = excluded.content, updated_at = excluded.updated_at",
                        (self.agent_key, self.label, key, content, now, now))

    def search(self, query: str) -> list[tuple[str, str]]:
        match = and_query(query)
        if not match:
            return []
        return [(k, c) for k, c in self.db.read(
            "SELECT e.key, e.content FROM search_entries_fts f JOIN search_entries e ON e.seq = f.rowid "
            "WHERE search_entries_fts MATCH ? AND e.agent_key = ? AND e.label = ? ORDER BY f.rank LIMIT ?",
            (match, self.agent_key, self.label, self.limit))]


def and_query(query: str) -> str:
    """An FTS5 query that requires every word of `query`, each quoted (so `AND`, `*`, `"` are
    plain text): `'foo bar'` -> `'"foo" "bar"'`; "" when there are no words."""
    words = re.findall(r"\w+", query or "")
    return " ".join(f'"{w}"' for w in words)


def phrase_query(query: str) -> str:
    """The whole query as one quoted FTS5 phrase (Think's `session.search`); "" when empty."""
    words = re.findall(r"\w+", query or "")
    return '"' + " ".join(words) + '"' if words else ""
