"""The approvals ledger (table `think_approvals`): every `approve()` / `deny()` decision, per tool call.

The engine runs an approved call only when the ledger holds an unused approval for that call id
with the same input the approval was given for (`claim`); the stored message alone is not enough.
An approval given with an edited input (`approve(id, input=...)`) keeps both: `input` is what the
model proposed, `edited_input` what the user approved instead; the engine runs the
ledger's (`claim`), never an input a message claims.

An approval is used once: `claim` marks it used (`used_at`, committed before the call starts),
and a used approval grants nothing more, so a part set back to `approval-responded` (by hand, in
the SQLite file) or a continuation recovered after the process died while the call ran never runs
the call a second time (the engine settles it `output-error` instead: `USED_TEXT`). A new
`approve()` (only possible after a fresh `approval-requested`, e.g. `execute` pausing again) is a
new decision, unused.
"""

from __future__ import annotations

import time
from typing import Any

from think_nb import jsonsafe
from think_nb.store.db import Database


class Approvals:
    """The approval decisions of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def record(self, tool_call_id: str, approval_id: str | None, approved: bool, reason: str | None,
               tool_input: Any, edited_input: Any = None) -> None:
        """Record a decision (a call is decided once; a second decision is refused before this).
        `edited_input`: the input the user approved instead of `tool_input` (None: as proposed)."""
        edited = None if edited_input is None else jsonsafe.dumps_stored(edited_input)
        self.db.execute("INSERT OR REPLACE INTO think_approvals (agent_key, tool_call_id, approval_id, approved, "
                        "reason, input, decided_at, edited_input, used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                        (self.agent_key, tool_call_id, approval_id, int(approved), reason,
                         jsonsafe.dumps_stored(tool_input), time.time(), edited))

    def claim(self, tool_call_id: str, tool_input: Any) -> tuple[Any, bool] | str:
        """Use the approval of `tool_call_id` to start it, once.

        Returns `(input, edited)` when the call was approved for exactly `tool_input` and the
        approval is unused (`input`: the edited input when the approval edited it, else
        `tool_input`); the approval is marked used and that is committed before this returns.
        Otherwise why not: `"used"` (it started before under this approval) or `"none"` (no
        approval for this call and input)."""
        with self.db.write() as c:
            rows = c.execute("SELECT approved, input, edited_input, used_at FROM think_approvals WHERE agent_key = ? "
                             "AND tool_call_id = ?", (self.agent_key, tool_call_id)).fetchall()
            run = _run_input(rows[0], tool_input) if rows else None
            if run is None:
                return "none"
            if rows[0][3] is not None:
                return "used"
            c.execute("UPDATE think_approvals SET used_at = ? WHERE agent_key = ? AND tool_call_id = ?",
                      (time.time(), self.agent_key, tool_call_id))
            return run

    def used(self, tool_call_id: str) -> bool:
        """True when an approval of `tool_call_id` was used (`claim`): the call started once."""
        rows = self.db.read("SELECT used_at FROM think_approvals WHERE agent_key = ? AND tool_call_id = ?",
                            (self.agent_key, tool_call_id))
        return bool(rows) and rows[0][0] is not None

    def granted(self, tool_call_id: str, tool_input: Any) -> bool:
        """True when `tool_call_id` was approved for exactly `tool_input`, used or not (`execute`
        checks this to refuse starting over a resume that claimed its paused state)."""
        rows = self.db.read("SELECT approved, input FROM think_approvals WHERE agent_key = ? AND tool_call_id = ?",
                            (self.agent_key, tool_call_id))
        return bool(rows) and bool(rows[0][0]) and rows[0][1] == jsonsafe.dumps_stored(tool_input)

    def decision(self, tool_call_id: str) -> dict | None:
        """The recorded decision for a call: `{approval_id, approved, input}` (input as stored JSON
        text), or None when none was made."""
        rows = self.db.read("SELECT approval_id, approved, input FROM think_approvals WHERE agent_key = ? AND "
                            "tool_call_id = ?", (self.agent_key, tool_call_id))
        return {"approval_id": rows[0][0], "approved": bool(rows[0][1]), "input": rows[0][2]} if rows else None

    def forget(self, tool_call_ids: list[str]) -> None:
        """Delete the decisions about these calls (a cleared transcript's): a later call that reuses
        an id (a scripted model, a provider numbering calls per conversation) is not decided."""
        if tool_call_ids:
            with self.db.write() as c:
                c.executemany("DELETE FROM think_approvals WHERE agent_key = ? AND tool_call_id = ?",
                              [(self.agent_key, call_id) for call_id in tool_call_ids])


def _run_input(row: tuple, tool_input: Any) -> tuple[Any, bool] | None:
    """`(input, edited)` from a ledger row `(approved, input, edited_input, ...)`, None unless it
    approved exactly `tool_input`."""
    if not row[0] or row[1] != jsonsafe.dumps_stored(tool_input):
        return None
    if row[2] is None:
        return tool_input, False
    return jsonsafe.loads(row[2]), True
