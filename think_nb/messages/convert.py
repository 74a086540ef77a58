"""UIMessage history → OpenAI-style model messages (what `litellm.acompletion` takes).

Done at the start of every step, never stored (DESIGN §1). An assistant UIMessage becomes one
assistant model message per step (split at `step-start`), each followed by one `tool` message
per tool call. Tool parts without a settled result are left out (the AI SDK's
`ignoreIncompleteToolCalls`), so a broken history never makes a model call fail. Tool inputs
and outputs reach the model as strict, compact JSON text (`think_nb.jsonsafe.dumps`), except
tables and truncated outputs (`think_nb.data_context.model_text`); a user message's `data-context`
parts follow its text (`think_nb.data_context.context_text`). A user message's `file` parts and a tool
output's images (a content output, a `kernel-run`'s figures) become OpenAI content parts after the
text (`think_nb.messages.media`, which also adapts them to each model: `media.for_model`).

The only system message sent is the system prompt: a `system` UIMessage in the transcript (the
framework's execution-outcome note, or one an imported transcript holds) is sent as a user message,
as Think sends its stored notes (`toProviderSafeExecutionOutcomeMessage`); nothing from outside the
agent becomes a system instruction (`think_nb.messages.validate.check_speaker`).

A step's reasoning signed by Anthropic goes back as the assistant message's `thinking_blocks`
(`think_nb.models.reasoning`: Anthropic requires it with thinking enabled; other providers' requests
drop it). Tool call ids are sent as every provider accepts them (`provider_call_id`): a history may hold ids
made by another provider (a model switched mid-conversation), e.g. Kimi's `functions.add:0`, which
Anthropic refuses (ids must match `^[a-zA-Z0-9_-]+$`), or ids longer than OpenAI's 40 characters.
"""

from __future__ import annotations

import hashlib
import operator
import re
from typing import Any

from think_nb import jsonsafe
from think_nb.data_context import context_text, model_text
from think_nb.messages.accumulator import SETTLED_TOOL_STATES, is_tool_part, tool_name_of
from think_nb.messages.final import is_final
from think_nb.messages.media import content_output_parts, file_part_content, is_content, model_parts
from think_nb.models.reasoning import thinking_blocks

DENIED_TEXT = "The user denied this tool call."
_VALID_ID = re.compile(r"[a-zA-Z0-9_-]{1,40}")


def provider_call_id(call_id: str) -> str:
    """`call_id` when every provider accepts it (`[a-zA-Z0-9_-]`, 1-40 characters), else a stable
    stand-in derived from it (`call_` + 32 hex digits), the same for the call and its result."""
    if _VALID_ID.fullmatch(call_id):
        return call_id
    return "call_" + hashlib.blake2b(call_id.encode(), digest_size=16).hexdigest()


def to_model_messages(messages: list[dict], system: str | None = None, *, stored: bool = False) -> list[dict]:
    """Convert UIMessages to model messages, with an optional leading system message.

    Args:
        messages: UIMessages `{id, role, parts}` in conversation order.
        system: the system prompt; omitted when empty.
        stored: the messages are the conversation's stored dicts, which change in place only to
            settle an open part (`think_nb.messages.final`; `think_nb.conversation` replaces a
            message to change it otherwise): each message's conversion is then remembered by
            identity, so a turn does not convert again the history the turn before converted
            (per-turn cost flat with history length).

    Returns:
        A list of `{"role": "system"|"user"|"assistant"|"tool", ...}` dicts (fresh top-level dicts).
    """
    out: list[dict] = [{"role": "system", "content": system}] if system else []
    if not stored:
        for message in messages:
            out.extend(_convert(message))
        return out
    start = _known_prefix(messages, out)
    tail: list[list[dict]] = []  # the model messages of each message past the remembered prefix
    for message in messages[start:] if start else messages:
        converted = _remembered(message)
        tail.append(converted)
        out.extend(map(dict, converted))  # copies: a hook editing `ctx.messages` cannot change the memo
    _remember_prefix(messages, start, tail)
    return out


