"""One model call through the model seam → AI SDK UIMessageChunks.

Translates the seam's `Delta`s (`think_nb.models.client`: OpenAI-style stream deltas) into
`text-*`, `reasoning-*` and `tool-input-*` chunks and collects what the turn needs afterwards
(text, complete tool calls, finish reason, usage and where the usage came from: the provider,
litellm's estimate, or nowhere). Hosted models arrive through litellm, in-process models (the
embedded model, scripted models) directly; this module does not know which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from think_nb import jsonsafe
from think_nb.errors import ModelError, ThinkError
from think_nb.messages.ids import new_id
from think_nb.models import reasoning
from think_nb.models.client import Delta, ModelClient, ToolCallDelta, UsageSource
from think_nb.models.resolve import IN_PROCESS_PROVIDERS, ModelConfig
from think_nb.redact import env_secrets, scrub, secrets_of
from think_nb.tools.tool import object_input

Emit = Callable[[dict], Awaitable[None]]
EmitRun = Callable[[list[dict]], Awaitable[None]]
"""`emit_run(chunks)`: a run of `text-delta` chunks of one part (`type`, `id`, `delta`), in order."""

__all__ = ["StepOutcome", "ToolCall", "UsageSource", "model_error", "stream_step"]


@dataclass
class ToolCall:
    """A complete tool call from the model. `error` is set when its arguments are not a JSON object."""

    id: str
    name: str
    arguments: str = ""
    input: dict | None = None
    error: str | None = None


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


async def stream_step(config: ModelConfig, messages: list[dict], tools: list[dict], emit: Emit, *,
                      emit_run: EmitRun | None = None, **options: Any) -> StepOutcome:
    """Stream one model call, emitting chunks as they arrive.

    Args:
        config: the resolved model (`client_for(config)` picks litellm or the in-process client).
        messages: model messages (OpenAI shape).
        tools: tool declarations (`Tool.schema()`); omitted from the call when empty.
        emit: awaited with every UIMessageChunk dict, in order.
        emit_run: if given, awaited instead of `emit` with the text deltas of one part that the
            client handed over together (`EmitRun`), in their place in the order.
        **options: extra call arguments (temperature, tool_choice, ...).

    Raises:
        ModelError: the model raised (for hosted models litellm's exceptions — authentication,
            connection, bad request — after the retries of `think_nb.models.errors`): its message
            is `describe_error`'s `Model '<model>' failed: ...` line, its `__cause__` the model's
            exception (litellm's stream wrapper unwrapped). Only what the model's stream raises
            is a `ModelError`; what `emit` raises (a hook, think_nb's own code) passes as it is.
    """
    translator = _Translator(emit, emit_run)
    # `thinking_blocks` only for the providers that take them (think_nb/models/reasoning.py)
    deltas = client_for(config).stream(config, reasoning.for_provider(messages, config.provider), tools, options)
    try:
        while True:
            try:
                delta = await anext(deltas)
            except StopAsyncIteration:
                break
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise  # an abort
            except BaseException as exc:
                error = model_error(exc, config)
                if error is exc:
                    raise
                raise error from error.__cause__
            if isinstance(delta, list):  # pieces that arrived together
                await translator.feed_many(delta)
            else:
                await translator.feed(delta)
    finally:  # an abort or a failing hook leaves the loop early: the client closes its request now
        await deltas.aclose()  # type: ignore[attr-defined]
    return await translator.close()


def model_error(exc: BaseException, config: ModelConfig) -> ThinkError:
    """`exc`, raised by the model call of `config`, as the turn reports it: a `ModelError` whose
    message is `describe_error`'s line (credentials of `config` scrubbed) and whose `__cause__` is
    the model's own exception. An error of think_nb's own (`ThinkError`, e.g. the embedded model's
    missing extra) is returned as it is."""
    if isinstance(exc, ThinkError):
        return exc
    from think_nb.models.errors import describe_error  # loads with the first failed model call

    error = ModelError(scrub(describe_error(exc, config.model), secrets_of(config) | env_secrets()))
    error.__cause__ = getattr(exc, "original_exception", None) or exc  # unwrap litellm's stream wrapper
    return error


class _Translator:
    def __init__(self, emit: Emit, emit_run: EmitRun | None = None) -> None:
        self.emit = emit
        self.emit_run = emit_run
        self.outcome = StepOutcome()
        self.open: tuple[str, str] | None = None  # (kind "text"|"reasoning", part id)
        self.calls: dict[int, ToolCall] = {}
        self.texts: list[str] = []  # the answer's pieces (`outcome.text`, joined once at `close`)

    async def feed_many(self, deltas: list[Delta | str]) -> None:
        """`feed` each of `deltas`, in order: the texts (`str`) inside an open text part go out as
        one run (`emit_run`), one chunk dict each."""
        run: list[dict] = []
        texts = self.texts
        part = self.open[1] if self.open is not None and self.open[0] == "text" else None  # the open text part
        for delta in deltas:
            if part is not None and type(delta) is str:
                texts.append(delta)
                run.append({"type": "text-delta", "id": part, "delta": delta})
                continue
            if run:
                await self._emit_run(run)
                run = []
            await self.feed(delta)
            part = self.open[1] if self.open is not None and self.open[0] == "text" else None
        if run:
            await self._emit_run(run)

    async def _emit_run(self, run: list[dict]) -> None:
        if self.emit_run is not None:
            await self.emit_run(run)
            return
        for chunk in run:
            await self.emit(chunk)

    async def feed(self, item: Delta | str) -> None:
        delta = Delta(content=item) if isinstance(item, str) else item
        if delta.usage is not None:
            self.outcome.usage = delta.usage
            self.outcome.usage_source = delta.usage_source or "reported"
        if delta.reasoning:
            await self._stream("reasoning", delta.reasoning)
        if delta.reasoning_signature:  # Anthropic's thinking signature, sent back with it (models/reasoning.py)
            await self._stream("reasoning", "", providerMetadata=reasoning.provider_metadata(delta.reasoning_signature))
        if delta.content:
            self.texts.append(delta.content)
            if self.open is not None and self.open[0] == "text":  # the usual delta, without `_stream`'s work
                await self.emit({"type": "text-delta", "id": self.open[1], "delta": delta.content})
            else:
                await self._stream("text", delta.content)
        if delta.tool_calls:
            for fragment in delta.tool_calls:
                await self._tool_fragment(fragment)
        if delta.finish_reason:
            self.outcome.finish_reason = delta.finish_reason

    async def _emit(self, chunk: dict) -> None:
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

    async def _tool_fragment(self, fragment: ToolCallDelta) -> None:
        index = fragment.index if fragment.index is not None else len(self.calls)
        call = self.calls.get(index)
        if call is None:
            await self._close_open()
            call = ToolCall(fragment.id or new_id("call"), fragment.name or "")
            self.calls[index] = call
            await self._emit({"type": "tool-input-start", "toolCallId": call.id, "toolName": call.name})
        if fragment.arguments:
            call.arguments += fragment.arguments
            await self._emit({"type": "tool-input-delta", "toolCallId": call.id, "inputTextDelta": fragment.arguments})

    async def close(self) -> StepOutcome:
        self.outcome.text = "".join(self.texts)
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


def client_for(config: ModelConfig) -> ModelClient:
    """The client for `config`: in-process models directly, everything else through litellm."""
    if config.provider in IN_PROCESS_PROVIDERS and not config.via_litellm:
        from think_nb.models.inprocess import InProcessClient

        return InProcessClient()
    from think_nb.models.litellm_client import LitellmClient

    return LitellmClient()


def _parse_arguments(raw: str) -> tuple[dict | None, str | None]:
    """Tool input is always a JSON object (Think's `normalizeToolInput`); empty means `{}`, and a
    JSON string holding an object (arguments double-encoded by a provider or proxy) is that object."""
    if not raw.strip():
        return {}, None
    try:
        value = object_input(jsonsafe.loads(raw))  # strict: NaN/Infinity are not JSON and would not persist
    except ValueError as exc:
        return None, f"The tool arguments are not valid JSON ({exc}); send a JSON object."
    if not isinstance(value, dict):
        return None, f"The tool arguments must be a JSON object, got {type(value).__name__}."
    return value, None

