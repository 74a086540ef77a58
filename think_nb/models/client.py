"""The model seam: one protocol every model is reached through, under the turn engine.

A `ModelClient` streams one model call as `Delta`s, OpenAI's chat-completions stream delta made
small: text (`content`), reasoning, tool-call fragments (`index`, `id`, `name`, `arguments`
piece), a finish reason, and usage with where it came from. `think_nb.models.stream` turns those
into AI SDK UIMessageChunks; nothing above this module knows which client ran.

Two implementations:
- `think_nb.models.litellm_client.LitellmClient`: every hosted provider, through
  `litellm.acompletion(stream=True)` (retries, timeouts, litellm's usage estimate).
- `think_nb.models.inprocess.InProcessClient`: the embedded model (`think-local/*`) and scripted
  models (`think-scripted/*`), called directly in the kernel: no litellm import (4-7 s of CPU,
  ~200 MiB) and no litellm stream wrapper (~0.3 ms per chunk).

`think_nb.models.stream.client_for(config)` picks one (it lives there, above both clients, which
import this module). `ModelConfig(..., via_litellm=True)` routes an in-process model
through litellm's custom-provider path instead (the parity test, `bench/bench_stream.py`'s
baseline): the same script gives the same UIMessageChunk stream either way (tests/test_model_seam.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from think_nb.models.resolve import ModelConfig

UsageSource = Literal["reported", "estimated"] | None
"""Where a step's token counts come from: `"reported"` by the provider in its stream, `"estimated"`
by litellm (it counts the prompt and the streamed text with the model's tokenizer when the provider
sends no usage), or None: unknown (nothing reported and nothing to estimate from)."""


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of one tool call: `index` says which call; `id` and `name` come with the first piece."""

    index: int | None
    id: str | None
    name: str | None
    arguments: str


@dataclass(slots=True)
class Delta:
    """One streamed piece of a model call (every field optional).

    Attributes:
        content: answer text.
        reasoning: reasoning text (OpenAI-compatible `reasoning_content`).
        reasoning_signature: the signature of the reasoning so far (Anthropic's thinking blocks;
            `think_nb.models.reasoning`), on the piece that carries it.
        tool_calls: tool-call fragments.
        finish_reason: the provider's reason (`stop`, `tool_calls`, `length`, ...), on the last piece.
        usage: `{prompt_tokens, completion_tokens, total_tokens}` (token counts).
        usage_source: where `usage` came from (`"reported"` when a provider sent it).
    """

    content: str | None = None
    reasoning: str | None = None
    reasoning_signature: str | None = None
    tool_calls: list[ToolCallDelta] | None = None
    finish_reason: str | None = None
    usage: dict | None = None
    usage_source: UsageSource = None


class ModelClient(Protocol):
    """Streams one model call.

    `stream(config, messages, tools, options)` yields `Delta`s in order, or lists of them (pieces
    that arrived together: `think_nb.models.inprocess`); a `str` stands for `Delta(content=str)`.
    `messages` are OpenAI-shaped model messages, `tools` OpenAI function declarations (`[]`: none
    offered), `options` extra call arguments (temperature, tool_choice, max_tokens, ...). Errors
    propagate as exceptions; closing the iterator early (an abort) closes the upstream request.
    """

    def stream(self, config: ModelConfig, messages: list[dict], tools: list[dict],
               options: dict[str, Any]) -> AsyncIterator[Delta | str | list[Delta | str]]: ...


def as_deltas(item: Delta | str | list[Delta | str]) -> list[Delta]:
    """What a client yielded (`ModelClient`: a `Delta`, a text, or a list of them) as `Delta`s."""
    items = item if isinstance(item, list) else [item]
    return [Delta(content=d) if isinstance(d, str) else d for d in items]


def from_generic(chunk: dict) -> Delta | str:
    """A litellm `GenericStreamingChunk` dict (`text`, `tool_use`, `finish_reason`, `usage`; what
    in-process providers yield) as a `Delta`, the way litellm's stream wrapper reads it; a
    `reasoning_content` key (a scripted model's reasoning) is the delta's reasoning. A chunk of
    text and nothing else is its text (a `str`: `Delta(content=text)` without the object)."""
    if not chunk.get("tool_use") and not chunk.get("usage") and not chunk.get("finish_reason") \
            and not chunk.get("reasoning_content"):  # most chunks: text only
        return chunk.get("text") or Delta()
    tool_use = chunk.get("tool_use")
    if not tool_use and not chunk.get("usage"):
        return Delta(chunk.get("text") or None, chunk.get("reasoning_content") or None, None, None,
                     chunk.get("finish_reason") or None)
    calls = None
    if tool_use:
        function = tool_use.get("function") or {}
        calls = [ToolCallDelta(tool_use.get("index"), tool_use.get("id"), function.get("name"),
                               function.get("arguments") or "")]
    usage = usage_counts(chunk.get("usage"))
    return Delta(content=chunk.get("text") or None, reasoning=chunk.get("reasoning_content") or None, tool_calls=calls,
                 finish_reason=chunk.get("finish_reason") or None, usage=usage,
                 usage_source="reported" if usage else None)


def usage_counts(usage: Any, *, zero_prompt_is_missing: bool = False) -> dict | None:
    """`{prompt_tokens, completion_tokens, total_tokens}` from a provider's usage (a dict or an
    object), or None (unknown) unless both the prompt and the completion counts are there: a
    missing count is never taken as 0. `zero_prompt_is_missing`: a prompt of 0 tokens is a count
    filled in (litellm fills a missing one with 0; a chat call's prompt is never empty). A missing
    total is their sum."""
    if not usage:
        return None
    get = usage.get if isinstance(usage, dict) else lambda k, d=None: getattr(usage, k, d)
    prompt, completion, total = get("prompt_tokens", None), get("completion_tokens", None), get("total_tokens", None)
    if not isinstance(prompt, int) or not isinstance(completion, int) or (zero_prompt_is_missing and prompt <= 0):
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": total if isinstance(total, int) and total else prompt + completion}
