"""The turn log: one row per turn (trigger, status, timings), for observability.

Think emits `chat:turn:start` / `chat:turn:finish` events with request id, trigger, status and
duration; here they are rows in the agent's SQLite file (table `turns`), read with
`agent.turns()`. Triggers: `panel`, `cell`, `programmatic`, `chat`, `continuation`.
"""

from __future__ import annotations

import time

from think_nb.store.db import Database


def record_start(db: Database, agent_key: str, request_id: str, trigger: str, continuation: bool) -> float:
    started = time.time()
    db.execute("INSERT OR REPLACE INTO turns (agent_key, request_id, trigger, continuation, status, started_at) "
               "VALUES (?, ?, ?, ?, 'running', ?)", (agent_key, request_id, trigger, int(continuation), started))
    return started


def record_finish(db: Database, agent_key: str, request_id: str, status: str, error: str | None,
                  started: float) -> None:
    finished = time.time()
    db.execute("UPDATE turns SET status = ?, error = ?, finished_at = ?, duration_ms = ? "
               "WHERE agent_key = ? AND request_id = ?",
               (status, error, finished, (finished - started) * 1000, agent_key, request_id))


def read(db: Database, agent_key: str, limit: int | None = None) -> list[dict]:
    """Turns of an agent, oldest first: `{request_id, trigger, continuation, status, error,
    started_at, finished_at (epoch s), duration_ms}`."""
    rows = db.read("SELECT request_id, trigger, continuation, status, error, started_at, finished_at, duration_ms "
                   "FROM turns WHERE agent_key = ? ORDER BY seq DESC LIMIT ?", (agent_key, limit or -1))
    keys = ("request_id", "trigger", "continuation", "status", "error", "started_at", "finished_at", "duration_ms")
    return [dict(zip(keys, (*row[:2], bool(row[2]), *row[3:]), strict=True)) for row in reversed(rows)]
