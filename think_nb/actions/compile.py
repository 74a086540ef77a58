"""`get_actions()` compiled into the tools a turn offers (Think's `_compileActionTools`).

`get_actions()` returns a list of `Action`s (or a dict `name -> Action`: the key names an action
made without `name=`, as Think's registration key). Each becomes an `ActionTool`: a `Tool` with
the action's name, description and input schema, whose function runs the call through
`ActionRunner.call` (permissions, durable pause, ledger, timeout, bounded output), so
`before_tool_call` / `after_tool_call` see an action as any tool. An `approval-gated` action is
gated (`needs_approval`) and decides its approval itself (`approval_gate`: authorization first,
then `approval_when`, then the request carries Think's approval descriptor). A turn merges the
action tools after `get_tools()` and before extension tools (`think_nb.turns.assemble`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from think_nb.actions.spec import Action
from think_nb.errors import UserError
from think_nb.tools.tool import TOOL_NAME, Tool, valid_tool_name


@dataclasses.dataclass
class ActionTool(Tool):
    """The tool of one action for one turn (see the module docstring)."""

    action: Any = None
    runner: Any = None

    async def approval_gate(self, call_id: str, arguments: dict, messages: list[dict]) -> tuple[bool, dict | None]:
        """`(ask, descriptor)` for a call with validated `arguments` (`think_nb.turns.tool_calls`)."""
        if self.action.kind != "approval-gated":  # gated only because it took a gated tool's name
            return True, None
        gated: tuple[bool, dict | None] = await self.runner.gate(self.action, call_id, arguments, messages)
        return gated


def resolve(found: Any) -> dict[str, Action]:
    """`get_actions()`'s value as `{name: Action}`; `UserError` for anything that is not one."""
    if not found:
        return {}
    if isinstance(found, Mapping):
        items = list(found.items())
    elif isinstance(found, (list, tuple)):
        items = [(None, item) for item in found]
    else:
        raise UserError(f"get_actions() returned {found!r:.60}; return a list of @action functions (or a dict "
                        "name -> action).")
    out: dict[str, Action] = {}
    for key, item in items:
        if not isinstance(item, Action):
            hint = "decorate it with @action (from think_nb import action)"
            raise UserError(f"get_actions() entry {key if key is not None else item!r:.60} is not an action; {hint}.")
        name = item.name if item.named or key is None else key
        if not valid_tool_name(name):
            raise UserError(f"get_actions() key {name!r} is not a valid tool name: names must match "
                            f"{TOOL_NAME.pattern}; rename it.")
        out[name] = item if name == item.name else dataclasses.replace(item, name=name)
    return out


def action_tool(action: Action, runner: Any) -> ActionTool:
    """The `ActionTool` of `action`, running its calls through `runner` (an `ActionRunner`)."""

    async def execute(**kwargs: Any) -> Any:
        return await runner.call(action, kwargs)

    execute.__name__ = action.name
    return ActionTool(action.name, action.description, action.tool.parameters, execute,
                      action.kind == "approval-gated", action.tool._model, action=action, runner=runner)
