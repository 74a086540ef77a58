"""The OpenAI chat-completions wire format: what the API refuses (with its error body) and its SSE stream.

The checks and messages are the ones api.openai.com answers with (400 `invalid_request_error`).
A message field the chat-completions schema does not define (e.g. litellm's `thinking_blocks`) is
refused too, as strict OpenAI-compatible servers (Groq, DeepSeek for `reasoning_content`) do.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from providers.server import Reply

ROLES = {"system", "developer", "user", "assistant", "tool"}
FIELDS = {"system": {"role", "content", "name"}, "developer": {"role", "content", "name"},
          "user": {"role", "content", "name"}, "tool": {"role", "content", "tool_call_id"},
          "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}}
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ERROR_TYPES = {400: ("invalid_request_error", None), 401: ("invalid_request_error", "invalid_api_key"),
               403: ("invalid_request_error", "unsupported_country_region_territory"),
               404: ("invalid_request_error", "model_not_found"), 429: ("requests", "rate_limit_exceeded"),
               500: ("server_error", None), 503: ("server_error", None)}


def error_body(status: int, message: str) -> dict:
    kind, code = ERROR_TYPES.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def problem(body: dict) -> str | None:
    """The message of the 400 OpenAI answers this request with, or None when it accepts it."""
    messages = body.get("messages")
    if not messages:
        return "[] is too short - 'messages'"
    for n, tool in enumerate(body.get("tools") or []):
        if not NAME.match(tool.get("function", {}).get("name", "")):
            return (f"Invalid 'tools[{n}].function.name': string does not match pattern. "
                    "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")
    if "tool_choice" in body and not body.get("tools"):
        return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
    if body.get("stream_options") and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    waiting: dict[str, int] = {}  # tool call id -> index of the assistant message that made it
    for n, message in enumerate(messages):
        role = message.get("role")
        if role not in ROLES:
            return f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool'."
        unknown = sorted(set(message) - FIELDS[role])
        if unknown:
            return f"Additional properties are not allowed ('{unknown[0]}' was unexpected) - 'messages.{n}'"
        if role == "tool":
            wrong = _content_problem(role, message.get("content"), n)
            if wrong:
                return wrong
            if message.get("tool_call_id") not in waiting:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                        "message with 'tool_calls'.")
            waiting.pop(message["tool_call_id"])
            continue
        if waiting:
            first = min(waiting.values())
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                    + ", ".join(waiting) + f" (messages.[{first}].role)")
        content = message.get("content")
        wrong = _content_problem(role, content, n)
        if wrong:
            return wrong
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if content is None and not calls:
                return f"Invalid value for 'content': expected a string, got null. (messages.[{n}].content)"
            for k, call in enumerate(calls):
                if len(call.get("id", "")) > 40:
                    return (f"Invalid 'messages[{n}].tool_calls[{k}].id': string too long. Expected a string with "
                            f"maximum length 40, but got a string with length {len(call['id'])} instead.")
                waiting[call["id"]] = n
        elif content is None:
            return f"Invalid value for 'content': expected a string, got null. (messages.[{n}].content)"
    if waiting:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                "'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(waiting))
    return None


PART_TYPES = {"user": ("text", "image_url", "input_audio", "file"), "system": ("text",), "developer": ("text",),
              "tool": ("text",), "assistant": ("text", "refusal")}
IMAGE = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]+={0,2})$")
MAGIC = {"png": b"\x89PNG", "jpeg": b"\xff\xd8\xff", "gif": b"GIF8", "webp": b"RIFF"}


def _content_problem(role: str, content: Any, n: int) -> str | None:
    """What OpenAI says of a message's content parts: the types each role takes (a tool message
    takes text only), images as https or base64 `data:` URLs of real images, files as PDF data."""
    if not isinstance(content, list):
        return None
    allowed = PART_TYPES[role]
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            supported = ", ".join(f"'{t}'" for t in allowed)
            return f"Invalid value: '{kind}'. Supported values are: {supported}. (messages[{n}].content[{k}].type)"
        if kind == "text" and not isinstance(part.get("text"), str):
            return f"Invalid type for 'messages[{n}].content[{k}].text': expected a string."
        if kind == "image_url":
            url = (part.get("image_url") or {}).get("url", "")
            match = IMAGE.match(url)
            if url.startswith("https://"):
                continue
            if not match:
                return "Invalid image URL: expected a https URL or a base64 data URL of an image."
            data = base64.b64decode(match.group(2))
            if not data.startswith(MAGIC[match.group(1)]):
                return "You uploaded an unsupported image. Please make sure your image is valid."
        if kind == "file":
            data = (part.get("file") or {}).get("file_data", "")
            if not data.startswith("data:application/pdf;base64,") or \
                    not base64.b64decode(data.split(",", 1)[1]).startswith(b"%PDF"):
                return f"Invalid file data: 'messages[{n}].content[{k}].file.file_data'. Expected a base64 PDF."
    return None


def _chunk(model: str, choices: list, usage: dict | None = None) -> dict:
    out: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000,
                           "model": model, "choices": choices}
    if usage is not None:
        out["usage"] = usage
    return out


def _usage(reply: Reply) -> dict | None:
    if reply.usage is None or reply.usage_mode == "none":
        return None
    prompt, completion = reply.usage
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _sse(data: dict | str) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def completion(reply: Reply, model: str) -> dict:
    """A non-streamed answer (`stream` false)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": c.id or f"call_{n}", "type": "function",
                                  "function": {"name": c.name, "arguments": c.raw()}}
                                 for n, c in enumerate(reply.tool_calls)]
    finish = "tool_calls" if reply.tool_calls else "stop"
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(reply) or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def events(reply: Reply, model: str) -> Iterator[bytes]:
    """The SSE events of a streamed answer, `data: [DONE]` last. Usage: in the finishing chunk
    (`usage_mode="normal"`, as several OpenAI-compatible servers do) or only in a final choice-less
    chunk (`"final_only"`, what api.openai.com sends with `stream_options.include_usage`)."""
    def delta(**fields: Any) -> bytes:
        return _sse(_chunk(model, [{"index": 0, "delta": fields, "finish_reason": None}]))

    yield delta(role="assistant", content="")
    step = reply.piece
    for start in range(0, len(reply.reasoning), step):
        yield delta(reasoning_content=reply.reasoning[start:start + step])
    for start in range(0, len(reply.text), step):
        yield delta(content=reply.text[start:start + step])
    for index, call in enumerate(reply.tool_calls):
        yield delta(tool_calls=[{"index": index, "id": call.id or f"call_fake_{index}", "type": "function",
                                 "function": {"name": call.name, "arguments": ""}}])
        raw = call.raw()
        for start in range(0, len(raw), step * 2):
            yield delta(tool_calls=[{"index": index, "function": {"arguments": raw[start:start + step * 2]}}])
    finish = "tool_calls" if reply.tool_calls else "stop"
    usage = _usage(reply)
    yield _sse(_chunk(model, [{"index": 0, "delta": {}, "finish_reason": finish}],
                      usage if reply.usage_mode == "normal" else None))
    if usage is not None and reply.usage_mode == "final_only":
        yield _sse(_chunk(model, [], usage))
    yield _sse("[DONE]")
