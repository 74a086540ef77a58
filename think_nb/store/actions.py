"""The action tables: the idempotency ledger (`think_action_ledger`, Think's `cf_think_action_ledger`)
and the parked durable-pause approvals (`think_action_pending_approvals`, Think's
`cf_think_action_pending_approvals`). Used by `think_nb.actions`.

Ledger: one row per ledger key (`action:<name>:<key>`, or `tool:<toolCallId>` when the action
declares no `idempotency_key`): the action's name, request and call ids, a hash of the input,
`status` pending | settled and the settled result as JSON. `claim` reads and writes in one
`BEGIN IMMEDIATE` transaction, so two kernels on one file cannot both run a key.

Pending approvals: one row per parked call (`execution_id` = `actpause_<hex>`): the action's
name, call and request ids, the model's input and the approval descriptor (JSON), created time.
`take` reads and deletes a row in one transaction (Think's claim-by-delete): only one caller
gets it.

Times are epoch seconds. Retention (Think's defaults): settled ledger rows 30 days, pending ones
90 days, parked approvals 30 days; `sweep` deletes at most 500 rows per table and call.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from think_nb import jsonsafe
from think_nb.store.db import Database

SETTLED_TTL_S = 30 * 24 * 3600.0
PENDING_TTL_S = 90 * 24 * 3600.0
PAUSED_TTL_S = 30 * 24 * 3600.0
SWEEP_ROWS = 500
LEDGER_COLUMNS = ("key", "action_name", "request_id", "tool_call_id", "input_hash", "status", "result", "created_at",
                  "updated_at")
PENDING_COLUMNS = ("execution_id", "action_name", "tool_call_id", "request_id", "input", "descriptor", "created_at")

Claim = Literal["claimed", "replay", "pending", "reclaimed", "conflict"]


class ActionRows:
    """The action ledger and parked approvals of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    # -- the ledger ------------------------------------------------------------------------------
    def claim(self, key: str, action_name: str, request_id: str, tool_call_id: str, input_hash: str, *,
              reclaim_after: float | None) -> tuple[Claim, dict | None]:
        """Claim `key` to run it (Think's `_claimActionLedgerRow`), in one transaction.

        Returns `(outcome, row)`: `claimed` (a new `pending` row, `row` None), `conflict` (the key
        holds another action or input), `replay` (settled: `row["result"]` is the stored value),
        `pending` (another attempt holds it, or held it when its process died), `reclaimed` (a
        pending row older than `reclaim_after` seconds, taken over: its `updated_at` is now).
        `reclaim_after` None: a pending row is never reclaimed."""
        now = time.time()
        with self.db.write() as c:
            found = c.execute(f"SELECT {', '.join(LEDGER_COLUMNS)} FROM think_action_ledger WHERE agent_key = ? "
                              "AND key = ?", (self.agent_key, key)).fetchall()
            if found:
                row = _ledger_row(found[0])
                if row["action_name"] != action_name or row["input_hash"] != input_hash:
                    return "conflict", row
                if row["status"] == "settled":
                    return "replay", row
                if reclaim_after is None or now - row["updated_at"] <= reclaim_after:
                    return "pending", row
                c.execute("UPDATE think_action_ledger SET request_id = ?, tool_call_id = ?, updated_at = ? WHERE "
                          "agent_key = ? AND key = ? AND status = 'pending'",
                          (request_id or None, tool_call_id or None, now, self.agent_key, key))
                return "reclaimed", row
            c.execute("INSERT INTO think_action_ledger (agent_key, key, action_name, request_id, tool_call_id, "
                      "input_hash, status, result, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', NULL, "
                      "?, ?)", (self.agent_key, key, action_name, request_id or None, tool_call_id or None, input_hash,
                                now, now))
            return "claimed", None

    def settle(self, key: str, result_json: str) -> None:
        """Mark `key` settled with its result (`{"valuePresent", "value"}` as JSON text)."""
        self.db.execute("UPDATE think_action_ledger SET status = 'settled', result = ?, updated_at = ? WHERE "
                        "agent_key = ? AND key = ?", (result_json, time.time(), self.agent_key, key))

    def release(self, key: str) -> None:
        """Delete `key` (its run failed: a later attempt may run it)."""
        self.db.execute("DELETE FROM think_action_ledger WHERE agent_key = ? AND key = ?", (self.agent_key, key))

    def ledger(self) -> list[dict]:
        """Every ledger row, oldest first: `{key, action_name, request_id, tool_call_id, input_hash,
        status, result, created_at, updated_at}`."""
        rows = self.db.read(f"SELECT {', '.join(LEDGER_COLUMNS)} FROM think_action_ledger WHERE agent_key = ? "
                            "ORDER BY created_at, key", (self.agent_key,))
        return [_ledger_row(r) for r in rows]

    def forget_calls(self, tool_call_ids: list[str]) -> None:
        """Delete the fallback-key rows (`tool:<id>`) of these calls (a cleared transcript's), so a
        later call reusing an id is not a replay of theirs (as `Approvals.forget`)."""
        if tool_call_ids:
            with self.db.write() as c:
                c.executemany("DELETE FROM think_action_ledger WHERE agent_key = ? AND key = ?",
                              [(self.agent_key, f"tool:{call_id}") for call_id in tool_call_ids])

    # -- parked approvals --------------------------------------------------------------------------
    def park(self, execution_id: str, action_name: str, tool_call_id: str, request_id: str, tool_input: Any,
             descriptor: dict) -> None:
        self.db.execute("INSERT INTO think_action_pending_approvals (agent_key, execution_id, action_name, "
                        "tool_call_id, request_id, input, descriptor, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (self.agent_key, execution_id, action_name, tool_call_id, request_id or None,
                         jsonsafe.dumps_stored(tool_input), jsonsafe.dumps_stored(descriptor), time.time()))

    def take(self, execution_id: str) -> dict | None:
        """Read and delete a parked row in one transaction (claim-by-delete); None when gone."""
        with self.db.write() as c:
            found = c.execute(f"SELECT {', '.join(PENDING_COLUMNS)} FROM think_action_pending_approvals WHERE "
                              "agent_key = ? AND execution_id = ?", (self.agent_key, execution_id)).fetchall()
            if not found:
                return None
            c.execute("DELETE FROM think_action_pending_approvals WHERE agent_key = ? AND execution_id = ?",
                      (self.agent_key, execution_id))
            return _pending_row(found[0])

    def parked(self) -> list[dict]:
        """Every parked row, oldest first: `{execution_id, action_name, tool_call_id, request_id,
        input, descriptor, created_at}` (input and descriptor decoded)."""
        rows = self.db.read(f"SELECT {', '.join(PENDING_COLUMNS)} FROM think_action_pending_approvals WHERE "
                            "agent_key = ? ORDER BY created_at, execution_id", (self.agent_key,))
        return [_pending_row(r) for r in rows]

    def sweep(self, now: float | None = None) -> dict[str, int]:
        """Delete expired rows (see the module docstring): `{settled, pending, paused}` counts."""
        now = time.time() if now is None else now
        out = {}
        with self.db.write() as c:
            for status, ttl in (("settled", SETTLED_TTL_S), ("pending", PENDING_TTL_S)):
                out[status] = c.execute(
                    "DELETE FROM think_action_ledger WHERE rowid IN (SELECT rowid FROM think_action_ledger WHERE "
                    "agent_key = ? AND status = ? AND updated_at < ? ORDER BY updated_at LIMIT ?)",
                    (self.agent_key, status, now - ttl, SWEEP_ROWS)).rowcount
            out["paused"] = c.execute(
                "DELETE FROM think_action_pending_approvals WHERE rowid IN (SELECT rowid FROM "
                "think_action_pending_approvals WHERE agent_key = ? AND created_at < ? ORDER BY created_at LIMIT ?)",
                (self.agent_key, now - PAUSED_TTL_S, SWEEP_ROWS)).rowcount
        return out


def _ledger_row(row: tuple) -> dict:
    return dict(zip(LEDGER_COLUMNS, row, strict=True))


def _pending_row(row: tuple) -> dict:
    out = dict(zip(PENDING_COLUMNS, row, strict=True))
    out["input"] = jsonsafe.loads_stored(out["input"])
    out["descriptor"] = jsonsafe.loads_stored(out["descriptor"]) if out["descriptor"] else None
    return out
