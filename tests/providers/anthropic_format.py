"""The Anthropic messages wire format: what the API refuses (with its error body) and its SSE stream.

The checks and messages are the ones api.anthropic.com answers with (400 `invalid_request_error`):
roles alternate starting with `user`, every `tool_use` is answered by a `tool_result` at the start
of the very next user message (and every `tool_result` answers one), no empty content or empty
text block, ids match `^[a-zA-Z0-9_-]+$`, thinking blocks carry the signature the API gave them
(`signature_for`: the fake's signatures are a hash of the thinking text; the real ones are
verified cryptographically) and come first in their message. With thinking enabled
(`thinking: {"type": "enabled", "budget_tokens": N}`), `max_tokens` must exceed the budget and the
assistant message whose `tool_use` the request answers must start with its thinking block.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from providers.server import Reply

ID = re.compile(r"^[a-zA-Z0-9_-]+$")
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               529: "overloaded_error"}


THINKING_FIRST = ("messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
                  "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
                  "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
                  "thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please "
                  "consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


def signature_for(thinking: str) -> str:
    """The signature the fake gives a thinking block (and checks when it comes back)."""
    return "sig_" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def error_body(status: int, message: str) -> dict:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MAGIC = {"image/png": b"\x89PNG", "image/jpeg": b"\xff\xd8\xff", "image/gif": b"GIF8", "image/webp": b"RIFF",
         "application/pdf": b"%PDF"}
MAX_IMAGE_BYTES = 5 * 1024 * 1024


def _media_problem(block: dict, where: str) -> str | None:
    """What Anthropic says of a bad `image` / `document` block (base64 sources: what litellm sends)."""
    kind = block.get("type")
    if kind not in ("image", "document"):
        return None
    source = block.get("source") or {}
    if source.get("type") != "base64":
        return f"{where}.{kind}.source: Input tag '{source.get('type')}' found using 'type' is not supported here"
    media = source.get("media_type")
    allowed = IMAGE_TYPES if kind == "image" else ("application/pdf",)
    if media not in allowed:
        expected = ", ".join(f"'{m}'" for m in allowed)
        return f"{where}.{kind}.source.base64.media_type: Input should be {expected}"
    try:
        data = base64.b64decode(source.get("data", ""), validate=True)
    except (binascii.Error, ValueError):
        return f"{where}.{kind}.source.base64: invalid base64 data"
    if kind == "image" and len(data) > MAX_IMAGE_BYTES:
        return f"{where}.image.source.base64: image exceeds 5 MB maximum: {len(data)} bytes > {MAX_IMAGE_BYTES} bytes"
    if not data.startswith(MAGIC[media]):
        return f"{where}.{kind}.source.base64.data: Image does not match the provided media type {media}"
    return None


def _blocks(content: Any) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def problem(body: dict) -> str | None:
    """The message of the 400 Anthropic answers this request with, or None when it accepts it."""
    if "max_tokens" not in body:
        return "max_tokens: Field required"
    messages = body.get("messages") or []
    if not messages:
        return "messages: at least one message is required"
    previous_uses: set[str] = set()
    all_uses: set[str] = set()
    for n, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{n}.role: Input should be 'user' or 'assistant'"
        if n == 0 and role != "user":
            return "messages: first message must use the \"user\" role"
        if n and messages[n - 1].get("role") == role:
            return (f"messages: roles must alternate between \"user\" and \"assistant\", but found multiple "
                    f"\"{role}\" roles in a row")
        blocks = _blocks(message.get("content"))
        final_assistant = n == len(messages) - 1 and role == "assistant"
        if not blocks and not final_assistant:
            return (f"messages.{n}: all messages must have non-empty content except for the optional final "
                    "assistant message")
        results: set[str] = set()
        uses: set[str] = set()
        seen_other = False
        for k, block in enumerate(blocks):
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                return "messages: text content blocks must be non-empty"
            if kind == "tool_use":
                if role != "assistant":
                    return f"messages.{n}.content.{k}: tool_use blocks are only allowed in assistant messages"
                if not ID.match(block.get("id", "")):
                    return f"messages.{n}.content.{k}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                if not isinstance(block.get("input"), dict):
                    return f"messages.{n}.content.{k}.tool_use.input: Input should be a valid dictionary"
                if block["id"] in all_uses:
                    return f"messages.{n}.content.{k}: `tool_use` ids must be unique"
                uses.add(block["id"])
                all_uses.add(block["id"])
            elif kind == "tool_result":
                if role != "user":
                    return f"messages.{n}.content.{k}: tool_result blocks are only allowed in user messages"
                if seen_other:
                    return f"messages.{n}: tool_result blocks must come first in the content, before any other block"
                if block.get("tool_use_id") not in previous_uses:
                    return (f"messages.{n}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message.")
                results.add(block["tool_use_id"])
                inner = block.get("content")
                if isinstance(inner, list) and any(b.get("type") == "text" and not b.get("text") for b in inner):
                    return "messages: text content blocks must be non-empty"
                for j, b in enumerate(inner if isinstance(inner, list) else []):
                    if b.get("type") not in ("text", "image", "document", "search_result"):
                        return (f"messages.{n}.content.{k}.tool_result.content.{j}: Input tag '{b.get('type')}' "
                                "found using 'type' does not match any of the expected tags: 'document', 'image', "
                                "'search_result', 'text'")
                    wrong = _media_problem(b, f"messages.{n}.content.{k}.tool_result.content.{j}")
                    if wrong:
                        return wrong
            elif kind in ("image", "document"):
                seen_other = True
                wrong = _media_problem(block, f"messages.{n}.content.{k}")
                if wrong:
                    return wrong
            elif kind in ("thinking", "redacted_thinking"):
                if role != "assistant":
                    return f"messages.{n}.content.{k}: thinking blocks are only allowed in assistant messages"
                if kind == "thinking" and not block.get("signature"):
                    return f"messages.{n}.content.{k}.thinking.signature: Field required"
                if kind == "thinking" and block["signature"] != signature_for(block.get("thinking", "")):
                    return f"messages.{n}.content.{k}: Invalid `signature` in `thinking` block"
                if blocks[0].get("type") not in ("thinking", "redacted_thinking"):
                    return (f"messages.{n}.content.0: If an assistant message contains any thinking blocks, the "
                            f"first block must be `thinking` or `redacted_thinking`. Found `{blocks[0].get('type')}`.")
            else:
                seen_other = True
        missing = previous_uses - results
        if missing:
            return (f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(sorted(missing))}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message.")
        previous_uses = uses
    if previous_uses:
        return (f"messages.{len(messages)}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(sorted(previous_uses))}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message.")
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if body["max_tokens"] <= budget:
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
        last = messages[-1]
        answers = last.get("role") == "user" and any(b.get("type") == "tool_result" for b in _blocks(last["content"]))
        if answers and len(messages) > 1:
            first = (_blocks(messages[-2].get("content")) or [{}])[0].get("type")
            if first not in ("thinking", "redacted_thinking"):
                return THINKING_FIRST.format(n=len(messages) - 2, found=first)
    system = body.get("system")
    if isinstance(system, list) and any(b.get("type") == "text" and not b.get("text") for b in system):
        return "system: text content blocks must be non-empty"
    return None


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _content(reply: Reply) -> list[dict]:
    out: list[dict] = []
    if reply.reasoning:
        out.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature_for(reply.reasoning)})
    if reply.text:
        out.append({"type": "text", "text": reply.text})
    for n, call in enumerate(reply.tool_calls):
        out.append({"type": "tool_use", "id": call.id or f"toolu_fake_{n}", "name": call.name,
                    "input": call.arguments if isinstance(call.arguments, dict) else {}})
    return out


def completion(reply: Reply, model: str) -> dict:
    """A non-streamed answer (`stream` false)."""
    prompt, output = reply.usage or (0, 0)
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": _content(reply),
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": output}}


def events(reply: Reply, model: str) -> Iterator[bytes]:
    """The SSE events of a streamed answer. Usage: input tokens in `message_start` and output tokens
    in `message_delta` (`usage_mode="normal"`, what Anthropic sends); only in `message_delta`
    (`"final_only"`); or nowhere (`"none"`)."""
    counts = reply.usage if reply.usage_mode != "none" else None
    start_usage = {"input_tokens": counts[0], "output_tokens": 1} if counts and reply.usage_mode == "normal" else {}
    message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None}
    if start_usage:
        message["usage"] = start_usage
    yield _sse("message_start", {"type": "message_start", "message": message})
    step = reply.piece
    index = 0

    def block(start: dict, deltas: Iterator[dict]) -> Iterator[bytes]:
        yield _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        for d in deltas:
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})

    def pieces(text: str, size: int) -> Iterator[str]:
        return (text[i:i + size] for i in range(0, len(text), size))

    if reply.reasoning:
        yield from block({"type": "thinking", "thinking": ""},
                         iter([*({"type": "thinking_delta", "thinking": p} for p in pieces(reply.reasoning, step)),
                               {"type": "signature_delta", "signature": signature_for(reply.reasoning)}]))
        index += 1
    if reply.text:
        yield from block({"type": "text", "text": ""},
                         ({"type": "text_delta", "text": p} for p in pieces(reply.text, step)))
        index += 1
    for n, call in enumerate(reply.tool_calls):
        yield from block({"type": "tool_use", "id": call.id or f"toolu_fake_{n}", "name": call.name, "input": {}},
                         ({"type": "input_json_delta", "partial_json": p} for p in pieces(call.raw(), step * 2)))
        index += 1
    delta: dict[str, Any] = {"type": "message_delta",
                             "delta": {"stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                                       "stop_sequence": None}}
    if counts:
        delta["usage"] = ({"output_tokens": counts[1]} if reply.usage_mode == "normal"
                          else {"input_tokens": counts[0], "output_tokens": counts[1]})
    yield _sse("message_delta", delta)
    yield _sse("message_stop", {"type": "message_stop"})
