"""Stored hook traces and recordings of turns (table `think_turn_traces`), the latest `KEEP_TURNS`
per agent (up to `TRIM_EVERY - 1` more between trims). What a trace holds is
`think_nb.turns.trace`'s business; this module stores it."""

from __future__ import annotations

import time

from think_nb import jsonsafe
from think_nb.store.db import Database

KEEP_TURNS = 100
TRIM_EVERY = 10
"""Saves between two trims of an agent's older traces (the first save of a process trims). Finding
the `KEEP_TURNS`-th newest trace walks that many index entries: once every ten turns instead of
every turn keeps a turn's cost flat (issue 18 §4)."""


class TraceStore:
    """The traces of one agent's turns."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key
        self._since_trim = TRIM_EVERY  # saves since the last trim: the first save trims

    def save(self, request_id: str, rows: list[dict], chunks: list) -> None:
        """Store (or replace) a turn's trace rows and `[(t_ms, chunk)]` recording; keep the newest turns."""
        with self.db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO think_turn_traces (agent_key, request_id, rows, chunks, created_at) "
                         "VALUES (?, ?, ?, ?, ?)", (self.agent_key, request_id, jsonsafe.dumps_chunks(rows),
                                                    jsonsafe.dumps_chunks(chunks), time.time()))
            self._since_trim += 1
            if self._since_trim < TRIM_EVERY:
                return
            self._since_trim = 0
            # a quarter of NOT IN's cost
            conn.execute("DELETE FROM think_turn_traces WHERE agent_key = ? AND seq < coalesce((SELECT seq "
                         "FROM think_turn_traces WHERE agent_key = ? ORDER BY seq DESC LIMIT 1 OFFSET ?), 0)",
                         (self.agent_key, self.agent_key, KEEP_TURNS - 1))

    def load(self, request_id: str | None = None) -> tuple[str, list[dict], list] | None:
        """`(request_id, rows, chunks)` of a stored turn (the latest when `request_id` is None), or None."""
        if request_id is None:
            found = self.db.read("SELECT request_id, rows, chunks FROM think_turn_traces WHERE agent_key = ? "
                                 "ORDER BY seq DESC LIMIT 1", (self.agent_key,))
        else:
            found = self.db.read("SELECT request_id, rows, chunks FROM think_turn_traces WHERE agent_key = ? AND "
                                 "request_id = ?", (self.agent_key, request_id))
        if not found:
            return None
        rid, rows, chunks = found[0]
        return rid, jsonsafe.loads_stored(rows), jsonsafe.loads_stored(chunks or "[]")
