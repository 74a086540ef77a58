"""One model call: `litellm.acompletion(stream=True)` → AI SDK UIMessageChunks.

Translates OpenAI-style stream deltas into `text-*`, `reasoning-*` and `tool-input-*` chunks and
collects what the turn needs afterwards (text, complete tool calls, finish reason, usage and
where the usage came from: the provider, litellm's estimate, or nowhere).
This is the whole model seam: hosted models, the embedded local model and scripted test models
all arrive here through litellm.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from think_nb import jsonsafe
from think_nb.messages.ids import new_id
from think_nb.models import reasoning
from think_nb.models.errors import CallFacts, retry_delay
from think_nb.models.litellm_env import aget_litellm
from think_nb.models.resolve import IN_PROCESS_PROVIDERS, ModelConfig

Emit = Callable[[dict], Awaitable[None]]
HOSTED_TIMEOUT = 300.0
"""Default `timeout` (seconds) of a hosted model call, unless `ModelConfig.options` sets one: the
longest wait for the first byte and between two chunks (litellm's own default is 6000 s, so a
stalled server would hold a turn for 100 minutes)."""


@dataclass
class ToolCall:
    """A complete tool call from the model. `error` is set when its arguments are not a JSON object."""

    id: str
    name: str
    arguments: str = ""
    input: dict | None = None
    error: str | None = None


UsageSource = Literal["reported", "estimated"] | None
"""Where a step's token counts come from: `"reported"` by the provider in its stream, `"estimated"`
by litellm (it counts the prompt and the streamed text with the model's tokenizer when the provider
sends no usage), or None: unknown (nothing reported and nothing to estimate from)."""


@dataclass
class StepOutcome:
    """What one model call produced.

    Attributes:
        usage: `{prompt_tokens, completion_tokens, total_tokens}` (token counts), or None when unknown.
        usage_source: `"reported"`, `"estimated"` or None (unknown; then `usage` is None too).
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict | None = None
    usage_source: UsageSource = None


async def stream_step(config: ModelConfig, messages: list[dict], tools: list[dict], emit: Emit,
                      **options: Any) -> StepOutcome:
    """Stream one model call, emitting chunks as they arrive.

    Args:
        config: the resolved model.
        messages: model messages (OpenAI shape).
        tools: tool declarations (`Tool.schema()`); omitted from the call when empty.
        emit: awaited with every UIMessageChunk dict, in order.
        **options: extra `litellm.acompletion` arguments (temperature, tool_choice, ...).

    Raises:
        Whatever litellm raises (authentication, connection, bad request), after the retries of
        `think_nb.models.errors` (transient failures before the first chunk); the exception carries
        `think_nb_call` (`CallFacts`) and the turn turns it into an `error` chunk.
    """
    litellm = await aget_litellm()  # the first turn awaits the import thread; the loop runs on
    kwargs: dict[str, Any] = {**config.options, **options}
    if tools:
        kwargs["tools"] = tools
    else:
        kwargs.pop("tool_choice", None)
    hosted = config.provider not in IN_PROCESS_PROVIDERS
    if hosted:
        kwargs.setdefault("timeout", HOSTED_TIMEOUT)
        kwargs.setdefault("max_retries", 0)  # the retry policy is think_nb's (models/errors.py)
    facts = CallFacts(config.provider or "the provider", api_base=kwargs.get("api_base"),
                      timeout=kwargs.get("timeout") if isinstance(kwargs.get("timeout"), int | float) else None)
    while True:
        translator = _Translator(emit)
        try:
            response = await litellm.acompletion(model=config.model, stream=True,
                                                 messages=reasoning.for_provider(messages, config.provider),
                                                 stream_options={"include_usage": True}, **kwargs)
            try:
                async for chunk in response:
                    await translator.feed(chunk)
            finally:  # an abort or a failing hook leaves the loop early: close the upstream request now
                await _close(response)
            break
        except Exception as exc:
            facts.streamed = translator.emitted
            delay = None if translator.emitted or not hosted else retry_delay(exc, facts.attempts - 1)
            if delay is None:
                with contextlib.suppress(Exception):  # some exception types refuse new attributes
                    exc.think_nb_call = facts  # type: ignore[attr-defined]
                raise
            facts.attempts += 1
            await asyncio.sleep(delay)
    outcome = await translator.close()
    outcome.usage_source = usage_source(outcome.usage, response)
    return outcome


async def _close(response: Any) -> None:
    aclose = getattr(response, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):  # best effort: the turn's outcome is already decided
            await aclose()


