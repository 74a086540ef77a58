"""The approvals ledger (table `think_approvals`): every `approve()` / `deny()` decision, per tool call.

The engine runs an approved call only when the ledger holds an approval for that call id with
the same input the approval was given for (`granted`); the stored message alone is not enough.
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
               tool_input: Any) -> None:
        """Record a decision (a call is decided once; a second decision is refused before this)."""
        self.db.execute("INSERT OR REPLACE INTO think_approvals VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (self.agent_key, tool_call_id, approval_id, int(approved), reason,
                         jsonsafe.dumps_stored(tool_input), time.time()))

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
