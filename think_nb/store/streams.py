"""The resumable stream (tables `think_stream_metadata` + `think_stream_chunks`; Think's
`cf_ai_chat_stream_metadata` / `cf_ai_chat_stream_chunks`).

Each turn being streamed has a metadata row (continuation flag, status, owning process) and
segments: JSON lists of coalesced UIMessageChunks, appended in order. A view created
mid-stream replays the segments; an agent created after its kernel died finds rows still
`streaming` that another process owned and recovers the partial reply from them
(`think_nb.turns.recovery`). Status: streaming | completed | error | aborted | skipped |
interrupted. The writer is the engine (`think_nb.turns.recorder`), never a view.
"""

from __future__ import annotations

import time

from think_nb import jsonsafe
from think_nb.store import owners
from think_nb.store.db import Database

DROP_EVERY_S = 10.0
"""`StreamStore.drop_finished` runs at most this often (seconds) per agent."""


class StreamStore:
    """The stream rows of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key
        self._dropped_at = float("-inf")  # monotonic time of the last `drop_finished` that ran

    def set_status(self, request_id: str, continuation: bool, status: str) -> None:
        """Create or update a turn's metadata row (owned by this process)."""
        now = time.time()
        self.db.execute("INSERT INTO think_stream_metadata VALUES (?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT (agent_key, request_id) "
                        "DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at",
                        (self.agent_key, request_id, int(continuation), status, owners.PROCESS, now, now))

    def append(self, request_id: str, segment: list[dict]) -> None:
        """Append one segment (a list of chunks) in one transaction."""
        self.db.execute("INSERT INTO think_stream_chunks (agent_key, request_id, chunks, created_at) "
                        "VALUES (?, ?, ?, ?)",
                        (self.agent_key, request_id, jsonsafe.dumps_chunks(segment), time.time()))

    def meta(self, request_id: str) -> tuple[bool, str] | None:
        """`(continuation, status)` of a stored turn, or None."""
        rows = self.db.read("SELECT continuation, status FROM think_stream_metadata "
                            "WHERE agent_key = ? AND request_id = ?",
                            (self.agent_key, request_id))
        return (bool(rows[0][0]), rows[0][1]) if rows else None

    def segments(self, request_id: str) -> list[list[dict]]:
        """The stored segments of a turn, in order."""
        return [jsonsafe.loads_stored(s) for (s,) in self.db.read(
            "SELECT chunks FROM think_stream_chunks WHERE agent_key = ? AND request_id = ? ORDER BY seq",
            (self.agent_key, request_id))]

    def latest(self) -> tuple[str, str] | None:
        """`(request_id, status)` of the newest stored turn, or None."""
        rows = self.db.read("SELECT request_id, status FROM think_stream_metadata WHERE agent_key = ? "
                            "ORDER BY created_at DESC, rowid DESC LIMIT 1", (self.agent_key,))
        return (rows[0][0], rows[0][1]) if rows else None

    def orphaned(self) -> list[str]:
        """Turns still `streaming` that a dead process wrote, oldest first (a live second process's
        turns are not orphans: `think_nb.store.owners`)."""
        rows = self.db.read("SELECT request_id, owner FROM think_stream_metadata WHERE agent_key = ? AND "
                            "status = 'streaming' AND owner != ? ORDER BY created_at", (self.agent_key, owners.PROCESS))
        return [r for r, owner in rows if not self.db.owners.alive(owner)]

    def mark(self, request_id: str, status: str) -> None:
        """Set a turn's status, whoever owned it."""
        self.db.execute("UPDATE think_stream_metadata SET status = ?, updated_at = ? "
                        "WHERE agent_key = ? AND request_id = ?",
                        (status, time.time(), self.agent_key, request_id))

    def drop_finished(self, older_than_s: float) -> None:
        """Delete the rows of turns that finished more than `older_than_s` seconds ago; at most
        once every `DROP_EVERY_S` seconds (the query reads every row of the agent's recent turns,
        so a turn's cost would grow with the turns of the last `older_than_s` seconds; rows are
        kept that much longer at most)."""
        if time.monotonic() - self._dropped_at < DROP_EVERY_S:
            return
        self._dropped_at = time.monotonic()
        cutoff = time.time() - older_than_s
        with self.db.write() as c:
            old = [r for (r,) in c.execute("SELECT request_id FROM think_stream_metadata WHERE agent_key = ? AND "
                                           "status != 'streaming' AND updated_at < ?", (self.agent_key, cutoff))]
            for rid in old:
                c.execute("DELETE FROM think_stream_chunks WHERE agent_key = ? AND request_id = ?",
                          (self.agent_key, rid))
                c.execute("DELETE FROM think_stream_metadata WHERE agent_key = ? AND request_id = ?",
                          (self.agent_key, rid))

    def clear(self) -> None:
        """Delete every stream row of the agent (`clear_messages`)."""
        with self.db.write() as c:
            c.execute("DELETE FROM think_stream_chunks WHERE agent_key = ?", (self.agent_key,))
            c.execute("DELETE FROM think_stream_metadata WHERE agent_key = ?", (self.agent_key,))