def usage_source(usage: dict | None, response: Any) -> UsageSource:
    """Whether the usage litellm handed over was the provider's or litellm's own estimate.

    With `stream_options={"include_usage": True}` litellm always ends the stream with a usage chunk;
    when no chunk from the provider carried usage, that chunk holds litellm's estimate (it keeps the
    provider's chunks, usage included, in `response.chunks`). A stream that is not litellm's wrapper
    estimates nothing, so its usage is the provider's.
    """
    if usage is None:
        return None
    chunks = getattr(response, "chunks", None)
    if chunks is None:
        return "reported"
    return "reported" if any(_carries_usage(chunk) for chunk in chunks) else "estimated"


def _carries_usage(chunk: Any) -> bool:
    value = chunk.get("usage") if isinstance(chunk, dict) else getattr(chunk, "usage", None)
    return value is not None


class _Translator:
    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.outcome = StepOutcome()
        self.open: tuple[str, str] | None = None  # (kind "text"|"reasoning", part id)
        self.calls: dict[int, ToolCall] = {}
        self.emitted = False  # any chunk emitted yet (a failure after one is never retried)

    async def feed(self, chunk: Any) -> None:
        usage = getattr(chunk, "usage", None)
        if usage:
            self.outcome.usage = _usage(usage)
        for choice in getattr(chunk, "choices", None) or []:
            delta = choice.delta
            thinking = getattr(delta, "reasoning_content", None)
            if thinking:
                await self._stream("reasoning", thinking)
            sig = reasoning.signature(delta)
            if sig:  # Anthropic's thinking signature, sent back with the reasoning (models/reasoning.py)
                await self._stream("reasoning", "", providerMetadata=reasoning.provider_metadata(sig))
            if delta.content:
                self.outcome.text += delta.content
                await self._stream("text", delta.content)
            for fragment in getattr(delta, "tool_calls", None) or []:
                await self._tool_fragment(fragment)
            if choice.finish_reason:
                self.outcome.finish_reason = choice.finish_reason

    async def _emit(self, chunk: dict) -> None:
        self.emitted = True
        await self.emit(chunk)

    async def _stream(self, kind: str, delta: str, **extra: Any) -> None:
        if self.open is None or self.open[0] != kind:
            await self._close_open()
            self.open = (kind, new_id(kind[0]))
            await self._emit({"type": f"{kind}-start", "id": self.open[1]})
        await self._emit({"type": f"{kind}-delta", "id": self.open[1], "delta": delta, **extra})

    async def _close_open(self) -> None:
        if self.open is not None:
            await self._emit({"type": f"{self.open[0]}-end", "id": self.open[1]})
            self.open = None

    async def _tool_fragment(self, fragment: Any) -> None:
        index = fragment.index if fragment.index is not None else len(self.calls)
        function = fragment.function
        call = self.calls.get(index)
        if call is None:
            await self._close_open()
            call = ToolCall(fragment.id or new_id("call"), (function and function.name) or "")
            self.calls[index] = call
            await self._emit({"type": "tool-input-start", "toolCallId": call.id, "toolName": call.name})
        if function and function.arguments:
            call.arguments += function.arguments
            await self._emit({"type": "tool-input-delta", "toolCallId": call.id, "inputTextDelta": function.arguments})

    async def close(self) -> StepOutcome:
        await self._close_open()
        for call in self.calls.values():
            call.input, call.error = _parse_arguments(call.arguments)
            if call.error is None:
                await self._emit({"type": "tool-input-available", "toolCallId": call.id,
                                 "toolName": call.name, "input": call.input})
            else:
                await self._emit({"type": "tool-input-error", "toolCallId": call.id, "toolName": call.name,
                                 "input": call.arguments, "errorText": call.error})
            self.outcome.tool_calls.append(call)
        return self.outcome


def _parse_arguments(raw: str) -> tuple[dict | None, str | None]:
    """Tool input is always a JSON object (Think's `normalizeToolInput`); empty means `{}`."""
    if not raw.strip():
        return {}, None
    try:
        value = jsonsafe.loads(raw)  # strict: NaN/Infinity are not JSON and would not persist
    except ValueError as exc:
        return None, f"The tool arguments are not valid JSON ({exc}); send a JSON object."
    if not isinstance(value, dict):
        return None, f"The tool arguments must be a JSON object, got {type(value).__name__}."
    return value, None


def _usage(usage: Any) -> dict:
    get = usage.get if isinstance(usage, dict) else lambda k, d=None: getattr(usage, k, d)
    prompt, completion = get("prompt_tokens", 0) or 0, get("completion_tokens", 0) or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": get("total_tokens", None) or prompt + completion}
