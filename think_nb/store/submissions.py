"""The submission ledger (table `think_submissions`; Think's `cf_think_submissions`).

One row per `submit_messages` call, written before any inference: the messages as accepted,
their digest (idempotency), status and timings. Drained oldest first by
`think_nb.submissions`. Status: pending | running | completed | aborted | skipped | error.
"""

from __future__ import annotations

import time
from typing import Any

from think_nb import jsonsafe
from think_nb.store import owners
from think_nb.store.db import Database

TERMINAL = ("completed", "aborted", "skipped", "error")
COLUMNS = ("seq", "id", "idempotency_key", "request_id", "status", "messages", "digest", "error", "metadata", "owner",
           "created_at", "started_at", "completed_at")


class SubmissionRows:
    """The submissions of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def accept(self, submission_id: str, idempotency_key: str | None, messages: list[dict], digest: str,
               metadata: Any) -> tuple[dict, bool]:
        """Insert a `pending` row, unless one with this id or key exists: `(row, inserted)`; the
        check and the insert are one transaction."""
        with self.db.write() as c:
            found = self._find(c, submission_id, idempotency_key)
            if found is not None:
                return found, False
            c.execute("INSERT INTO think_submissions (agent_key, id, idempotency_key, status, messages, digest, "
                      "metadata, created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)",
                      (self.agent_key, submission_id, idempotency_key, jsonsafe.dumps_stored(messages), digest,
                       None if metadata is None else jsonsafe.dumps_stored(metadata), time.time()))
            row = self._find(c, submission_id, None)
            assert row is not None
            return row, True

    def get(self, submission_id: str) -> dict | None:
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_submissions WHERE agent_key = ? AND id = ?",
                            (self.agent_key, submission_id))
        return _row(rows[0]) if rows else None

    def next_pending(self) -> dict | None:
        """The oldest `pending` row."""
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_submissions WHERE agent_key = ? "
                            "AND status = 'pending' ORDER BY seq LIMIT 1", (self.agent_key,))
        return _row(rows[0]) if rows else None

    def start(self, submission_id: str, request_id: str) -> bool:
        """`pending` → `running` (owned by this process); False when it is no longer pending."""
        with self.db.write() as c:
            cur = c.execute("UPDATE think_submissions SET status = 'running', request_id = ?, owner = ?, "
                            "started_at = ? WHERE agent_key = ? AND id = ? AND status = 'pending'",
                            (request_id, owners.PROCESS, time.time(), self.agent_key, submission_id))
            return cur.rowcount == 1

    def finish(self, submission_id: str, status: str, error: str | None, *, only_from: tuple[str, ...]) -> bool:
        """Settle a row whose status is one of `only_from` (a cancelled row is never overwritten)."""
        marks = ", ".join("?" for _ in only_from)
        with self.db.write() as c:
            cur = c.execute(f"UPDATE think_submissions SET status = ?, error = ?, completed_at = ? WHERE agent_key = ? "
                            f"AND id = ? AND status IN ({marks})",
                            (status, error, time.time(), self.agent_key, submission_id, *only_from))
            return cur.rowcount == 1

    def skip_pending(self) -> list[str]:
        """Every `pending` row becomes `skipped` (the conversation was cleared); returns their ids, oldest first."""
        with self.db.write() as c:
            rows = c.execute("UPDATE think_submissions SET status = 'skipped', completed_at = ? WHERE agent_key = ? "
                             "AND status = 'pending' RETURNING seq, id", (time.time(), self.agent_key)).fetchall()
            return [submission_id for _, submission_id in sorted(rows)]

    def requeue(self, submission_id: str) -> None:
        """A `running` row whose messages were never applied goes back to `pending`."""
        self.db.execute("UPDATE think_submissions SET status = 'pending', request_id = NULL, owner = NULL, "
                        "started_at = NULL WHERE agent_key = ? AND id = ? AND status = 'running'",
                        (self.agent_key, submission_id))

    def adopt(self, submission_id: str) -> bool:
        """A dead process's `running` row is continued by this process (its turn's recovery): owned
        by this process from now on; False when it is no longer running."""
        with self.db.write() as c:
            cur = c.execute("UPDATE think_submissions SET owner = ? WHERE agent_key = ? AND id = ? "
                            "AND status = 'running'", (owners.PROCESS, self.agent_key, submission_id))
            return cur.rowcount == 1

    def orphaned(self) -> list[dict]:
        """`running` rows a dead process owned, oldest first (`think_nb.store.owners`)."""
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_submissions WHERE agent_key = ? "
                            "AND status = 'running' AND (owner IS NULL OR owner != ?) ORDER BY seq",
                            (self.agent_key, owners.PROCESS))
        return [_row(r) for r in rows if not self.db.owners.alive(r[COLUMNS.index("owner")])]

    def select(self, status: str | None = None, limit: int | None = None) -> list[dict]:
        where, params = "agent_key = ?", [self.agent_key]
        if status is not None:
            where += " AND status = ?"
            params.append(status)
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_submissions WHERE {where} ORDER BY seq LIMIT ?",
                            (*params, limit if limit is not None else -1))
        return [_row(r) for r in rows]

    def delete(self, *, ids: list[str] | None = None, status: str | None = None, completed_before: float | None = None,
               limit: int | None = None) -> int:
        """Delete terminal rows (never pending or running ones) matching the filters; returns how many."""
        where = f"agent_key = ? AND status IN ({', '.join('?' for _ in TERMINAL)})"
        params: list[Any] = [self.agent_key, *TERMINAL]
        if ids is not None:
            where += f" AND id IN ({', '.join('?' for _ in ids)})"
            params += ids
        if status is not None:
            where += " AND status = ?"
            params.append(status)
        if completed_before is not None:
            where += " AND completed_at < ?"
            params.append(completed_before)
        with self.db.write() as c:
            seqs = [s for (s,) in c.execute(f"SELECT seq FROM think_submissions WHERE {where} ORDER BY seq LIMIT ?",
                                             (*params, limit if limit is not None else -1))]
            for seq in seqs:
                c.execute("DELETE FROM think_submissions WHERE seq = ?", (seq,))
            return len(seqs)

    def _find(self, c: Any, submission_id: str, idempotency_key: str | None) -> dict | None:
        row = c.execute(f"SELECT {', '.join(COLUMNS)} FROM think_submissions WHERE agent_key = ? AND id = ?",
                        (self.agent_key, submission_id)).fetchone()
        if row is None and idempotency_key is not None:
            row = c.execute(f"SELECT {', '.join(COLUMNS)} FROM think_submissions WHERE agent_key = ? "
                            "AND idempotency_key = ?", (self.agent_key, idempotency_key)).fetchone()
        return _row(row) if row is not None else None


def _row(row: tuple) -> dict:
    out = dict(zip(COLUMNS, row, strict=True))
    out["messages"] = jsonsafe.loads_stored(out["messages"])
    out["metadata"] = jsonsafe.loads_stored(out["metadata"]) if out["metadata"] is not None else None
    return out
