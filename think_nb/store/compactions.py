"""Compaction overlays (table `think_compactions`, Think's `assistant_compactions`): a summary that
replaces the branch range `from_id..to_id` when history is read; the messages stay."""

from __future__ import annotations

import time

from think_nb.store.db import Database

Row = tuple[int, str, str, str, "int | None", float]


class CompactionRows:
    """Overlay rows of one conversation (`conversation_key`)."""

    def __init__(self, db: Database, conversation_key: str) -> None:
        self.db, self.key = db, conversation_key

    def load(self) -> list[Row]:
        """`(id, summary, from_id, to_id, tokens_before, created_at)`, oldest first."""
        return self.db.read("SELECT id, summary, from_id, to_id, tokens_before, created_at FROM think_compactions "
                            "WHERE conversation_key = ? ORDER BY created_at, id", (self.key,))

    def insert(self, summary: str, from_id: str, to_id: str, tokens_before: int | None) -> Row:
        now = time.time()
        with self.db.write() as conn:
            cursor = conn.execute("INSERT INTO think_compactions (conversation_key, summary, from_id, to_id, "
                                  "tokens_before, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                                  (self.key, summary, from_id, to_id, tokens_before, now))
        return (cursor.lastrowid or 0, summary, from_id, to_id, tokens_before, now)
