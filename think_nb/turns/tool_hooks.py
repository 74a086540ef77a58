"""The types of the tool hooks (Think's lifecycle types, §4): what `before_tool_call(ctx)` and
`after_tool_call(ctx)` see and what `before_tool_call` may return (`think_nb.turns.tool_calls`
calls them). Their own module: a turn that calls no tool does not build these dataclasses (~3 M
instructions each at import, issue 29 §3); `think_nb.turns.hooks` holds the turn's hooks' types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from think_nb.errors import HookError

__all__ = ["ToolCallContext", "ToolCallDecision", "ToolCallResultContext"]


@dataclass
class ToolCallContext:
    """What `before_tool_call(ctx)` sees (Think's `ToolCallContext`)."""

    tool_name: str
    tool_call_id: str
    input: dict
    messages: list[dict]
    step_number: int = 0
    parent_tool_call_id: str | None = None
    """Set for a call a tool makes from inside its run (an `execute` tool's inner call): the running
    tool's call id; `tool_call_id` is then `<parent>.<n>`."""


@dataclass
class ToolCallDecision:
    """What `before_tool_call` may return (Think's `ToolCallDecision`); None means allow.

    - `ToolCallDecision.allow(input=None)`: run the tool, with `input` replacing the model's.
    - `ToolCallDecision.block(reason=None)`: do not run; the reason becomes the tool's output.
    - `ToolCallDecision.substitute(output)`: do not run; `output` is the tool's output.
    Dicts in Think's shape (`{"action": "block", "reason": ...}`) are accepted too.
    """

    action: Literal["allow", "block", "substitute"]
    input: dict | None = None
    reason: str | None = None
    output: Any = None

    @classmethod
    def allow(cls, input: dict | None = None) -> ToolCallDecision:
        return cls("allow", input=input)

    @classmethod
    def block(cls, reason: str | None = None) -> ToolCallDecision:
        return cls("block", reason=reason)

    @classmethod
    def substitute(cls, output: Any, input: dict | None = None) -> ToolCallDecision:
        return cls("substitute", input=input, output=output)

    @classmethod
    def coerce(cls, value: Any, tool: str | None = None) -> ToolCallDecision:
        """Accept a decision, a dict in Think's shape or None; raise `HookError` (naming `tool`) otherwise."""
        if value is None:
            return cls("allow")
        if isinstance(value, ToolCallDecision):
            return value
        if isinstance(value, dict) and value.get("action") in ("allow", "block", "substitute"):
            return cls(value["action"], value.get("input"), value.get("reason"), value.get("output"))
        raise HookError("before_tool_call", f"returned {value!r}; return None, ToolCallDecision.allow/block/"
                        "substitute(...) or {'action': 'allow'|'block'|'substitute', ...}.",
                        subject=f"tool {tool!r}" if tool else None)


@dataclass
class ToolCallResultContext:
    """What `after_tool_call(ctx)` sees (Think's `ToolCallResultContext`).

    `success` is False only when the tool raised (`error` holds its text); blocked and substituted
    calls report success with their output. `duration_ms` is the tool's run time in milliseconds.
    """

    tool_name: str
    tool_call_id: str
    input: dict
    success: bool
    output: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    step_number: int = 0
    parent_tool_call_id: str | None = None
