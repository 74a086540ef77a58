"""Batch runs' rows (tables `think_batch_runs`, `think_batch_rows`; `think_nb.batch`).

A run's rows are claimed and settled through the submissions ledger (`think_submissions`, one
row per DataFrame row, under the agent key `<agent key>/map:<run id>`, which no agent drains):
`pending` until a lane claims it (`running`, owned by this process), then `completed | error |
aborted`. A row's result (its results-table row as JSON) is written in the same transaction that
settles its ledger row, so a settled row always has its result and a kill between the two cannot
happen. `think_batch_runs` keeps what the run was asked (`spec`) and its status (`damaged` when its spec
no longer reads as a JSON object: the run is listed, nothing of it is lost).
"""

from __future__ import annotations

import hashlib
import json
import time

from think_nb import jsonsafe
from think_nb.store import owners
from think_nb.store.db import Database
from think_nb.store.submissions import TERMINAL, SubmissionRows

__all__ = ["TERMINAL", "BatchRows", "RunChanged", "digest"]


def digest(message: dict) -> str:
    """The canonical digest of a row's message (the same run id with another prompt is refused)."""
    return hashlib.sha256(json.dumps(message, sort_keys=True, default=str).encode()).hexdigest()


class BatchRows:
    """The runs of one agent (`agent_key`) and, per run, its rows in the ledger and their results."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def ledger_key(self, run_id: str) -> str:
        return f"{self.agent_key}/map:{run_id}"

    def ledger(self, run_id: str) -> SubmissionRows:
        return SubmissionRows(self.db, self.ledger_key(run_id))

    # -- runs ------------------------------------------------------------------------------------
    def run(self, run_id: str) -> dict | None:
        rows = self.db.read(f"SELECT run_id, spec, status, created_at, updated_at FROM {_T}batch_runs "
                            "WHERE agent_key = ? AND run_id = ?", (self.agent_key, run_id))
        return _run(rows[0]) if rows else None

    def runs(self) -> list[dict]:
        rows = self.db.read(f"SELECT run_id, spec, status, created_at, updated_at FROM {_T}batch_runs "
                            "WHERE agent_key = ? ORDER BY created_at", (self.agent_key,))
        return [_run(r) for r in rows]

    def set_status(self, run_id: str, status: str) -> None:
        self.db.execute(f"UPDATE {_T}batch_runs SET status = ?, updated_at = ? WHERE agent_key = ? AND run_id = ?",
                        (status, time.time(), self.agent_key, run_id))

    def accept(self, run_id: str, spec: dict, rows: list[tuple[str, int, dict]]) -> None:
        """Record the run (once) and each row `(row_key, position, message)` as a `pending`
        submission unless it is in the ledger already; one transaction. Raises `RunChanged` (and
        keeps nothing) when a row's stored message differs from the one given."""
        now, key = time.time(), self.ledger_key(run_id)
        with self.db.write() as c:
            c.execute(f"INSERT OR IGNORE INTO {_T}batch_runs (agent_key, run_id, spec, status, created_at, "
                      "updated_at) VALUES (?, ?, ?, 'running', ?, ?)",
                      (self.agent_key, run_id, jsonsafe.dumps_stored(spec), now, now))
            c.execute(f"UPDATE {_T}batch_runs SET status = 'running', spec = ?, updated_at = ? WHERE agent_key = ? "
                      "AND run_id = ?", (jsonsafe.dumps_stored(spec), now, self.agent_key, run_id))
            known = dict(c.execute(f"SELECT id, digest FROM {_T}submissions WHERE agent_key = ?", (key,)).fetchall())
            changed = [row_key for row_key, _, message in rows
                       if row_key in known and known[row_key] != digest(message)]
            if changed:
                raise RunChanged(changed)
            c.executemany(f"INSERT INTO {_T}submissions (agent_key, id, status, messages, digest, metadata, "
                          "created_at) VALUES (?, ?, 'pending', ?, ?, NULL, ?)",
                          [(key, row_key, jsonsafe.dumps_stored([message]), digest(message), now)
                           for row_key, _, message in rows if row_key not in known])
            c.executemany(f"INSERT OR IGNORE INTO {_T}batch_rows (agent_key, run_id, row_key, position) "
                          "VALUES (?, ?, ?, ?)", [(self.agent_key, run_id, row_key, position)
                                                  for row_key, position, _ in rows])

    # -- rows --------------------------------------------------------------------------------------
    def statuses(self, run_id: str) -> dict[str, str]:
        """`{row_key: ledger status}` of the run's rows."""
        return dict(self.db.read(f"SELECT id, status FROM {_T}submissions WHERE agent_key = ?",
                                 (self.ledger_key(run_id),)))

    def claim(self, run_id: str, row_key: str, request_id: str) -> bool:
        """`pending` → `running`, owned by this process; False when the row is not pending."""
        return self.ledger(run_id).start(row_key, request_id)

    def bind(self, run_id: str, row_key: str, conversation_id: str) -> None:
        """Where the claimed row runs (written before its turn starts, so a kill can be traced)."""
        self.db.execute(f"UPDATE {_T}batch_rows SET conversation_id = ? WHERE agent_key = ? AND run_id = ? "
                        "AND row_key = ?", (conversation_id, self.agent_key, run_id, row_key))

    def settle(self, run_id: str, row_key: str, status: str, error: str | None, result: dict) -> bool:
        """Settle a `running` row with its result, in one transaction; False (nothing written) when
        it is no longer running (a `cancel_run` settled it first)."""
        with self.db.write() as c:
            cur = c.execute(f"UPDATE {_T}submissions SET status = ?, error = ?, completed_at = ? WHERE agent_key = ? "
                            "AND id = ? AND status = 'running'",
                            (status, error, time.time(), self.ledger_key(run_id), row_key))
            if cur.rowcount != 1:
                return False
            c.execute(f"UPDATE {_T}batch_rows SET result = ? WHERE agent_key = ? AND run_id = ? AND row_key = ?",
                      (jsonsafe.dumps_stored(result), self.agent_key, run_id, row_key))
            return True

    def results(self, run_id: str) -> dict[str, dict | None]:
        """`{row_key: result}` of the run's settled rows."""
        rows = self.db.read(f"SELECT row_key, result FROM {_T}batch_rows WHERE agent_key = ? AND run_id = ? "
                            "AND result IS NOT NULL", (self.agent_key, run_id))
        return {k: _loaded(v) for k, v in rows}

    def conversations(self, run_id: str) -> dict[str, str | None]:
        return dict(self.db.read(f"SELECT row_key, conversation_id FROM {_T}batch_rows WHERE agent_key = ? "
                                 "AND run_id = ?", (self.agent_key, run_id)))

    def orphaned(self, run_id: str) -> list[str]:
        """Row keys `running` under a process that is gone (a killed kernel)."""
        rows = self.db.read(f"SELECT id, owner FROM {_T}submissions WHERE agent_key = ? AND status = 'running' "
                            "AND (owner IS NULL OR owner != ?)", (self.ledger_key(run_id), owners.PROCESS))
        return [row_key for row_key, owner in rows if not self.db.owners.alive(owner)]

    def requeue(self, run_id: str, row_key: str) -> None:
        self.ledger(run_id).requeue(row_key)

    def abort_pending(self, run_id: str, reason: str) -> int:
        """Every `pending` row of the run becomes `aborted` (`cancel_run`); returns how many."""
        with self.db.write() as c:
            cur = c.execute(f"UPDATE {_T}submissions SET status = 'aborted', error = ?, completed_at = ? "
                            "WHERE agent_key = ? AND status = 'pending'",
                            (reason, time.time(), self.ledger_key(run_id)))
            return cur.rowcount


_T = "think_"


class RunChanged(Exception):
    """The same run id with other messages for some rows (`keys`)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = keys


def _loaded(text: str | bytes) -> dict | None:
    """A stored result, or None when it is not JSON (an edited file): `batch.outcome.checked` says so."""
    try:
        loaded = jsonsafe.loads_stored(text)
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


def _run(row: tuple) -> dict:
    """A run's row; a spec that is not a JSON object (an edited or damaged file) reads as
    `{"spec": None, "status": "damaged"}`: the run is still listed, its rows and results are
    untouched, and `map` with its run id stores a new spec (`accept`)."""
    run_id, spec, status, created, updated = row
    loaded = _loaded(spec) if isinstance(spec, str | bytes) else None
    return {"run_id": run_id, "spec": loaded, "status": status if loaded is not None else "damaged",
            "created_at": created, "updated_at": updated}
