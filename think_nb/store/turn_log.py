"""The turn log (table `think_turns`): one row per turn with trigger, status and timings.

Think emits `chat:turn:start` / `chat:turn:finish` events with request id, trigger, status and
duration; here they are rows, read with `agent.turns()`. Triggers: `panel`, `cell`, `send`,
`save_messages`, `programmatic` (`submit` from code), `chat`, `continuation`, `regenerate`, `step`, `recovery-continue`,
`recovery-retry`, `submission`. A row stays `running` only while its turn runs; each row names
the process that ran it (`owner`), so one left `running` by a process that died is found
(`orphaned`) and settled `interrupted` when the agent is created again.
"""

from __future__ import annotations

import time

from think_nb.store import owners
from think_nb.store.db import Database

COLUMNS = ("request_id", "trigger", "continuation", "status", "error", "started_at", "finished_at", "duration_ms")


class TurnLog:
    """The turn log of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def start(self, request_id: str, trigger: str, continuation: bool) -> float:
        """Record a turn as `running`; returns its start time (epoch seconds)."""
        started = time.time()
        self.db.execute("INSERT OR REPLACE INTO think_turns (agent_key, request_id, trigger, continuation, status, "
                        "started_at, owner) VALUES (?, ?, ?, ?, 'running', ?, ?)",
                        (self.agent_key, request_id, trigger, int(continuation), started, owners.PROCESS))
        return started

    def finish(self, request_id: str, status: str, error: str | None, started: float) -> None:
        """Settle a turn with its outcome."""
        finished = time.time()
        self.db.execute("UPDATE think_turns SET status = ?, error = ?, finished_at = ?, duration_ms = ? "
                        "WHERE agent_key = ? AND request_id = ?",
                        (status, error, finished, (finished - started) * 1000, self.agent_key, request_id))

    def read(self, limit: int | None = None) -> list[dict]:
        """Turns, oldest first: `{request_id, trigger, continuation, status, error, started_at,
        finished_at (epoch s), duration_ms}`."""
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_turns WHERE agent_key = ? "
                            "ORDER BY seq DESC LIMIT ?", (self.agent_key, limit or -1))
        return [dict(zip(COLUMNS, (*row[:2], bool(row[2]), *row[3:]), strict=True)) for row in reversed(rows)]

    def get(self, request_id: str) -> dict | None:
        """One turn's row (as `read` gives it), or None."""
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_turns WHERE agent_key = ? AND request_id = ?",
                            (self.agent_key, request_id))
        return dict(zip(COLUMNS, (*rows[0][:2], bool(rows[0][2]), *rows[0][3:]), strict=True)) if rows else None

    def orphaned(self) -> list[dict]:
        """Turns still `running` that a dead process ran, oldest first (a live second process's
        turns are not orphans: `think_nb.store.owners`)."""
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)}, owner FROM think_turns WHERE agent_key = ? AND "
                            "status = 'running' AND (owner IS NULL OR owner != ?) ORDER BY seq",
                            (self.agent_key, owners.PROCESS))
        return [dict(zip(COLUMNS, (*row[:2], bool(row[2]), *row[3:-1]), strict=True)) for row in rows
                if not self.db.owners.alive(row[-1])]

    def settle_interrupted(self, request_id: str, error: str) -> None:
        """Settle a turn a dead process left `running` (its duration is unknown: None)."""
        self.db.execute("UPDATE think_turns SET status = 'interrupted', error = ?, finished_at = ? "
                        "WHERE agent_key = ? AND request_id = ? AND status = 'running'",
                        (error, time.time(), self.agent_key, request_id))
