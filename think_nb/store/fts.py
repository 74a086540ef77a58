"""Full-text queries over the messages' FTS5 indexes (the tables are made by migrations m003, m013).

- `think_messages_fts` (porter unicode61): every message's text; single words and all-words queries.
- `think_messages_pairs`: each message's adjacent terms as single tokens ("the_red red_fox fox_"), for
  phrases of two or more terms: one short list per pair instead of merging the position lists of
  the phrase's words, with the same rows and the same bm25 ranks (see `m013_message_pairs`).

Snippets always come from the message's own text and the phrase as typed, for the returned rows
only. The TEMP tables used here belong to the connection: reads stay reads of the file.
"""

from __future__ import annotations

import itertools

from think_nb.store.db import Database

_RANKED_SQL = """
SELECT m.seq, m.id, m.role, m.agent_key, m.created_at, {snippet}, f.rank, m.content
FROM {table} f JOIN think_messages m ON m.seq = f.rowid
WHERE {table} MATCH :match AND m.agent_key IN ({keys}) AND f.rowid >= coalesce((
    SELECT min(seq) FROM (SELECT w.rowid AS seq FROM {table} w JOIN think_messages wm ON wm.seq = w.rowid
                          WHERE {table} MATCH :match AND wm.agent_key IN ({keys})
                          ORDER BY w.rowid DESC LIMIT :window)), 0)
ORDER BY f.rank LIMIT :limit
"""
# bm25 ranks the newest `window` matches of the conversations (the subquery finds the oldest of them).
# The snippet of a `think_messages_fts` row comes with it; `think_messages_pairs` rows get theirs after (NULL here).

_SNIPPET = "snippet({table}, 0, '[', ']', '…', 12)"


def fts_rows(db: Database, conversation_keys: list[str], match: str, limit: int, window: int,
             pairs: str = "") -> list[tuple]:
    """Full-text matches over messages of the given conversations, best bm25 rank first:
    `(id, role, conversation_key, created_at, snippet, rank, content_json)`. bm25 ranks only the
    newest `window` matches. With `pairs` (the phrase `match` as `phrase_pairs` gives it), the
    matches are found and ranked on `think_messages_pairs`: the same rows and ranks, faster.

    Raises:
        sqlite3.OperationalError: a query FTS5 cannot parse.
    """
    keys = ", ".join(f":k{n}" for n in range(len(conversation_keys)))
    params = {"match": pairs or match, "limit": int(limit), "window": window,
              **{f"k{n}": k for n, k in enumerate(conversation_keys)}}
    table, snippet = (("think_messages_pairs", "NULL") if pairs
                      else ("think_messages_fts", _SNIPPET.format(table="think_messages_fts")))
    ranked = db.read(_RANKED_SQL.format(table=table, snippet=snippet, keys=keys), params)
    snippets = _snippets(db, [row[0] for row in ranked], match) if pairs and ranked else {}
    return [(i, role, key, created, snippet if snippet is not None else snippets.get(seq, ""), rank, content)
            for seq, i, role, key, created, snippet, rank, content in ranked]


def _snippets(db: Database, seqs: list[int], match: str) -> dict[int, str]:
    """`{seq: snippet}` of those messages for `match`: their text indexed again in a TEMP table of a
    few rows (an FTS5 snippet depends on the row and the query only), so no seek into the large
    position lists of `think_messages_fts` (2 ms for 20 rows of a common two-word phrase, 0.7 here)."""
    with db.locked() as conn:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.think_found_text USING fts5(content, "
                     "tokenize='porter unicode61')")
        conn.execute("DELETE FROM temp.think_found_text")
        conn.execute("INSERT INTO temp.think_found_text (rowid, content) SELECT rowid, content FROM think_messages_fts "
                     "WHERE rowid IN (SELECT value FROM json_each(?))", (f"[{','.join(map(str, seqs))}]",))
        return dict(conn.execute(f"SELECT rowid, {_SNIPPET.format(table='think_found_text')} "
                                 "FROM temp.think_found_text WHERE think_found_text MATCH ?", (match,)).fetchall())


def phrase_pairs(db: Database, words: str) -> str:
    """The phrase `words` as a query of `think_messages_pairs`: its FTS5 terms (porter unicode61, as
    `think_messages_fts` makes them) joined pairwise, "red foxes run" -> '"red_fox fox_run"'; "" when it
    has fewer than two terms. FTS5 itself tokenizes, in a TEMP table of the connection. One word
    without "_" (the words are `\\w+` runs) is one term at most: FTS5 is not asked."""
    if " " not in words and "_" not in words:
        return ""
    with db.locked() as conn:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.think_query_terms USING fts5(content, content='', "
                     "tokenize='porter unicode61')")
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.think_query_terms_vocab "
                     "USING fts5vocab(temp, think_query_terms, instance)")
        conn.execute("INSERT INTO temp.think_query_terms (think_query_terms) VALUES ('delete-all')")
        conn.execute("INSERT INTO temp.think_query_terms (rowid, content) VALUES (1, ?)", (words,))
        terms = [term for (term,) in conn.execute("SELECT term FROM temp.think_query_terms_vocab ORDER BY offset")]
    return '"' + " ".join(f"{a}_{b}" for a, b in itertools.pairwise(terms)) + '"' if len(terms) > 1 else ""