_PREFIXES: dict[int, tuple[list[dict], list[dict]]] = {}
"""Per conversation (keyed by the identity of its first message): its longest run of leading
messages that were final when converted, and their model messages. The next request of that
conversation starts with the same message objects (a turn appends to the branch), so their model
messages are copied in one C-level pass instead of being looked up one message at a time: the
per-turn cost of building a request stays nearly flat as the history grows (issue 18 §4)."""
PREFIXES = 16
"""Conversations whose prefix is remembered (the oldest dropped first)."""


def _known_prefix(messages: list[dict], out: list[dict]) -> int:
    """Append to `out` copies of the remembered model messages of `messages`' leading final
    messages (the same objects as last time, checked by identity); returns how many there were."""
    hit = _PREFIXES.get(id(messages[0])) if messages else None
    if hit is None:
        return 0
    known, converted = hit
    if len(known) > len(messages) or not all(map(operator.is_, known, messages)):
        return 0
    out.extend(map(dict, converted))  # copies: a hook editing `ctx.messages` cannot change the memo
    return len(known)


def _remember_prefix(messages: list[dict], start: int, tail: list[list[dict]]) -> None:
    """Extend the remembered prefix of `messages`' conversation past `start` with the final
    messages that follow it; `tail[k]` holds the model messages of `messages[start + k]`."""
    end = start
    while end < len(messages) and is_final(messages[end]):
        end += 1
    if end == start:
        return
    key = id(messages[0])
    hit = _PREFIXES.pop(key, None) if start else None  # start > 0: `_known_prefix` found it
    known, converted = hit if hit is not None else ([], [])
    more = [entry for converted_one in tail[:end - start] for entry in converted_one]
    # new lists, swapped in whole: a reader never sees a prefix and conversions of different lengths
    known, converted = known + messages[start:end], converted + more
    _PREFIXES[key] = (known, converted)
    if len(_PREFIXES) > PREFIXES:
        del _PREFIXES[next(iter(_PREFIXES))]


def _convert(message: dict) -> list[dict]:
    """One UIMessage's model messages."""
    if message["role"] == "assistant":
        return _assistant(message)
    parts = message.get("parts", [])
    text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
    attached = [context_text(p) for p in parts if p.get("type") == "data-context"]
    content = "\n\n".join([text, *attached]) if attached else text
    files = [p for p in parts if p.get("type") == "file"]
    if not files or message["role"] != "user":  # a stored system note speaks as the user (see the docstring)
        return [{"role": "user" if message["role"] == "system" else message["role"], "content": content}]
    # a user's images and files: OpenAI content parts (think_nb.messages.media), the text first
    media = [entry for p in files for entry in file_part_content(p)]
    return [{"role": "user", "content": ([{"type": "text", "text": content}] if content else []) + media}]


_CONVERTED: dict[int, tuple[dict, tuple | None, list[dict]]] = {}
REMEMBERED = 8192
"""Stored messages whose conversion is remembered (user and assistant: two full `hydration_limit`
windows; the oldest remembered dropped first)."""


def _remembered(message: dict) -> list[dict]:
    """`_convert(message)` for a stored message, remembered by identity; the entry keeps the
    message alive, so its id is never reused while remembered. A message final when converted
    (`think_nb.messages.final`: nothing changes it in place any more) is used as remembered; any
    other is checked by a fingerprint of its parts (type, state, approval id, text length: what
    changes when the engine settles a call or a recovery closes a part in place)."""
    hit = _CONVERTED.get(id(message))
    if hit is not None and hit[0] is message and (hit[1] is None or hit[1] == _fingerprint(message)):
        return hit[2]
    mark = None if is_final(message) else _fingerprint(message)
    _CONVERTED.pop(id(message), None)
    _CONVERTED[id(message)] = (message, mark, _convert(message))
    if len(_CONVERTED) > REMEMBERED:
        del _CONVERTED[next(iter(_CONVERTED))]
    return _CONVERTED[id(message)][2]


def _fingerprint(message: dict) -> tuple:
    return tuple((p.get("type"), p.get("state"), (p.get("approval") or {}).get("id"), len(p.get("text") or ""),
                  "output" in p) for p in message.get("parts", []))


