"""`ActionRunner`: one per agent (`runtime.actions`); runs its action calls.

A call, in order (Think's `_actionToTool` execute):

1. an approved `approval-gated` call whose input `before_tool_call` changed does not run
   (`ActionApprovalInputError`);
2. authorization (`think_nb.actions.authorize`): refused → `ActionAuthorizationError`, nothing runs;
3. a `durable-pause` action (when its `approval_when` applies) parks the call
   (`think_nb.actions.pause`) and the turn ends;
4. otherwise the function runs through the ledger (`think_nb.actions.ledger`), under its
   timeout, its output bounded (`think_nb.actions.output`).

Every outcome is the call's output (the model reads it; `after_tool_call` sees success); only a
stopped turn propagates. The call's context comes from the turn running it: its request id, grant
(`authorize_turn`) and reply attachments are the engine's current `Turn`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from think_nb import jsonsafe
from think_nb.actions import output, pause
from think_nb.actions.authorize import FULL, Grant, authorize_call, call_policy
from think_nb.actions.compile import ActionTool, action_tool, resolve
from think_nb.actions.context import ActionContext, record_attachment
from think_nb.actions.invoke import invoke
from think_nb.actions.ledger import Ledger
from think_nb.actions.spec import Action
from think_nb.tools.tool import CURRENT_TOOL_CALL, CURRENT_TOOL_RUNNER, Bounded
from think_nb.turns.hooks import call_hook

DEFAULT_LEASE_S = 300.0
"""Think's `actionLedgerPendingRetryLeaseMs` (5 minutes), in seconds."""


