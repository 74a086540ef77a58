"""Full-text search over the transcript: SQLite FTS5 (`think_messages_fts`, porter + unicode61).

Every message's text parts are indexed by triggers on `think_messages` (migration
`m003_session_memory`), whatever code path writes them. As in Think's `session.search`, the
whole query is matched as one quoted phrase, best bm25 rank first; a query with no words (or
one FTS5 cannot parse) returns [] instead of raising.

Bounded time: ranking every match of a very common word costs time proportional to the matches
(~40 ms for 40,000 of 100,000 messages), so bm25 ranks only the `RANK_WINDOW` most recent
matches (FTS5 walks its rowids newest first, cheaply). Rare terms are unaffected.

Phrases of two or more terms are matched and ranked on `think_messages_pairs` (adjacent term pairs as
single tokens, migration `m013_message_pairs`): the same messages with the same bm25 ranks, but a
pair's list holds only the messages with that pair, where FTS5's own phrase match merges the
position lists of every message holding either word (two common words over 100,000 messages:
3-5x less time, 17 -> ~5 ms). Single words and `all_words` queries use `think_messages_fts`.
"""

from __future__ import annotations

import json
import sqlite3

from think_nb.session.providers import and_query, phrase_query
from think_nb.store.db import Database
from think_nb.store.fts import fts_rows, phrase_pairs

RANK_WINDOW = 2000
"""bm25 ranks at most this many matches: the most recent ones of the searched conversations."""

def search_messages(db: Database, conversation_keys: list[str], query: str, limit: int = 20,
                    all_words: bool = False) -> list[dict]:
    """Messages of the given conversations whose text matches `query`.

    Args:
        conversation_keys: `think_messages.agent_key` values to search (one per session).
        query: words; matched as one phrase (Think), or every word anywhere with `all_words`.
        limit: at most this many results.

    Returns:
        `[{"id", "role", "conversation_key", "created_at", "snippet", "rank", "text"}]`, best
        first; `rank` is FTS5's bm25 (lower is better); `snippet` marks hits with [ ].
    """
    match = and_query(query) if all_words else phrase_query(query)
    if not match or not conversation_keys:
        return []
    pairs = "" if all_words else phrase_pairs(db, match[1:-1])  # the words inside the phrase's quotes
    try:
        rows = fts_rows(db, conversation_keys, match, limit, RANK_WINDOW, pairs)
    except sqlite3.OperationalError:  # a query FTS5 cannot parse
        return []
    return [{"id": i, "role": role, "conversation_key": key, "created_at": created, "snippet": snippet,
             "rank": rank, "text": _text(content)} for i, role, key, created, snippet, rank, content in rows]


def _text(content: str) -> str:
    message = json.loads(content)
    return "\n".join(p.get("text", "") for p in message.get("parts", []) if p.get("type") == "text")
