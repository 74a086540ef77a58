"""Signed reasoning (Anthropic's extended thinking) kept with the reply and sent back as the provider requires.

With thinking enabled, Anthropic refuses a request whose last assistant message, the one whose
`tool_use` the request answers with `tool_result`, does not start with the thinking block it
streamed, signature included. The AI SDK keeps that signature on the reasoning part as
`providerMetadata.anthropic.signature` and sends it back; Think (through the AI SDK) does the same,
and so does think_nb:

- streaming: litellm hands each signature over as a `thinking_blocks` entry of a delta;
  `signature(delta)` reads it and the stream emits it on the open reasoning part (a
  `reasoning-delta` with an empty `delta` and the `providerMetadata`, as the AI SDK does).
- history: `think_nb.messages.convert` turns a step's signed reasoning parts into the assistant
  message's `thinking_blocks` (litellm's cross-provider field, which its Anthropic, Bedrock and
  Vertex transformations send as thinking blocks, first in the message).
- request: `for_provider` drops `thinking_blocks` for every other provider; litellm would forward
  them as they are to an OpenAI-compatible server, and strict ones refuse unknown message fields.
"""

from __future__ import annotations

import operator
from itertools import repeat
from typing import Any

METADATA_KEY = "anthropic"
"""The `providerMetadata` key the signature is stored under (the AI SDK's Anthropic provider's)."""
THINKING_BLOCK_PROVIDERS = frozenset({"anthropic", "bedrock", "vertex_ai", "vertex_ai_beta"})
"""litellm providers that turn an assistant message's `thinking_blocks` into Anthropic thinking blocks."""


def signature(delta: Any) -> str | None:
    """The signature a litellm stream delta carries (its `thinking_blocks`), or None."""
    blocks = delta.get("thinking_blocks") if isinstance(delta, dict) else getattr(delta, "thinking_blocks", None)
    for block in blocks or []:
        get = block.get if isinstance(block, dict) else lambda key, b=block: getattr(b, key, None)
        if get("type") == "thinking" and isinstance(get("signature"), str) and get("signature"):
            return str(get("signature"))
    return None


def provider_metadata(sig: str) -> dict:
    """The `providerMetadata` of a reasoning part signed with `sig`."""
    return {METADATA_KEY: {"signature": sig}}


def thinking_blocks(parts: list[dict]) -> list[dict]:
    """The signed reasoning parts of one step as litellm `thinking_blocks`
    (`{"type": "thinking", "thinking": text, "signature": sig}`), in order; unsigned reasoning
    (from providers without signatures) is left out, since Anthropic refuses a thinking block without one."""
    out = []
    for part in parts:
        if part.get("type") != "reasoning":
            continue
        meta = (part.get("providerMetadata") or {}).get(METADATA_KEY) or {}
        sig = meta.get("signature") if isinstance(meta, dict) else None
        if isinstance(sig, str) and sig:
            out.append({"type": "thinking", "thinking": part.get("text", ""), "signature": sig})
    return out


def for_provider(messages: list[dict], provider: str | None) -> list[dict]:
    """`messages` as `provider` accepts them: `thinking_blocks` kept only for the providers that
    send them as thinking blocks (`THINKING_BLOCK_PROVIDERS`). Returns new dicts where it removes."""
    if provider in THINKING_BLOCK_PROVIDERS or not any(map(operator.contains, messages, repeat("thinking_blocks"))):
        return messages  # (the check is one C-level pass: a request's cost stays flat with history)
    return [{k: v for k, v in m.items() if k != "thinking_blocks"} if "thinking_blocks" in m else m
            for m in messages]
