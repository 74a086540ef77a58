"""Scheduled tasks (table `think_schedules`; Think's `cf_agents_schedules` + `cf_think_scheduled_tasks`).

One row per task of one agent: where it came from (`declared` by `get_scheduled_tasks()` or
`runtime` from `agent.schedule`), when it runs (kind, spec, zone), what it runs (a prompt or a
reference to a handler), and its bookkeeping (next run, last run and outcome, run count). Runs
are claimed with a compare-and-set on `next_run_at` (a retry of a failed run on `retry_at`), so two
processes with the same agent never run one attempt twice. Driven by `think_nb.schedules.scheduler`;
retries: `think_nb.schedules.retry`.
"""

from __future__ import annotations

import time
from typing import Any

from think_nb import jsonsafe
from think_nb.store.db import Database

COLUMNS = ("id", "source", "kind", "spec", "timezone", "seconds", "task", "task_repr", "metadata", "digest",
           "next_run_at", "anchor", "last_run_at", "last_status", "last_error", "runs", "created_at", "updated_at",
           "retry", "attempt", "retry_at", "retry_for")


class ScheduleRows:
    """The scheduled tasks of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def put(self, row: dict) -> None:
        """Insert or replace a task (`row` has every column but the bookkeeping ones; `retry`,
        and the pending retry `attempt` / `retry_at` / `retry_for`, default to none)."""
        now = time.time()
        with self.db.write() as c:
            old = c.execute("SELECT created_at, runs, last_run_at, last_status, last_error FROM think_schedules "
                            "WHERE agent_key = ? AND id = ?", (self.agent_key, row["id"])).fetchone()
            created, runs, last_run, last_status, last_error = old if old is not None else (now, 0, None, None, None)
            c.execute(f"INSERT OR REPLACE INTO think_schedules (agent_key, {', '.join(COLUMNS)}) VALUES "
                      f"(?, {', '.join('?' for _ in COLUMNS)})",
                      (self.agent_key, row["id"], row["source"], row["kind"], row["spec"], row["timezone"],
                       row["seconds"], jsonsafe.dumps_stored(row["task"]), row["task_repr"],
                       None if row.get("metadata") is None else jsonsafe.dumps_stored(row["metadata"]),
                       row["digest"], row["next_run_at"], row["anchor"], last_run, last_status, last_error, runs,
                       created, now, None if row.get("retry") is None else jsonsafe.dumps_stored(row["retry"]),
                       row.get("attempt", 0), row.get("retry_at"), row.get("retry_for")))

    def get(self, task_id: str) -> dict | None:
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_schedules WHERE agent_key = ? AND id = ?",
                            (self.agent_key, task_id))
        return _row(rows[0]) if rows else None

    def all(self) -> list[dict]:
        """Every task, soonest first (disarmed ones last)."""
        return [_row(r) for r in self.db.read(
            f"SELECT {', '.join(COLUMNS)} FROM think_schedules WHERE agent_key = ? "
            "ORDER BY next_run_at IS NULL, next_run_at, id", (self.agent_key,))]

    def delete(self, task_id: str) -> bool:
        return self.db.execute("DELETE FROM think_schedules WHERE agent_key = ? AND id = ?",
                               (self.agent_key, task_id)).rowcount == 1

    def claim(self, task_id: str, scheduled_for: float, next_run_at: float | None, now: float) -> bool:
        """Take the occurrence `scheduled_for`: move `next_run_at` on to `next_run_at` (None:
        disarm) if nobody else did; False when another process claimed it first (or it was
        cancelled or changed)."""
        cur = self.db.execute("UPDATE think_schedules SET next_run_at = ?, last_run_at = ?, last_status = 'running', "
                              "last_error = NULL, runs = runs + 1, attempt = 1, retry_at = NULL, retry_for = NULL, "
                              "updated_at = ? WHERE agent_key = ? AND id = ? AND next_run_at = ?",
                              (next_run_at, now, now, self.agent_key, task_id, scheduled_for))
        return cur.rowcount == 1

    def claim_retry(self, task_id: str, retry_at: float, now: float) -> bool:
        """Take the pending retry due at `retry_at` (its attempt counted); False when another
        process took it, or it was cancelled or superseded by a new occurrence."""
        cur = self.db.execute("UPDATE think_schedules SET retry_at = NULL, attempt = attempt + 1, last_run_at = ?, "
                              "last_status = 'running', runs = runs + 1, updated_at = ? WHERE agent_key = ? AND id = ? "
                              "AND retry_at = ?", (now, now, self.agent_key, task_id, retry_at))
        return cur.rowcount == 1

    def retry_later(self, task_id: str, retry_at: float, retry_for: float, error: str | None) -> None:
        """The attempt failed and another is due at `retry_at` for occurrence `retry_for`."""
        self.db.execute("UPDATE think_schedules SET retry_at = ?, retry_for = ?, last_status = 'retrying', "
                        "last_error = ?, updated_at = ? WHERE agent_key = ? AND id = ?",
                        (retry_at, retry_for, error, time.time(), self.agent_key, task_id))

    def record(self, task_id: str, status: str, error: str | None) -> None:
        """The outcome of the last run (`submitted`, `completed`, `error`, `lost`); no retry of it
        is pending any more."""
        self.db.execute("UPDATE think_schedules SET last_status = ?, last_error = ?, retry_for = NULL, updated_at = ? "
                        "WHERE agent_key = ? AND id = ?",
                        (status, error, time.time(), self.agent_key, task_id))

    def settle(self, task_id: str, status: str, error: str | None) -> None:
        """The outcome of a run's submission, replacing `submitted` (and nothing else: a later
        run may have recorded its own status since)."""
        self.db.execute("UPDATE think_schedules SET last_status = ?, last_error = ?, updated_at = ? "
                        "WHERE agent_key = ? AND id = ? AND last_status = 'submitted'",
                        (status, error, time.time(), self.agent_key, task_id))

    def disarm(self, task_id: str, status: str, error: str) -> None:
        """Stop a task from running again (its handler cannot be found), keeping its row."""
        self.db.execute("UPDATE think_schedules SET next_run_at = NULL, last_status = ?, last_error = ?, "
                        "updated_at = ? WHERE agent_key = ? AND id = ?",
                        (status, error, time.time(), self.agent_key, task_id))


def _row(row: tuple) -> dict[str, Any]:
    out = dict(zip(COLUMNS, row, strict=True))
    out["task"] = jsonsafe.loads_stored(out["task"])
    out["metadata"] = jsonsafe.loads_stored(out["metadata"]) if out["metadata"] is not None else None
    out["retry"] = jsonsafe.loads_stored(out["retry"]) if out["retry"] is not None else None
    return out
