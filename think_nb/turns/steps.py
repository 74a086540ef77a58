"""Per-step control of a turn: `before_step` and stop conditions.

A turn runs up to `max_steps` steps (one model call plus the tool calls it asks for). Before each
step `Think.before_step(ctx)` (Think's `beforeStep`, the AI SDK's `prepareStep`) sees a
`PrepareStepContext` (the step number, the finished steps as `StepContext`s, the messages,
model and tools about to be used) and may return a `StepConfig` (or a dict of its fields) that
changes that step only: model, system prompt, messages, active tools, tool choice, sampling.
None changes nothing. After each step with tool calls the turn's stop conditions
(`TurnConfig.stop_when`, the AI SDK's `stopWhen`) are asked whether to stop; `max_steps` always
bounds the turn as well (Think keeps `stepCountIs(maxSteps)` in every `stopWhen`). The stop
conditions live in `stop.py` (every turn asks them; this module loads when `before_step` is used)
and are named here too.

    class Researcher(Think):
        def before_step(self, ctx):
            if ctx.step_number == 0:
                return StepConfig(active_tools=["search"], tool_choice="required")

        def before_turn(self, ctx):
            return TurnConfig(stop_when=[has_tool_call("publish"), step_count_is(4)])
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from think_nb.errors import HookError
from think_nb.turns.hooks import litellm_options
from think_nb.turns.result import StepContext
from think_nb.turns.stop import StopCondition, has_tool_call, should_stop, step_count_is, stop_conditions

__all__ = ["PrepareStepContext", "StepConfig", "StopCondition", "has_tool_call", "should_stop", "step_count_is",
           "stop_conditions"]



@dataclass
class PrepareStepContext:
    """What `before_step(ctx)` sees before each model call (Think's `PrepareStepContext`).

    Attributes:
        step_number: 0-based index of the step about to run.
        steps: the turn's finished steps (`StepContext`, what `on_step_finish` received), oldest
            first; empty before the first step.
        messages: the model messages (OpenAI shape, system message excluded) this step will send:
            the turn's messages plus what its earlier steps produced (calls and results).
        model: the litellm model string the step will call.
        system: the system prompt the step will send.
        tools: the turn's tools, `{name: Tool}`.
        active_tools: the names the step will offer the model (all of `tools` unless a
            `StepConfig` narrows them).
        request_id: the turn's request id.
    """

    step_number: int
    steps: list[StepContext]
    messages: list[dict]
    model: str
    system: str
    tools: dict
    active_tools: list[str]
    request_id: str = ""


@dataclass
class StepConfig:
    """What `before_step` may return to change the step about to run, and only it (Think's
    `StepConfig`, the AI SDK's `PrepareStepResult`); a field left None keeps the turn's value.

    Attributes:
        model: a litellm model string (resolved as `get_model()`'s is) or a `ModelConfig`.
        system: replaces the system prompt for this step (alias: `instructions`).
        messages: replaces the model messages for this step (OpenAI shape, without the system message).
        active_tools: names of the turn's tools the model may see in this step.
        tool_choice: `"auto"`, `"none"`, `"required"` or `{"type": "function", "function": {"name": ...}}`.
        temperature, top_p, max_output_tokens (→ litellm `max_tokens`), seed, stop_sequences
            (→ `stop`), presence_penalty, frequency_penalty: sampling options.
        options: any other `litellm.acompletion` keyword arguments, merged over the turn's.
    """

    model: Any = None
    system: str | None = None
    instructions: str | None = None
    messages: list[dict] | None = None
    active_tools: list[str] | None = None
    tool_choice: Any = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    seed: int | None = None
    stop_sequences: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    options: dict = field(default_factory=dict)

    def litellm_options(self) -> dict:
        """The step's call options as `litellm.acompletion` keyword arguments (unset ones left out)."""
        return litellm_options(self)

    @classmethod
    def coerce(cls, value: Any) -> StepConfig:
        """Accept a StepConfig, a dict of its fields (snake_case) or None (no change); raise
        `HookError` naming `before_step` otherwise."""
        if value is None:
            return cls()
        if isinstance(value, StepConfig):
            return value
        if isinstance(value, dict):
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(value) - known)
            if unknown:
                raise HookError("before_step", f"returned unknown StepConfig fields {unknown}; known: {sorted(known)}.")
            return cls(**value)
        raise HookError("before_step", f"must return a StepConfig, a dict or None, not {type(value).__name__}.")
