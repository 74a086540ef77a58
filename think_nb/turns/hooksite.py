"""The one place every hook of a turn fires: traced, paused in step mode, then called.

`HookSite.fire(name, ctx)` records a trace row, waits while a `Stepper` holds the turn at this
hook (the user may edit `ctx` meanwhile, or decide a tool call), then calls the agent's hook if
it overrides it. Every hook of `think_nb.turns.host.HOOKS` fires here, `on_chunk` and
`on_chat_error` included. Contexts are built for every hook point, overridden or not, so the
trace and the stepper always show the whole anatomy of a turn. `on_chunk` (once per chunk) is
never a pause and is traced on its chunk group's row, not as a row of its own. `before_step`
fires only when the class overrides it (`runner.Turn._plan_step`) and is traced but never a pause
(`UNPAUSED`), so a stepped turn pauses at the same hooks whatever the class defines.

A context's `messages` (model messages: their dicts come from the history conversion's memo,
`think_nb.messages.convert`) is copied all the way down before user code sees it (an overriding
hook or the stepper), so an edit in place, even of a nested `tool_calls` argument, changes this
request only, never the memo later turns are built from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from think_nb.turns.hooks import call_hook
from think_nb.turns.trace import Tracer, summarize

EXTENSION_HOOKS = ("before_turn", "before_tool_call", "after_tool_call", "on_step_finish")
UNPAUSED = ("before_step",)
"""Hooks the stepper does not pause at (besides `on_chunk`)."""


class HookSite:
    """Fires the hooks of one turn (see the module docstring)."""

    def __init__(self, host: Any, tracer: Tracer, stepper: Any = None,
                 check_aborted: Callable[[], None] = lambda: None) -> None:
        self.host = host  # an AgentHost: hooks are called on host.agent, the user's object
        self.tracer = tracer
        self.stepper = stepper
        self.check_aborted = check_aborted
        self.capture: Any = None  # the turn's record (`turn_record.Capture`): the sites it fired

    async def fire(self, name: str, ctx: Any, *, step: int | None = None, tool: str | None = None) -> Any:
        """Pause (step mode), call the hook if overridden, trace it; returns the hook's value (or the
        decision the user took while paused). Raises `CancelledError` once the turn was aborted,
        before and after the hook, whatever the hook did with the cancellation (not for
        `on_chat_error` / `on_chat_response`, which report how the turn ended)."""
        reports_ending = name in ("on_chat_error", "on_chat_response")
        if not reports_ending:
            self.check_aborted()
        if name == "on_chunk":
            started = self.tracer.now_ms()
            value = await call_hook(self.host.agent, name, ctx)
            await self.host.extension_hook(name, ctx, value)
            self.tracer.observed(started)
            return value
        decided = None
        if self.stepper is not None or self.host.overrides(name):
            _own_messages(ctx)
        if self.stepper is not None and self.stepper.pauses(name):
            decided = await self.stepper._pause(name, ctx, step, tool)
        started = self.tracer.now_ms()
        if decided is not None:
            value = decided
        elif self.host.overrides(name):
            value = await call_hook(self.host.agent, name, ctx, subject=f"tool {tool!r}" if tool else None)
        else:
            value = None
        if name in EXTENSION_HOOKS:
            value = await self.host.extension_hook(name, ctx, value)  # Think: extensions after the subclass
        result = f" → {summarize(value)}" if value is not None else ""
        self.tracer.hook(name, step, tool, summarize(ctx) + result, started)
        if self.capture is not None:
            self.capture.fired(name, step, ctx)
        if not reports_ending:
            self.check_aborted()
        return value


def _own_messages(ctx: Any) -> None:
    """Give `ctx` its own copy of its model messages (see the module docstring)."""
    messages = getattr(ctx, "messages", None)
    if isinstance(messages, list):
        ctx.messages = _copy(messages)


def _copy(value: Any) -> Any:
    """`value` with every dict and list copied (strings and numbers shared: they cannot change)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
