"""The turn log (table `turns`): one row per turn with trigger, status and timings.

Think emits `chat:turn:start` / `chat:turn:finish` events with request id, trigger, status and
duration; here they are rows, read with `agent.turns()`. Triggers: `panel`, `cell`,
`programmatic`, `chat`, `continuation`, `regenerate`, `step`. A row stays `running` only while
its turn runs.
"""

from __future__ import annotations

import time

from think_nb.store.db import Database

COLUMNS = ("request_id", "trigger", "continuation", "status", "error", "started_at", "finished_at", "duration_ms")


class TurnLog:
    """The turn log of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def start(self, request_id: str, trigger: str, continuation: bool) -> float:
        """Record a turn as `running`; returns its start time (epoch seconds)."""
        started = time.time()
        self.db.execute("INSERT OR REPLACE INTO turns (agent_key, request_id, trigger, continuation, status, "
                        "started_at) VALUES (?, ?, ?, ?, 'running', ?)",
                        (self.agent_key, request_id, trigger, int(continuation), started))
        return started

    def finish(self, request_id: str, status: str, error: str | None, started: float) -> None:
        """Settle a turn with its outcome."""
        finished = time.time()
        self.db.execute("UPDATE turns SET status = ?, error = ?, finished_at = ?, duration_ms = ? "
                        "WHERE agent_key = ? AND request_id = ?",
                        (status, error, finished, (finished - started) * 1000, self.agent_key, request_id))

    def read(self, limit: int | None = None) -> list[dict]:
        """Turns, oldest first: `{request_id, trigger, continuation, status, error, started_at,
        finished_at (epoch s), duration_ms}`."""
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM turns WHERE agent_key = ? ORDER BY seq DESC LIMIT ?",
                            (self.agent_key, limit or -1))
        return [dict(zip(COLUMNS, (*row[:2], bool(row[2]), *row[3:]), strict=True)) for row in reversed(rows)]
