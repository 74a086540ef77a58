"""Stop conditions of a turn (`TurnConfig.stop_when`, the AI SDK's `stopWhen`): after each step
with tool calls the turn asks them whether to stop; `max_steps` always bounds the turn as well.
Every turn asks them; `before_step`'s types are in `steps.py`, which names these too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from think_nb.aio import maybe_await
from think_nb.errors import UserError
from think_nb.turns.hooks import user_code
from think_nb.turns.result import StepContext

__all__ = ["StopCondition", "has_tool_call", "should_stop", "step_count_is", "stop_conditions"]

StopCondition = Callable[[list[StepContext]], bool | Awaitable[bool]]
"""`condition(steps) -> bool` (sync or async): True stops the turn after the step just finished.
`steps` are the turn's finished steps, oldest first (the AI SDK's `StopCondition({steps})`)."""


def step_count_is(n: int) -> StopCondition:
    """Stop once the turn has run `n` steps (the AI SDK's `stepCountIs(n)`). Raises `UserError`
    unless `n` is a whole number >= 1."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise UserError(f"step_count_is(n) takes a whole number of steps >= 1, not {n!r}.")

    def condition(steps: list[StepContext]) -> bool:
        return len(steps) == n

    condition.__name__ = condition.__qualname__ = f"step_count_is({n})"
    return condition


def has_tool_call(name: str) -> StopCondition:
    """Stop after a step in which the model called tool `name` (the AI SDK's `hasToolCall(name)`).
    Raises `UserError` unless `name` is a non-empty string."""
    if not isinstance(name, str) or not name:
        raise UserError(f"has_tool_call(name) takes a tool name, not {name!r}.")

    def condition(steps: list[StepContext]) -> bool:
        return bool(steps) and any(call.get("toolName") == name for call in steps[-1].tool_calls)

    condition.__name__ = condition.__qualname__ = f"has_tool_call({name!r})"
    return condition


def stop_conditions(value: Any) -> list[StopCondition]:
    """`TurnConfig.stop_when` as a list: None → [], one callable → [it], a list/tuple of callables
    as is. Raises `ValueError` otherwise (the turn reports it as `before_turn`'s unusable config)."""
    if value is None:
        return []
    found = list(value) if isinstance(value, (list, tuple)) else [value]
    bad = [c for c in found if not callable(c)]
    if bad:
        raise ValueError(f"stop_when={bad[0]!r} is not a function of the steps; pass one (e.g. step_count_is(3), "
                         "has_tool_call('search')) or a list of them")
    return found


async def should_stop(conditions: list[StopCondition], steps: list[StepContext]) -> bool:
    """True when any condition holds for `steps` (each sync or async; the AI SDK's `isStopConditionMet`).
    A condition that raises fails the turn as a hook does: `HookError` naming it."""
    for condition in conditions:
        with user_code(getattr(condition, "__name__", None) or repr(condition), subject="stop_when"):
            if await maybe_await(condition(list(steps))):
                return True
    return False