class ActionRunner:
    """The actions of one agent (see the module docstring). `host`: its `AgentRuntime`."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.ledger = Ledger(host.store.actions, self._lease)

    def _lease(self) -> float | None:
        value = getattr(self.host.agent, "action_ledger_pending_retry_lease", DEFAULT_LEASE_S)
        return None if value is False or value is None else float(value)

    def sweep(self) -> dict[str, int]:
        """Delete expired ledger rows and parked calls (`ActionRows.sweep`)."""
        counts: dict[str, int] = self.host.store.actions.sweep()
        return counts

    # -- what a turn offers ------------------------------------------------------------------------
    async def actions(self) -> dict[str, Action]:
        """`get_actions()` now, as `{name: Action}` (a raise is a `HookError` naming it)."""
        return resolve(await call_hook(self.host.agent, "get_actions"))

    async def tools(self) -> dict[str, ActionTool]:
        """The turn's action tools, `{name: ActionTool}`."""
        return {name: action_tool(a, self) for name, a in (await self.actions()).items()}

    def _turn(self) -> Any:
        engine = getattr(self.host, "engine", None)
        return getattr(engine, "current_turn", None)

    def _grant(self, turn: Any) -> Grant:
        grant = getattr(turn, "action_grant", None)
        return grant if isinstance(grant, Grant) else FULL

    # -- one call ----------------------------------------------------------------------------------
    async def call(self, action: Action, kwargs: dict[str, Any]) -> Bounded:
        """Run one call of `action` with the validated input `kwargs` (the `ActionTool`'s function,
        inside a turn's tool run); returns its output, already bounded."""
        turn = self._turn()
        call_id = CURRENT_TOOL_CALL.get() or ""
        messages = list(getattr(CURRENT_TOOL_RUNNER.get(), "messages", None) or [])
        attachments = getattr(turn, "reply_attachments", None)
        replies = _Replies(attachments, action.name) if isinstance(attachments, list) else None
        ctx = ActionContext(self.host.agent, getattr(turn, "request_id", ""), call_id, messages,
                            replies.attach if replies else None)
        value = jsonsafe.to_json_value(kwargs)
        try:
            return Bounded(await self._call(action, kwargs, value, ctx, self._grant(turn),
                                            replies.undo if replies else _nothing))
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - a policy or hook raised: the model reads it
            return Bounded(output.error(exc))

    async def _call(self, action: Action, kwargs: dict, value: Any, ctx: ActionContext, grant: Grant,
                    undo: Callable[[], None]) -> Any:
        if action.kind == "approval-gated" and self._input_changed(action, ctx.tool_call_id, value):
            return output.approval_input_changed()
        decision, needed = await authorize_call(self.host, action, value, ctx, grant)
        if not decision.allowed:
            return output.refused(decision.reason, needed)
        if action.kind == "durable-pause" and await self._applies(action, value, ctx):
            return pause.park(self.host.store.actions, action, value, ctx, needed)
        return await self.ledger.run(action, value, ctx, lambda: invoke(action, kwargs, ctx), undo)

    async def _applies(self, action: Action, value: Any, ctx: ActionContext) -> bool:
        """Whether the action's approval applies to this input (`approval_when`; always without one)."""
        return action.approval_when is None or bool(await call_policy(action.approval_when, value, ctx))

    def _input_changed(self, action: Action, call_id: str, value: Any) -> bool:
        """True when `call_id` was approved (`approve()`) for another input than `value`."""
        decision = self.host.store.approvals.decision(call_id) if call_id else None
        if not decision or not decision["approved"]:
            return False
        try:
            approved = jsonsafe.to_json_value(action.tool.validate(jsonsafe.loads_stored(decision["input"])))
        except Exception:  # noqa: BLE001 - an input the schema refuses now is not the one approved
            return True
        return bool(approved != value)

    async def gate(self, action: Action, call_id: str, kwargs: dict, messages: list[dict]) -> tuple[bool, dict | None]:
        """An `approval-gated` call's gate: `(False, None)` when it runs unasked (refused: its
        output says so; or `approval_when` is false), else `(True, descriptor)`. Raises what a
        policy or `authorize_action` raised (the call then fails, unasked)."""
        turn = self._turn()
        request_id = getattr(turn, "request_id", "")
        ctx = ActionContext(self.host.agent, request_id, call_id, list(messages))
        value = jsonsafe.to_json_value(kwargs)
        decision, needed = await authorize_call(self.host, action, value, ctx, self._grant(turn))
        if not decision.allowed or not await self._applies(action, value, ctx):
            return False, None
        return True, pause.descriptor(request_id, call_id, action, value, needed, "approval-gated")

    async def run_approved(self, action: Action, row: dict) -> Any:
        """Run a parked call a person approved (`approve_execution`): through the ledger, no
        authorization, no reply attachment (its reply is the continuation's)."""
        ctx = ActionContext(self.host.agent, row["request_id"] or "", row["tool_call_id"], [])
        try:
            kwargs = action.tool.validate(row["input"] if isinstance(row["input"], dict) else {})
        except Exception as exc:  # noqa: BLE001 - the action's schema changed since it parked
            return output.error(exc)
        value = jsonsafe.to_json_value(kwargs)
        return await self.ledger.run(action, value, ctx, lambda: invoke(action, kwargs, ctx))

    # -- durable pauses ------------------------------------------------------------------------------
    def pending(self) -> list[dict]:
        return pause.pending(self.host.store.actions)

    async def approve(self, execution_id: str) -> Any:
        return await pause.approve(self, execution_id)

    async def reject(self, execution_id: str, reason: str | None) -> Any:
        return await pause.reject(self, execution_id, reason)


def _nothing() -> None:
    return None


class _Replies:
    """One call's reply attachments: `attach` records into the turn's list (`record_attachment`),
    `undo` takes back what this call added (its run failed: Think discards them)."""

    def __init__(self, turn_list: list[dict], action: str) -> None:
        self.turn_list, self.action, self.added = turn_list, action, []  # type: list[dict], str, list[dict]

    def attach(self, attachment: Any) -> None:
        count = len(self.turn_list)
        record_attachment(self.turn_list, attachment, self.action)
        self.added.extend(self.turn_list[count:])

    def undo(self) -> None:
        mine = {id(a) for a in self.added}
        self.turn_list[:] = [a for a in self.turn_list if id(a) not in mine]
        self.added.clear()
