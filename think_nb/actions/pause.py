"""Durable pauses: a `durable-pause` action's call parked in SQLite until a person decides
(Think's `_parkDurablePauseAction`, `pendingApprovals`, `approveExecution`, `rejectExecution`).

A parked call's output is `{"status": "paused", "executionId": "actpause_<hex>", "action",
"message"}` (nothing else: the descriptor stays in the row) and the turn ends after its step.
`approve(runner, id)` takes the row (claim-by-delete: one caller wins; a second gets
`{"status": "error", ...}`), runs the action once through the ledger (no authorization again: the
person's approval is the authority, as in Think), `reject` takes it without running anything
(`{"status": "rejected", ..., "reason"}`). Either outcome replaces the paused output in the
transcript (the panels are told), then a continuation turn lets the model read it (Think's
auto-continuation, which needs no open panel). When the paused part is no longer in the branch,
the outcome is kept as a system note instead. Rows survive a restart: a new agent object on the
file approves them.
"""

from __future__ import annotations

import copy
import logging
import uuid
from typing import TYPE_CHECKING, Any

from think_nb import events, jsonsafe
from think_nb.messages.accumulator import is_tool_part
from think_nb.messages.ids import new_id

if TYPE_CHECKING:  # every turn asks `parked`; the contexts load with the first action
    from think_nb.actions.context import ActionContext

log = logging.getLogger("think_nb.actions")

PREFIX = "actpause_"
PAUSED_TEXT = "This action is awaiting human approval. Stop and wait for the approval result before proceeding."


def descriptor(request_id: str, call_id: str, action: Any, value: Any, permissions: list[str], kind: str) -> dict:
    """Think's `ActionApprovalDescriptor`: `{requestId, toolCallId, action, summary, input,
    permissions, risk?, kind}`."""
    out = {"requestId": request_id, "toolCallId": call_id, "action": action.name, "summary": action.approval_summary,
           "input": value, "permissions": list(permissions)}
    if action.risk is not None:
        out["risk"] = action.risk
    out["kind"] = kind
    return out


def park(rows: Any, action: Any, value: Any, ctx: ActionContext, permissions: list[str]) -> dict:
    """Park the call (a row in `think_action_pending_approvals`); returns its paused output."""
    execution_id = PREFIX + uuid.uuid4().hex
    rows.park(execution_id, action.name, ctx.tool_call_id, ctx.request_id, value,
              descriptor(ctx.request_id, ctx.tool_call_id, action, value, permissions, "durable-pause"))
    events.emit("action:pause:created", {"action": action.name, "execution_id": execution_id,
                                         "tool_call_id": ctx.tool_call_id})
    return {"status": "paused", "executionId": execution_id, "action": action.name, "message": PAUSED_TEXT}


def is_parked(value: Any) -> bool:
    """Whether a call's output is a parked action's."""
    return isinstance(value, dict) and value.get("status") == "paused" and \
        str(value.get("executionId", "")).startswith(PREFIX)


def parked(results: list[dict]) -> bool:
    """Whether one of a step's results parked its call (the turn then ends after the step)."""
    return any(is_parked(r.get("output")) for r in results)


def pending(rows: Any) -> list[dict]:
    """The parked calls, oldest first (see `Think.pending_executions`)."""
    return [{"execution_id": r["execution_id"], "source": "action", "action": r["action_name"],
             "tool_call_id": r["tool_call_id"], "request_id": r["request_id"] or "", "input": r["input"],
             "descriptor": r["descriptor"], "created_at": r["created_at"]} for r in rows.parked()]


def _gone(execution_id: str) -> dict:
    return {"status": "error", "executionId": execution_id,
            "error": f'Execution "{execution_id}" is no longer pending — it was approved or rejected elsewhere.'}


async def approve(runner: Any, execution_id: str) -> Any:
    """Run a parked call once; returns its output (or `{"status": "error", ...}`)."""
    row = runner.host.store.actions.take(execution_id)
    if row is None:
        return _gone(execution_id)
    action = (await runner.actions()).get(row["action_name"])
    if action is None:
        output: Any = {"status": "error", "executionId": execution_id, "action": row["action_name"],
                       "error": f'Action "{row["action_name"]}" is no longer registered, so the approved call cannot '
                                "run. The approval was consumed."}
    else:
        output = await runner.run_approved(action, row)
        events.emit("action:pause:approved", {"action": row["action_name"], "execution_id": execution_id},
                    agent=runner.host.key)
    settle(runner.host, row, execution_id, output)
    return output


async def reject(runner: Any, execution_id: str, reason: str | None) -> Any:
    """Drop a parked call without running it; returns `{"status": "rejected", ...}` (or an error)."""
    row = runner.host.store.actions.take(execution_id)
    if row is None:
        return _gone(execution_id)
    output = {"status": "rejected", "executionId": execution_id, "action": row["action_name"],
              "reason": reason or "Rejected by user"}
    events.emit("action:pause:rejected", {"action": row["action_name"], "execution_id": execution_id},
                agent=runner.host.key)
    settle(runner.host, row, execution_id, output)
    return output


def settle(host: Any, row: dict, execution_id: str, output: Any) -> None:
    """Replace the paused output of `row`'s call in the branch with `output` (or add a system note
    when the part is gone), then start a continuation turn."""
    if not _replace(host, row["tool_call_id"], execution_id, output):
        if _resolved(host, row["tool_call_id"], execution_id):
            return
        text = (f'[durable action] The paused execution "{execution_id}" was resolved, but its tool call is no '
                f"longer in the transcript. Outcome: {jsonsafe.dumps(output)[:4000]}")
        host.conversation.append({"id": f"exec-outcome-{execution_id}-{uuid.uuid4().hex[:8]}", "role": "system",
                                  "parts": [{"type": "text", "text": text}]})
        host.engine.messages_changed()
    host.engine.start([], new_id("req"), trigger="continuation", continuation=True)


def _parts(host: Any, call_id: str) -> list[tuple[dict, dict]]:
    return [(m, p) for m in reversed(host.conversation.messages) for p in m.get("parts", [])
            if is_tool_part(p) and p.get("toolCallId") == call_id]


def _replace(host: Any, call_id: str, execution_id: str, output: Any) -> bool:
    for message, part in _parts(host, call_id):
        out = part.get("output")
        if part.get("state") == "output-available" and isinstance(out, dict) and is_parked(out) \
                and out["executionId"] == execution_id:
            changed = copy.deepcopy(message)
            for p in changed["parts"]:
                if is_tool_part(p) and p.get("toolCallId") == call_id:
                    p["output"] = output
            host.engine.replace_message(changed)
            return True
    return False


def _resolved(host: Any, call_id: str, execution_id: str) -> bool:
    """Whether the branch already shows an outcome of `execution_id` (resolved elsewhere)."""
    return any(isinstance(p.get("output"), dict) and p["output"].get("executionId") == execution_id
               for _, p in _parts(host, call_id))
