"""The contexts hooks receive and the values they may return (Think's lifecycle types, §4).

Order of a turn: `before_turn` → [`on_chunk`* → `before_tool_call` → tool → `after_tool_call`
→ `on_step_finish`]* → persist → `on_chat_response`. Every hook may be sync or async; a hook
that raises ends the turn with status `error` and a message naming the class and the hook
(`think_nb.errors.HookError`: `Calc.before_turn() raised KeyError: 'x'`), except the tool hooks:
a `before_tool_call` / `after_tool_call` that raises fails its call only (that message is the
call's `output-error`, as in Think; `think_nb.turns.tool_calls`); `on_chat_response`
runs after the turn ended (still holding the queue), so what it raises is logged. `user_code(...)` is the one place user
code's failures become a `HookError`. The tool hooks' contexts and decision are in `tool_hooks.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from think_nb.aio import maybe_await
from think_nb.errors import HookError, defining_type, describe, is_think_nb
from think_nb.lazy import attach as _attach

__all__ = ["HookError", "TurnConfig", "TurnContext", "call_hook", "user_code"]

_TOOL_HOOKS = dict.fromkeys(("ToolCallContext", "ToolCallDecision", "ToolCallResultContext"), ".tool_hooks")
"""The tool hooks' types live in `think_nb.turns.tool_hooks` (built when a turn first calls a tool);
`from think_nb.turns.hooks import ToolCallDecision` still finds them (`__getattr__`, `think_nb.lazy`)."""


@contextlib.contextmanager
def user_code(name: str, owner: Any = None, subject: str | None = None) -> Iterator[None]:
    """Run user code `name` (a hook, `get_model`, `configure_session`, a provider's `get`, ...) in
    this block: anything it raises becomes a `HookError` naming it (any `BaseException`,
    `SystemExit` included; `CancelledError` and `KeyboardInterrupt` pass: they abort).

    Args:
        name: the method (or callable) run in the block.
        owner: the object whose method `name` is: the error names the class that defines it;
            when that class is think_nb's own (a default not overridden), nothing is wrapped
            (its failure is think_nb's). None: the turn reporting the error names the agent's class.
        subject: what the call is about, e.g. `tool 'add'` (the message says `... for tool 'add'`).
    """
    label: str | None = None
    if owner is not None:
        cls = defining_type(owner, name)
        if cls is not None and is_think_nb(cls):
            yield  # think_nb's own default: its failure is reported as think_nb's
            return
        label = cls.__name__ if cls is not None else type(owner).__name__
    try:
        yield
    except (asyncio.CancelledError, KeyboardInterrupt):
        raise  # an abort (or the kernel's interrupt) ends the turn as `aborted`
    except BaseException as exc:
        raise HookError(name, f"raised {describe(exc)}", owner=label, subject=subject) from exc


async def call_hook(agent: Any, name: str, *args: Any, subject: str | None = None) -> Any:
    """Call hook `name` on `agent` (sync or async) under `user_code(name, agent, subject)`."""
    with user_code(name, agent, subject):
        return await maybe_await(getattr(agent, name)(*args))


@dataclass
class TurnContext:
    """What `before_turn(ctx)` sees (Think's `TurnContext`).

    Attributes:
        system: the assembled system prompt (the default one with Think's capability block,
            `think_nb.turns.capabilities`).
        messages: the model messages (OpenAI shape) about to be sent, system message excluded.
        tools: the merged tools, `{name: Tool}`.
        model: the resolved litellm model string.
        continuation: True when the turn continues the last assistant message.
        body: the custom request body (from the panel or `continue_last_turn(body)`), or None.
        request_id: the turn's request id.
        trigger: what started the turn: `panel`, `cell`, `send`, `save_messages`, `programmatic`, `chat`,
            `continuation`.
    """

    system: str
    messages: list[dict]
    tools: dict
    model: str
    continuation: bool = False
    body: dict | None = None
    request_id: str = ""
    trigger: str = "programmatic"


@dataclass
class TurnConfig:
    """What `before_turn` may return to change this turn only (Think's `TurnConfig`); None keeps a default.

    Attributes:
        model: litellm model string or `ModelConfig` for this turn.
        system: replaces the system prompt (alias: `instructions`).
        messages: replaces the model messages (OpenAI shape, without the system message).
        tools: extra tools added on top of the merged ones (list or dict, like `get_tools()`).
        active_tools: names of the tools the model may see this turn.
        tool_choice: `"auto"`, `"none"`, `"required"` or `{"type": "function", "function": {"name": ...}}`.
        max_steps: model calls this turn at most.
        temperature, top_p, max_output_tokens (→ litellm `max_tokens`), seed, stop_sequences
            (→ `stop`), presence_penalty, frequency_penalty: sampling options.
        options: any other `litellm.acompletion` keyword arguments.
        chat_stream_stall_timeout: seconds without a chunk after which this turn is aborted as
            stalled (overrides `Think.chat_stream_stall_timeout`; `turns/watchdog.py`).
        stop_when: Think's `stopWhen`: a function of the finished steps (`list[StepContext]`,
            sync or async) returning True to stop after the step just finished, or a list of them
            (any one stops); `step_count_is(n)` and `has_tool_call(name)` are the AI SDK's. Asked
            after each step with tool calls; `max_steps` bounds the turn as well (`turns/steps.py`).
        send_reasoning: False keeps this turn's reasoning out of the views' stream and the stored
            message (overrides `Think.send_reasoning`, Think's `sendReasoning`).
        output_type: a pydantic model class: the turn ends with a validated instance of it in
            `TurnResult.output` (Think's structured turns; `turns/structured.py`). Overrides the
            `output_type` given to `send` / `save_messages` / `run_turn`.
    """

    model: Any = None
    system: str | None = None
    instructions: str | None = None
    messages: list[dict] | None = None
    tools: Any = None
    active_tools: list[str] | None = None
    tool_choice: Any = None
    max_steps: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None
    seed: int | None = None
    stop_sequences: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    options: dict = field(default_factory=dict)
    chat_stream_stall_timeout: float | None = None
    stop_when: Any = None
    send_reasoning: bool | None = None
    output_type: Any = None

    _LITELLM: ClassVar[dict[str, str]] = {
        "temperature": "temperature", "top_p": "top_p", "max_output_tokens": "max_tokens", "seed": "seed",
        "stop_sequences": "stop", "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
        "tool_choice": "tool_choice"}

    def litellm_options(self) -> dict:
        """The sampling options as `litellm.acompletion` keyword arguments (unset ones left out)."""
        return litellm_options(self)

    @classmethod
    def coerce(cls, value: Any) -> TurnConfig | None:
        """Accept a TurnConfig, a dict of its fields (snake_case) or None; raise `HookError` otherwise."""
        if value is None or isinstance(value, TurnConfig):
            return value
        if isinstance(value, dict):
            known = {f.name for f in fields(cls)}
            unknown = sorted(set(value) - known)
            if unknown:
                raise HookError("before_turn", f"returned unknown TurnConfig fields {unknown}; known: {sorted(known)}.")
            return cls(**value)
        raise HookError("before_turn", f"must return a TurnConfig, a dict or None, not {type(value).__name__}.")


def litellm_options(config: Any) -> dict:
    """A `TurnConfig`'s or `StepConfig`'s sampling options and `options` as `litellm.acompletion`
    keyword arguments (`TurnConfig._LITELLM` names them; unset ones left out, `options` over them)."""
    out = {target: getattr(config, name) for name, target in TurnConfig._LITELLM.items()
           if getattr(config, name) is not None}
    return {**out, **config.options}


__getattr__ = _attach(__name__, _TOOL_HOOKS)
