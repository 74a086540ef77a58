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
from typing import Any

from think_nb.store.blocks import BlockRows, SearchRows

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
    """The default writable provider: one `think_context_blocks` row per (agent, label) (`BlockRows`).

    Writes are durable at once and shared by every session of the agent (Think: "writes persist
    across sessions").
    """

    def __init__(self, rows: BlockRows, label: str) -> None:
        self.rows, self.label = rows, label

    def get(self) -> str:
        return self.rows.get(self.label) or ""

    def set(self, content: str) -> None:
        self.rows.set(self.label, content)


class SqliteSearchProvider:
    """A searchable block over `think_search_entries` + FTS5 (Think's `AgentSearchProvider`).

    `search(query)` quotes each word and requires all of them (implicit AND), best bm25 rank
    first, at most `limit` entries; a query with no words returns []. Get one with
    `session.searchable(label)`.
    """

    def __init__(self, rows: SearchRows, limit: int = 10) -> None:
        self.rows, self.limit = rows, limit

    def get(self) -> str:
        count = self.rows.count()
        return f"{count} entries; search them with search_context." if count else ""

    def set(self, key: str, content: str) -> None:
        self.rows.set(key, content)

    def search(self, query: str) -> list[tuple[str, str]]:
        match = and_query(query)
        return self.rows.match(match, self.limit) if match else []


def and_query(query: str) -> str:
    """An FTS5 query that requires every word of `query`, each quoted (so `AND`, `*`, `"` are
    plain text): `'foo bar'` -> `'"foo" "bar"'`; "" when there are no words."""
    words = re.findall(r"\w+", query or "")
    return " ".join(f'"{w}"' for w in words)


def phrase_query(query: str) -> str:
    """The whole query as one quoted FTS5 phrase (Think's `session.search`); "" when it has no word.
    The text goes to FTS5 as typed (quotes doubled), so FTS5's own tokenizer splits it as it split
    the messages: a word in decomposed Unicode (NFD) or an emoji between words still matches."""
    if not query or not re.search(r"\w", query):
        return ""
    return '"' + query.replace('"', '""') + '"'
