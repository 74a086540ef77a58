"""The trust boundary for messages: what may enter the transcript from outside the engine.

Every message that arrives through `submit`, `send`, `save_messages` or a panel frame is checked
here *before anything is stored*; a batch is all-or-nothing. The rules:

- shape: `{id?: str (1-256 chars), role: "user" | "assistant" | "system", parts: [...],
  metadata?: dict}`; each known part type is validated with pydantic (`text`, `reasoning`,
  `step-start`, `file`, `source-url`, `source-document`, `data-*`: `think_nb.messages.shapes`,
  imported on first need; a message of the plain shape, `plain_message`, needs no model and a
  text-only turn never imports pydantic); unknown part types are kept
  as data (the AI SDK adds types over time). A `file` part's inline `data:` URL must be base64 of at
  most `think_nb.messages.media.MAX_MEDIA_BYTES` (5 MiB).
- roles: a message from outside speaks as the user or, to seed history, the assistant (a panel's
  frame as the user only); never as the system (`check_speaker`): the model's system instruction is
  the agent's own prompt. An imported transcript keeps the framework's stored `system` notes as
  history, and `think_nb.messages.convert` sends every stored `system` message to the model as a
  user message (as Think sends its execution-outcome notes).
- tool parts (`tool-<name>`, `dynamic-tool`) never come from outside, in any state: only the
  engine records tool calls, their approvals (`approve`/`deny`) and their outputs (the tool's
  run, or `add_tool_output` for a client tool). A plain assistant text message may seed history.
- ids are not a way to rewrite history: an id that is already stored is a no-op when the
  message equals the stored one (clients resend history, as the AI SDK does) and refused when
  it differs (editing is an explicit operation: `regenerate()`, a new branch). One id twice in
  a batch is refused.

- values: a message is taken in its stored form (`jsonsafe.stored_value`: NaN → null, a set →
  a sorted array, bytes → `{"type": "bytes", ...}`, a lone surrogate → U+FFFD, ...) before it is
  checked or compared, so what is checked, kept in memory and stored is one value; a message
  nested more than `jsonsafe.STORED_DEPTH` containers deep is refused (`incoming`), never cut
  and never a `RecursionError`.

- sanitized (`think_nb.messages.sanitize`, Think's `sanitizeMessage`): OpenAI `itemId` /
  `reasoningEncryptedContent` metadata removed, an empty reasoning part without provider metadata
  dropped, before the message is checked, compared or stored.

A refusal is a `UserError` of one line naming the message, the field and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from think_nb import jsonsafe
from think_nb.errors import UserError
from think_nb.messages.sanitize import sanitize

if TYPE_CHECKING:
    import pydantic

ROLES = ("user", "assistant", "system")
SPEAKERS = ("user", "assistant")
"""The roles a message from outside the agent may have (`check_speaker`)."""


def is_tool_part_type(kind: Any) -> bool:
    """`tool-<name>` or `dynamic-tool`, in any letter case (`Tool-x` is refused too, not kept as data)."""
    return isinstance(kind, str) and (kind.lower().startswith("tool-") or kind.lower() == "dynamic-tool")


def check_speaker(message: Any, where: str, speakers: tuple[str, ...] = SPEAKERS) -> None:
    """Raise `UserError` (one line) when `message` (a dict) has a role of `ROLES` outside `speakers`:
    the one guard of every entry path (a panel's frame passes `("user",)`)."""
    role = message.get("role") if isinstance(message, dict) else None
    if isinstance(role, str) and role in ROLES and role not in speakers:
        allowed = " or ".join(repr(s) for s in speakers)
        raise UserError(f"{where} has role {role!r}; a message sent to an agent has role {allowed}: give the agent "
                        "instructions in its system prompt (get_system_prompt / before_turn); nothing was stored.")


def check_message(message: Any, where: str, speakers: tuple[str, ...] = SPEAKERS) -> None:
    """Raise `UserError` (one line) unless `message` is an acceptable incoming UIMessage whose role
    is one of `speakers` (`check_speaker`)."""
    if not isinstance(message, dict):
        raise UserError(f"{where} is {type(message).__name__}, not a UIMessage dict; use "
                        "{'id': ..., 'role': 'user', 'parts': [{'type': 'text', 'text': ...}]} or user_message(text).")
    check_speaker(message, where, speakers)
    if plain_message(message):
        return  # what the models accept, beyond doubt: no need to build them
    from think_nb.messages import shapes

    try:
        shapes.Message.model_validate(message)
    except shapes.pydantic.ValidationError as exc:
        raise UserError(f"{where}: {_first_error(exc)}.") from None
    for n, part in enumerate(message["parts"]):
        _check_part(part, f"{where} part {n}")


def plain_message(message: dict) -> bool:
    """True when `message` is of the plain shape every model of `think_nb.messages.shapes` accepts
    without a doubt: exact `str` id (1-256 characters) or none, a role, a list of parts each a
    `text`/`reasoning` part (exact `str` text, state streaming/done or none) or a `step-start`,
    string keys, metadata a dict or none. False sends it to the models (which may accept it too)."""
    if type(message.get("role")) is not str or message["role"] not in ROLES or not _str_keys(message):
        return False
    mid, parts, metadata = message.get("id"), message.get("parts"), message.get("metadata")
    if mid is not None and not (type(mid) is str and 1 <= len(mid) <= 256):
        return False
    if metadata is not None and not (type(metadata) is dict and _str_keys(metadata)):
        return False
    return type(parts) is list and all(_plain_part(part) for part in parts)


def _plain_part(part: Any) -> bool:
    if type(part) is not dict or not _str_keys(part):
        return False
    kind = part.get("type")
    if kind == "step-start":
        return type(kind) is str
    state = part.get("state")
    return (kind in ("text", "reasoning") and type(kind) is str and type(part.get("text")) is str
            and (state is None or (type(state) is str and state in ("streaming", "done"))))


def _str_keys(value: dict) -> bool:
    return all(type(key) is str for key in value)


def _check_part(part: Any, where: str) -> None:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise UserError(f"{where} is not a part: it needs a string 'type', e.g. {{'type': 'text', 'text': '...'}}.")
    kind = part["type"]
    if is_tool_part_type(kind):
        raise UserError(f"{where} is a tool part ({kind!r}, state {part.get('state')!r}); only the engine records "
                        "tool calls: approve with agent.approve(id) / deny(id), send client tool results with "
                        "agent.add_tool_output(id, output).")
    from think_nb.messages import shapes

    model = shapes.part_model(kind)
    if model is None:
        return  # an unknown part type is kept as data
    try:
        model.model_validate(part)
    except shapes.pydantic.ValidationError as exc:
        raise UserError(f"{where} ({kind}): {_first_error(exc)}.") from None
    if kind == "file" and part["url"].startswith("data:"):
        _check_attachment(part, where)


def _check_attachment(part: dict, where: str) -> None:
    """A file part's inline data: base64, at most `media.MAX_MEDIA_BYTES` (what a model takes)."""
    from think_nb.messages import media

    if media.parse_data_url(part["url"]) is None:
        raise UserError(f"{where} (file): its url is a data: URL without base64 data; send "
                        "'data:<media type>;base64,<data>'.")
    size = media.file_size(part["url"].split(",", 1)[1])
    if size > media.MAX_MEDIA_BYTES:
        name = part.get("filename") or part["mediaType"]
        raise UserError(f"{where} (file): {name} is {size / 2**20:.1f} MiB; attach at most "
                        f"{media.MAX_MEDIA_BYTES // 2**20} MiB (shrink or crop it); nothing was stored.")


def incoming(message: Any, where: str) -> Any:
    """`message` in its stored form (`jsonsafe.stored_value`, a new value: the caller's is never
    kept), sanitized (`think_nb.messages.sanitize`: Think's `sanitizeMessage`).
    Raises `UserError` (one line, naming the part) when it is nested more than
    `jsonsafe.STORED_DEPTH` containers deep: storing would cut it, so it is refused whole."""
    try:
        return sanitize(jsonsafe.stored_value(message, strict_depth=True))
    except jsonsafe.TooDeep:
        parts = message.get("parts") if isinstance(message, dict) else None
        deep = next((n for n, part in enumerate(parts) if _too_deep(part)), None) if isinstance(parts, list) else None
        what = f"{where} part {deep}" if deep is not None else where
        raise UserError(f"{what} is nested more than {jsonsafe.STORED_DEPTH} levels deep (containers in "
                        "containers); flatten it, or put deep data in a part as a JSON string "
                        "(json.dumps(value)); nothing was stored.") from None


def _too_deep(part: Any) -> bool:
    try:
        jsonsafe.to_json_value(part, jsonsafe.STORED_DEPTH - 2, strict_depth=True)  # message > parts > part
    except jsonsafe.TooDeep:
        return True
    return False


def admit(messages: Any, stored: Callable[[str], dict | None]) -> list[dict]:
    """Check a batch of incoming messages; return copies of those to append, in their stored form
    (`incoming`; already stored, identical ones left out). Raises `UserError` for the first bad
    message; nothing is changed.

    Args:
        messages: the caller's list of UIMessages.
        stored: `id -> stored message | None` (the conversation's store).
    """
    if not isinstance(messages, (list, tuple)):
        raise UserError(f"messages must be a list of UIMessages, not {type(messages).__name__}.")
    out, seen = [], set()
    for n, message in enumerate(messages):
        named = isinstance(message, dict) and message.get("id")
        where = f"message {n}" + (f" ({jsonsafe.stored_value(message.get('id'))!r})" if named else "")
        message = incoming(message, where)
        message_id = message.get("id") if isinstance(message, dict) else None
        if isinstance(message_id, str) and message_id:
            if message_id in seen:
                raise UserError(f"{where}: the id appears twice in this batch; give each message its own id.")
            seen.add(message_id)
            existing = stored(message_id)
            if existing is not None:
                if _same(existing, message):
                    continue  # a client resending history (tool parts included, as stored): nothing to do
                raise UserError(f"{where}: a different message with this id is already stored; ids cannot rewrite "
                                "history: send it with a new id, or use agent.regenerate() for a new reply.")
        check_message(message, where)
        out.append(message)
    return out


def _same(a: dict, b: dict) -> bool:
    def canon(m: dict) -> str:  # both are in their stored form (`incoming`, the store)
        return json.dumps({k: m.get(k) for k in ("id", "role", "parts")}, sort_keys=True, allow_nan=False)

    return canon(a) == canon(b)


def _first_error(exc: pydantic.ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(p) for p in error.get("loc", ())) or "value"
    return f"field {field!r}: {error.get('msg', 'invalid')} (got {error.get('input')!r:.60})"


# -- imported transcripts (Think.import_messages) -------------------------------------------------------
IMPORTABLE_TOOL_STATES = ("output-available", "output-error", "output-denied")


def check_imported(messages: Any) -> list[dict]:
    """Check a transcript read back from `agent.export("json")`; return copies to store, in their
    stored form (`incoming`: too deep is refused).

    The rules of `check_message`, except that **settled** tool parts (`output-available`,
    `output-error`, `output-denied`) are history and may be imported: they are inert, the engine
    never acts on them. A tool part in any other state (`input-streaming`, `input-available`,
    `approval-requested`, `approval-responded`) would be a forged pending call (an approval that
    `approve()` would run, an input the next step would execute) and is refused, as are settled
    parts whose approval contradicts their state (a call approved yet denied, or denied yet run).
    Every message needs an id, ids and tool call ids are unique in the batch. Raises `UserError`
    (one line) for the first bad message; nothing is stored.
    """
    if not isinstance(messages, (list, tuple)):
        raise UserError(f"messages must be a list of UIMessages, not {type(messages).__name__}.")
    seen: set[str] = set()
    calls: set[str] = set()
    out = []
    for n, message in enumerate(messages):
        named = isinstance(message, dict) and message.get("id")
        where = f"message {n}" + (f" ({jsonsafe.stored_value(message.get('id'))!r})" if named else "")
        message = incoming(message, where)
        if not isinstance(message, dict) or not isinstance(message.get("id"), str) or not message["id"]:
            raise UserError(f"{where}: an imported message needs a string id; import a file written by "
                            "agent.export('json').")
        if message["id"] in seen:
            raise UserError(f"{where}: the id appears twice in this transcript; each message needs its own id.")
        seen.add(message["id"])
        parts = message.get("parts")
        if not isinstance(parts, list):
            raise UserError(f"{where}: field 'parts' must be a list of parts.")
        tools = [(k, p) for k, p in enumerate(parts) if isinstance(p, dict) and is_tool_part_type(p.get("type"))]
        for k, part in tools:
            _check_settled_tool(part, f"{where} part {k}", message.get("role"), calls)
        others = {**message, "parts": [p for k, p in enumerate(parts) if k not in {k for k, _ in tools}]}
        check_message(others, where, ROLES)  # a stored system note is history; the model reads it as the user's
        out.append(message)
    return out


def _check_settled_tool(part: dict, where: str, role: Any, calls: set[str]) -> None:
    state = part.get("state")
    if role != "assistant":
        raise UserError(f"{where}: a tool part in a {role!r} message; only assistant messages hold tool calls.")
    if state not in IMPORTABLE_TOOL_STATES:
        raise UserError(f"{where} is a tool call in state {state!r}; only settled calls "
                        f"({', '.join(IMPORTABLE_TOOL_STATES)}) can be imported: a pending call or approval "
                        "would run a tool nobody approved here.")
    from think_nb.messages import shapes

    try:
        tool = shapes.SettledToolPart.model_validate(part)
    except shapes.pydantic.ValidationError as exc:
        raise UserError(f"{where} ({part.get('type')}): {_first_error(exc)}.") from None
    if tool.type == "dynamic-tool" and not tool.toolName:
        raise UserError(f"{where}: a dynamic-tool part needs its 'toolName'.")
    approved = None if tool.approval is None else tool.approval.approved
    if (state == "output-denied" and approved is True) or (state != "output-denied" and approved is False):
        raise UserError(f"{where}: state {state!r} contradicts its approval {part.get('approval')!r}; "
                        "import the transcript as exported.")
    if tool.toolCallId in calls:
        raise UserError(f"{where}: tool call id {tool.toolCallId!r} appears twice; each call needs its own id.")
    calls.add(tool.toolCallId)
