"""The litellm implementation of the model seam: every hosted provider (and in-process models
asked to go `via_litellm`).

One call is `litellm.acompletion(stream=True, stream_options={"include_usage": True})`; its
chunks become `Delta`s. The retry policy is think_nb's (`think_nb.models.errors`: transient
failures before the first piece, `retry-after`), litellm's own retries are off, and a hosted call
gets a finite timeout. A stream that ends before its finish reason is litellm's own error (it
raises on its OpenAI-shaped path; `think_nb.models.errors.incomplete_stream` explains it).
Anthropic's thinking signatures come through as `Delta.reasoning_signature`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from think_nb.models import reasoning
from think_nb.models.client import Delta, ToolCallDelta, UsageSource, usage_counts
from think_nb.models.errors import CallFacts, retry_delay
from think_nb.models.litellm_env import aget_litellm
from think_nb.models.resolve import IN_PROCESS_PROVIDERS, ModelConfig

HOSTED_TIMEOUT = 300.0
"""Default `timeout` (seconds) of a hosted model call, unless `ModelConfig.options` sets one: the
longest wait for the first byte and between two chunks (litellm's own default is 6000 s, so a
stalled server would hold a turn for 100 minutes)."""


class LitellmClient:
    """`ModelClient` over `litellm.acompletion`. Raises whatever litellm raises (authentication,
    connection, bad request) once the retries are spent, with `think_nb_call` (`CallFacts`) attached;
    the turn turns it into an `error` chunk."""

    async def stream(self, config: ModelConfig, messages: list[dict], tools: list[dict],
                     options: dict[str, Any]) -> AsyncIterator[Delta]:
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
        timeout = kwargs.get("timeout")
        facts = CallFacts(config.provider or "the provider", api_base=kwargs.get("api_base"),
                          timeout=timeout if isinstance(timeout, int | float) else None)
        yielded = False
        usage: dict | None = None
        while True:
            try:
                response = await litellm.acompletion(model=config.model, messages=messages, stream=True,
                                                     stream_options={"include_usage": True}, **kwargs)
                try:
                    async for chunk in response:
                        delta = _delta(chunk)
                        if delta.usage is not None:
                            usage, delta.usage = delta.usage, None
                        if (delta.content or delta.reasoning or delta.reasoning_signature or delta.tool_calls
                                or delta.finish_reason):
                            yielded = True
                            yield delta
                finally:  # an abort or a failing hook leaves the loop early: close the upstream request now
                    await _close(response)
                break
            except Exception as exc:
                facts.streamed = yielded
                delay = None if yielded or not hosted else retry_delay(exc, facts.attempts - 1)
                if delay is None:
                    with contextlib.suppress(Exception):  # some exception types refuse new attributes
                        exc.think_nb_call = facts  # type: ignore[attr-defined]
                    raise
                facts.attempts += 1
                await asyncio.sleep(delay)
        if usage is not None:
            yield Delta(usage=usage, usage_source=usage_source(usage, response))


async def _close(response: Any) -> None:
    aclose = getattr(response, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):  # best effort: the turn's outcome is already decided
            await aclose()


def _delta(chunk: Any) -> Delta:
    """A litellm `ModelResponseStream` chunk as a `Delta` (one choice: think_nb asks for one).

    Read through `_get`: a missing attribute of a pydantic model costs ~4 us through its
    `__getattr__`, a third of the per-chunk cost of 10,000 deltas."""
    out = Delta()
    choices = _get(chunk, "choices") or []
    for choice in choices:
        delta = _get(choice, "delta")
        if delta is None:
            continue
        out.reasoning = _get(delta, "reasoning_content") or out.reasoning
        if _get(delta, "thinking_blocks"):
            out.reasoning_signature = reasoning.signature(delta) or out.reasoning_signature
        out.content = _get(delta, "content") or out.content
        fragments = _get(delta, "tool_calls")
        if fragments:
            out.tool_calls = [ToolCallDelta(f.index, f.id, f.function.name if f.function else None,
                                            (f.function and f.function.arguments) or "") for f in fragments]
        out.finish_reason = _get(choice, "finish_reason") or out.finish_reason
    if not choices or out.finish_reason:  # usage comes on the last chunk, or on a choice-less one
        out.usage = usage_counts(getattr(chunk, "usage", None), zero_prompt_is_missing=True)
    return out


def _get(obj: Any, name: str) -> Any:
    """`getattr(obj, name, None)`, fast for pydantic models (fields in `__dict__`, extras in
    `__pydantic_extra__`; litellm deletes the attributes it leaves unset, which read as None)."""
    fields = getattr(obj, "__dict__", None)
    if fields is not None and name in fields:
        return fields[name]
    extra: Any = getattr(obj, "__pydantic_extra__", _NOT_PYDANTIC)
    if extra is _NOT_PYDANTIC:
        return getattr(obj, name, None)
    return extra.get(name) if extra else None


_NOT_PYDANTIC = object()


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
