"""The agent-tool run ledger (table `think_child_runs`; Think's `cf_agent_tool_child_runs`).

One row per sub-agent turn one of a parent's tools started (`Think.delegate`), keyed by the
parent's agent key and the run id. Written before the child's turn starts (`begin`, status
`running`, this process as owner, the child's request id bound), settled once (`settle`, only
from `running`: a run settled first, e.g. aborted, is never overwritten). Status: running |
completed | error | aborted | interrupted. `think_nb.agent_tools` decides what the rows mean.
"""

from __future__ import annotations

import time
from typing import Any

from think_nb import jsonsafe
from think_nb.store import owners
from think_nb.store.db import Database

TERMINAL = ("completed", "error", "aborted", "interrupted")
COLUMNS = ("run_id", "child_key", "child_class", "child_name", "class_ref", "parent_request_id", "parent_tool_call_id",
           "request_id", "input_message_id", "status", "summary", "output", "error", "owner", "started_at",
           "finished_at")


class ChildRunRows:
    """The agent-tool runs one agent (the parent) started."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def begin(self, run: dict[str, Any]) -> None:
        """Write run `run` (`COLUMNS` keys; missing ones NULL) as `running`, owned by this process;
        a row of the same run id (a retry of an interrupted run) is replaced."""
        row = {**dict.fromkeys(COLUMNS), **run, "status": "running", "owner": owners.PROCESS,
               "started_at": time.time(), "finished_at": None, "summary": None, "output": None, "error": None}
        self.db.execute(f"INSERT OR REPLACE INTO think_child_runs (agent_key, {', '.join(COLUMNS)}) "
                        f"VALUES (?, {', '.join('?' for _ in COLUMNS)})", (self.agent_key, *(row[c] for c in COLUMNS)))

    def bind(self, run_id: str, request_id: str) -> None:
        """Record the child's request id (before its turn starts)."""
        self.db.execute("UPDATE think_child_runs SET request_id = ? WHERE agent_key = ? AND run_id = ?",
                        (request_id, self.agent_key, run_id))

    def adopt(self, run_id: str) -> None:
        """This process takes over a dead process's `running` run (it re-attaches to it)."""
        self.db.execute("UPDATE think_child_runs SET owner = ? WHERE agent_key = ? AND run_id = ? "
                        "AND status = 'running'", (owners.PROCESS, self.agent_key, run_id))

    def settle(self, run_id: str, status: str, *, summary: str | None = None, output: Any = None,
               error: str | None = None) -> bool:
        """`running` → `status` with its outcome; False when the run was settled already."""
        with self.db.write() as c:
            cur = c.execute("UPDATE think_child_runs SET status = ?, summary = ?, output = ?, error = ?, "
                            "finished_at = ? WHERE agent_key = ? AND run_id = ? AND status = 'running'",
                            (status, summary, None if output is None else jsonsafe.dumps_stored(output), error,
                             time.time(), self.agent_key, run_id))
            return cur.rowcount == 1

    def forget(self, tool_call_ids: list[str]) -> None:
        """Delete the settled runs these parent tool calls started (a cleared transcript's: a new
        call reusing one of their ids runs its child again instead of replaying the old answer).
        A `running` run stays: its child's turn is still owned by someone."""
        if tool_call_ids:
            marks = ", ".join("?" for _ in tool_call_ids)
            self.db.execute(f"DELETE FROM think_child_runs WHERE agent_key = ? AND status != 'running' "
                            f"AND parent_tool_call_id IN ({marks})", (self.agent_key, *tool_call_ids))

    def get(self, run_id: str) -> dict | None:
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_child_runs WHERE agent_key = ? AND run_id = ?",
                            (self.agent_key, run_id))
        return _row(rows[0]) if rows else None

    def select(self, status: str | None = None, child_key: str | None = None) -> list[dict]:
        """Runs, oldest first, optionally of one status and one child."""
        where, params = "agent_key = ?", [self.agent_key]
        if status is not None:
            where, params = where + " AND status = ?", [*params, status]
        if child_key is not None:
            where, params = where + " AND child_key = ?", [*params, child_key]
        rows = self.db.read(f"SELECT {', '.join(COLUMNS)} FROM think_child_runs WHERE {where} ORDER BY started_at",
                            tuple(params))
        return [_row(r) for r in rows]

    def orphaned(self) -> list[dict]:
        """`running` runs a dead process owned, oldest first (`think_nb.store.owners`)."""
        return [r for r in self.select("running")
                if r["owner"] != owners.PROCESS and not self.db.owners.alive(r["owner"])]


def _row(row: tuple) -> dict:
    out = dict(zip(COLUMNS, row, strict=True))
    out["output"] = jsonsafe.loads_stored(out["output"]) if out["output"] is not None else None
    return out
