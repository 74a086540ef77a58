"""The approvals ledger (table `think_approvals`): every `approve()` / `deny()` decision, per tool call.

The engine runs an approved call only when the ledger holds an approval for that call id with
the same input the approval was given for (`granted`); the stored message alone is not enough.
An approval given with an edited input (`approve(id, input=...)`) keeps both: `input` is what the
model proposed, `edited_input` what the user approved instead; the engine runs `run_input`, the
ledger's, never an input a message claims.
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
                        "reason, input, decided_at, edited_input) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (self.agent_key, tool_call_id, approval_id, int(approved), reason,
                         jsonsafe.dumps_stored(tool_input), time.time(), edited))

    def run_input(self, tool_call_id: str, tool_input: Any) -> tuple[Any, bool] | None:
        """What an approved call runs with: `(input, edited)` — the edited input when the approval
        edited it, else `tool_input`; None when the call was not approved for exactly `tool_input`."""
        rows = self.db.read("SELECT approved, input, edited_input FROM think_approvals WHERE agent_key = ? AND "
                            "tool_call_id = ?", (self.agent_key, tool_call_id))
        if not rows or not rows[0][0] or rows[0][1] != jsonsafe.dumps_stored(tool_input):
            return None
        if rows[0][2] is None:
            return tool_input, False
        return jsonsafe.loads(rows[0][2]), True

    def granted(self, tool_call_id: str, tool_input: Any) -> bool:
        """True when `tool_call_id` was approved for exactly `tool_input`."""
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
