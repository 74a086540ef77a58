"""Permissions of action calls (Think's `authorizeTurn` / `authorizeAction`).

Once per turn, after `before_turn`, `authorize_turn(ctx)` (the turn's final `TurnContext`) grants
the turn's actions everything (the default, `True`), nothing (`False`), or
`{"allowed": True, "granted_permissions": [...]}` (only those). Before each action call runs
(and before its approval is asked), the action's required permissions are resolved for its
input and `authorize_action(ctx)` decides; its default grants a call whose required permissions
the turn granted, and refuses it otherwise ("Missing required permission: a, b"). A refused call
never runs: its output is an `ActionAuthorizationError` envelope the model reads.

A decision is `True`, `False` or `{"allowed": bool, "reason": str, "granted_permissions": [str]}`
(Think's `ActionAuthorizationDecision`); anything else fails the hook in one line.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from think_nb.aio import maybe_await
from think_nb.errors import HookError, UserError
from think_nb.turns.hooks import call_hook

if TYPE_CHECKING:  # the contexts load with the first action call
    from think_nb.actions.context import ActionAuthorizationContext, ActionContext

DECISION_KEYS = frozenset({"allowed", "reason", "granted_permissions"})


@dataclass(frozen=True)
class Grant:
    """A normalized authorization decision; `granted_permissions` None grants every permission."""

    allowed: bool = True
    reason: str | None = None
    granted_permissions: tuple[str, ...] | None = None


FULL = Grant()


def normalize(decision: Any, hook: str) -> Grant:
    """A decision (see the module docstring) as a `Grant`; `HookError` naming `hook` otherwise."""
    if isinstance(decision, Grant):
        return decision
    if isinstance(decision, bool):
        return Grant(decision)
    if isinstance(decision, dict) and isinstance(decision.get("allowed"), bool) and set(decision) <= DECISION_KEYS:
        reason, granted = decision.get("reason"), decision.get("granted_permissions")
        strings = isinstance(granted, (list, tuple, set)) and all(isinstance(p, str) for p in granted)
        if (reason is None or isinstance(reason, str)) and (granted is None or strings):
            return Grant(decision["allowed"], reason, None if granted is None else tuple(granted))
    raise HookError(hook, f"returned {decision!r:.80}; return True, False or {{'allowed': bool, 'reason': str, "
                          "'granted_permissions': [str, ...]}.")


async def turn_grant(host: Any, ctx: Any) -> Grant:
    """The turn's grant: `authorize_turn(ctx)` when the agent overrides it, else `FULL`. Raises
    `HookError` (the turn fails, as Think's) when it raises or returns something else."""
    if not host.overrides("authorize_turn"):
        return FULL
    return normalize(await call_hook(host.agent, "authorize_turn", ctx), "authorize_turn")


def default_decision(ctx: ActionAuthorizationContext) -> bool | dict:
    """Think's default `authorizeAction`: the turn's refusal, else True when every required
    permission was granted, else `{"allowed": False, "reason": "Missing required permission: ..."}`."""
    if not ctx.turn_allowed:
        return {"allowed": False, "reason": ctx.turn_reason}
    if ctx.granted_permissions is None:
        return True
    missing = [p for p in ctx.required_permissions if p not in ctx.granted_permissions]
    return True if not missing else {"allowed": False, "reason": f"Missing required permission: {', '.join(missing)}"}


async def call_policy(fn: Any, value: Any, ctx: ActionContext) -> Any:
    """Call a policy or key function as `fn(input)` or, when it takes two arguments, `fn(input, ctx)`
    (`ctx` with a no-op `attach_reply`); sync or async."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    two = len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)
    return await maybe_await(fn(value, ctx.without_reply()) if two else fn(value))


async def required_permissions(action: Any, value: Any, ctx: ActionContext) -> list[str]:
    """The permissions `action` needs for input `value`. Raises `UserError` for a function that
    returns something other than a list of strings."""
    spec = action.permissions
    if spec is None:
        return []
    found = await call_policy(spec, value, ctx) if callable(spec) else spec
    if not isinstance(found, (list, tuple, set, frozenset)) or not all(isinstance(p, str) for p in found):
        raise UserError(f"action {action.name!r}: permissions returned {found!r:.60}; return a list of strings.")
    return list(found)


async def authorize_call(host: Any, action: Any, value: Any, ctx: ActionContext,
                         turn: Grant) -> tuple[Grant, list[str]]:
    """`(decision, required permissions)` of one call: `authorize_action` when the agent overrides
    it (a raise or a bad return is a `HookError`), else `default_decision`."""
    needed = await required_permissions(action, value, ctx)
    from think_nb.actions.context import ActionAuthorizationContext

    actx = ActionAuthorizationContext(ctx.request_id, ctx.tool_call_id, action.name, action.kind, value, needed,
                                      None if turn.granted_permissions is None else list(turn.granted_permissions),
                                      ctx.messages, host.agent, turn.allowed, turn.reason)
    if host.overrides("authorize_action"):
        decision = await call_hook(host.agent, "authorize_action", actx)
        return normalize(decision, "authorize_action"), needed
    return normalize(default_decision(actx), "authorize_action"), needed