def _assistant(message: dict) -> list[dict]:
    out: list[dict] = []
    for step in _steps(message.get("parts", [])):
        text = "".join(p["text"] for p in step if p.get("type") == "text")
        tools = [p for p in step if is_tool_part(p) and p.get("state") in SETTLED_TOOL_STATES]
        if not text and not tools:
            continue
        # "" rather than None: litellm drops a None content, and some OpenAI-compatible servers'
        # templates (llama-cpp-python's chatml-function-calling) then fail on the missing key.
        entry: dict[str, Any] = {"role": "assistant", "content": text}
        signed = thinking_blocks(step)
        if signed:  # Anthropic's signed thinking goes back with its step (think_nb/models/reasoning.py)
            entry["thinking_blocks"] = signed
        if tools:
            entry["tool_calls"] = [_tool_call(p) for p in tools]
        out.append(entry)
        out.extend({"role": "tool", "tool_call_id": provider_call_id(p["toolCallId"]), "content": _tool_result(p)}
                   for p in tools)
    return out


def _steps(parts: list[dict]) -> list[list[dict]]:
    steps: list[list[dict]] = [[]]
    for part in parts:
        if part.get("type") == "step-start":
            if steps[-1]:
                steps.append([])
        else:
            steps[-1].append(part)
    return steps


def _tool_call(part: dict) -> dict:
    return {"id": provider_call_id(part["toolCallId"]), "type": "function",
            "function": {"name": tool_name_of(part), "arguments": jsonsafe.dumps_plain(_object(part.get("input")))}}


def _object(value: Any) -> dict:
    """Tool call arguments as a JSON object: Anthropic refuses anything else (a call whose arguments
    were not valid JSON keeps its raw text as `input`; the model reads why in the error result)."""
    return value if isinstance(value, dict) else {}


def tool_result_text(part: dict) -> str:
    """The `tool` message content the model reads for a settled tool part, as text (what the context's
    token count counts): an image or file the model receives beside it is a one-line placeholder here,
    never its base64 (a provider counts an image by its pixels, not its bytes)."""
    result = _tool_result(part)
    if isinstance(result, str):
        return result
    return "\n".join(p["text"] if p.get("type") == "text" else f"[{p.get('type', 'media')} attached]"
                     for p in result)


def _tool_result(part: dict) -> str | list[dict]:
    edited = (part.get("approval") or {}).get("input")
    output = part.get("output")
    says_so = isinstance(output, dict) and output.get("type") == "kernel-run"  # run_code's report tells it
    text = _result_text(part)
    if isinstance(edited, dict) and part["state"] in ("output-available", "output-error") and not says_so:
        note = (f"[The user edited your input before approving; the call ran with "
                f"{jsonsafe.dumps_plain(edited)}]\n")
        text = note + text
    images = _result_media(part) if part["state"] == "output-available" else []
    return [{"type": "text", "text": text}, *images] if images else text


def _result_media(part: dict) -> list[dict]:
    """The images and files of a tool's output, as model content parts: a content output's media
    (`think_nb.messages.media`), a `kernel-run`'s PNG figures."""
    output = part.get("output")
    if isinstance(output, dict) and is_content(output):
        return [p for p in content_output_parts(output) if p.get("type") != "text"]
    if isinstance(output, dict) and output.get("type") == "kernel-run":
        return [entry for item in output.get("outputs") or [] if isinstance(item, dict)
                and item.get("mime") == "image/png" and isinstance(item.get("data"), str)
                for entry in model_parts("image/png", "".join(item["data"].split()))]
    return []


def _result_text(part: dict) -> str:
    if part["state"] == "output-error":
        return f"Error: {part.get('errorText', '')}"
    if part["state"] == "output-denied":
        reason = (part.get("approval") or {}).get("reason")
        return f"{DENIED_TEXT} {reason}" if reason else DENIED_TEXT
    output = part.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and is_content(output):  # its text; its media follow (`_result_media`)
        texts = [p["text"] for p in content_output_parts(output) if p.get("type") == "text"]
        return "\n\n".join(texts) or "[the tool returned only media]"
    if isinstance(output, dict) and str(output.get("type", "")).startswith("kernel-"):  # think_nb.kernel's tools
        from think_nb.kernel.report import model_text as kernel_text

        return kernel_text(output)
    text = model_text(output)
    return text if text is not None else jsonsafe.dumps_plain(output)
