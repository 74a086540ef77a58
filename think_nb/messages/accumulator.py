"""The chunk accumulator: folds a stream of UIMessageChunks into one assistant UIMessage.

The rules are the AI SDK's (`processUIMessageStream`) with Think's tolerance for replayed
and resumed streams (`agents/chat/message-builder.ts`). The panel applies the same rules in
js/src/accumulate.ts; both are checked against the golden chunk fixtures in
tests/fixtures/chunks/ (one expected UIMessage per chunk stream).

- `start` sets the message id from `messageId` (not when continuing a `base` message);
  `start`, `finish` and `message-metadata` merge `messageMetadata` into the message's
  metadata, deeply (nested objects merge, any other value replaces), like the AI SDK's
  `mergeObjects`.
- `start-step` appends `{type: "step-start"}`; `finish-step` closes every open text and
  reasoning part.
- `text-*` and `reasoning-*` are matched by their `id`: `*-start` appends
  `{type, text: "", state: "streaming"}` and opens it under that id, `*-delta` appends to the
  open part of that id (a delta with no open part opens one: a resumed stream), `*-end`
  marks it `done` and closes it (an end with no open part changes nothing). A chunk's
  `providerMetadata` replaces the part's.
- `source-url`, `source-document` and `file` append a part with the chunk's fields.
- `data-<name>` appends `{type, id?, data}`; when a part of that type with that `id` exists,
  its `data` is replaced in place instead. `transient: true` data is never kept.
- Tool chunks keep one part per `toolCallId` (see `_advance` for the state order; an approved
  call asking again with a new approval id opens a new round, see `_reopens`). Only
  `tool-input-start`, `tool-input-available` and `tool-input-error` create it: a
  `tool-<toolName>` part, or a `dynamic-tool` part carrying `toolName` when `dynamic` is
  true. The streamed input text of `tool-input-delta` never becomes the part's `input`
  (Think keeps a partial string off the stored part; the panel shows it aside).
- `error`, `abort` and unknown chunk types change nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

SETTLED_TOOL_STATES = frozenset({"output-available", "output-error", "output-denied"})

TOOL_STATE_RANK = {
    "input-streaming": 0,
    "input-available": 1,
    "approval-requested": 2,
    "approval-responded": 3,
    "output-available": 4,
    "output-error": 4,
    "output-denied": 4,
}
"""Tool part states in order: a part only ever moves to a higher rank."""

SOURCE_FIELDS = {
    "source-url": ("sourceId", "url", "title", "providerMetadata"),
    "source-document": ("sourceId", "mediaType", "title", "filename", "providerMetadata"),
    "file": ("mediaType", "url", "providerMetadata"),
}
"""The chunk fields each source/file part copies (fields the chunk lacks are left out)."""


def is_tool_part(part: dict) -> bool:
    """True for `tool-<name>` and `dynamic-tool` parts."""
    t = part.get("type", "")
    return t.startswith("tool-") or t == "dynamic-tool"


def tool_name_of(part: dict) -> str:
    """The tool name of a tool part (`tool-add` → `add`; `dynamic-tool` → its `toolName`)."""
    return part["toolName"] if part.get("type") == "dynamic-tool" else part["type"][len("tool-"):]


def merge_metadata(base: dict, overrides: dict) -> dict:
    """`base` updated with `overrides`, merging nested dicts (the AI SDK's `mergeObjects`)."""
    merged = dict(base)
    for key, value in overrides.items():
        old = merged.get(key)
        merged[key] = merge_metadata(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return merged


def _reopens(part: dict, approval_id: str) -> bool:
    """True when a `tool-approval-request` asks again for an approved call still running: the
    part is `approval-responded` and approved, and the request carries a new approval id. A tool
    that pauses more than once (the `execute` tool reaching a second gated inner call after its
    first was approved) opens one approval round per pause; a replayed request (same id) never
    does. Only a continuation, which starts from the stored approved message, reaches this: the
    panel's accumulator (js/src/accumulate.ts) never holds an `approval-responded` part."""
    approval = part.get("approval") or {}
    return part.get("state") == "approval-responded" and bool(approval.get("approved")) and \
        bool(approval_id) and approval.get("id") != approval_id


def _text(chunk: dict, key: str) -> str:
    """The string field `key` of `chunk`, or "" when it is missing or not a string."""
    value = chunk.get(key)
    return value if isinstance(value, str) else ""


def _present(chunk: dict, fields: tuple[str, ...]) -> dict:
    """The fields of `chunk` that are set (not missing, not null)."""
    return {f: chunk[f] for f in fields if chunk.get(f) is not None}


class MessageAccumulator:
    """Accumulates UIMessageChunks (dicts) into `self.message`, an assistant UIMessage.

    Args:
        message_id: id of the new message; a `start` chunk with `messageId` overrides it.
        base: an existing assistant message to continue (continuation turns append to a copy;
            its id is kept).
    """

    def __init__(self, message_id: str, base: dict | None = None) -> None:
        self._message: dict = copy.deepcopy(base) if base else {"id": message_id, "role": "assistant", "parts": []}
        self._continuing = bool(base)
        self._open: dict[str, dict] = {}  # "text:<id>" / "reasoning:<id>" → the open part
        self._unjoined: dict[str, list[str]] = {}  # the same keys → deltas not yet in the part's text
        self._stale = False  # some open part's text lacks its latest deltas

    @property
    def message(self) -> dict:
        """The assistant UIMessage so far (every delta's text in its part: a delta is appended to a
        list, and an open part's text is joined when the message is read, not on every delta)."""
        if self._stale:
            self._join()
        return self._message

    @property
    def parts(self) -> list[dict]:
        return self.message["parts"]

    def apply(self, chunk: dict) -> None:
        """Apply one chunk. Unknown chunk types are ignored (forward compatible)."""
        kind = chunk.get("type", "")
        if kind == "text-delta":  # most chunks: no handler lookup
            self._delta("text", chunk)
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, chunk)
        elif kind.startswith("data-"):
            self._data(chunk)

    def apply_run(self, chunks: list[dict]) -> None:
        """`apply` each of `chunks`, a run of `text-delta` chunks of one part (`type`, `id`, and a
        `delta` that is a str: what the engine streams): their texts appended at once."""
        self._delta("text", chunks[0])
        if len(chunks) > 1:
            part_id = chunks[0].get("id")
            pieces = self._unjoined[f"text:{part_id}" if isinstance(part_id, str) else "text:"]
            pieces.extend([chunk["delta"] for chunk in chunks[1:]])
            self._stale = True

    # -- message-level ----------------------------------------------------------------
    def _start(self, chunk: dict) -> None:
        if _text(chunk, "messageId") and not self._continuing:
            self.message["id"] = chunk["messageId"]
        self._merge_metadata(chunk)

    def _merge_metadata(self, chunk: dict) -> None:
        metadata = chunk.get("messageMetadata")
        if isinstance(metadata, dict):
            self.message["metadata"] = merge_metadata(self.message.get("metadata") or {}, metadata)

    def _step_start(self, chunk: dict) -> None:
        self.parts.append({"type": "step-start"})

    def _step_finish(self, chunk: dict) -> None:
        self._join()
        self._open.clear()
        self._unjoined.clear()

    # -- text and reasoning -------------------------------------------------------------
    def _join(self) -> None:
        """Append the open parts' unjoined deltas to their text."""
        for key, pieces in self._unjoined.items():
            if pieces:
                part = self._open[key]
                part["text"] += "".join(pieces)
                pieces.clear()
        self._stale = False

    def _open_part(self, kind: str, chunk: dict) -> dict:
        part: dict[str, Any] = {"type": kind, "text": "", "state": "streaming"}
        part.update(_present(chunk, ("providerMetadata",)))
        self.parts.append(part)
        key = f"{kind}:{_text(chunk, 'id')}"
        if key in self._open:  # a part of that id opened again: the old one's text is complete
            self._join()
        self._open[key] = part
        self._unjoined[key] = []
        return part

    def _delta(self, kind: str, chunk: dict) -> None:
        part_id = chunk.get("id")
        key = f"{kind}:{part_id}" if isinstance(part_id, str) else f"{kind}:"
        pieces = self._unjoined.get(key)
        if pieces is None:
            self._open_part(kind, chunk)
            pieces = self._unjoined[key]
        text = chunk.get("delta")
        if isinstance(text, str) and text:
            pieces.append(text)
            self._stale = True
        meta = chunk.get("providerMetadata")  # what `_present` keeps, without a dict per delta
        if meta is not None:
            self._open[key]["providerMetadata"] = meta

    def _end(self, kind: str, chunk: dict) -> None:
        key = f"{kind}:{_text(chunk, 'id')}"
        if self._unjoined.get(key):
            self._join()
        self._unjoined.pop(key, None)
        part = self._open.pop(key, None)
        if part is not None:
            part["state"] = "done"
            part.update(_present(chunk, ("providerMetadata",)))

    # -- sources, files and data ----------------------------------------------------------
    def _source(self, chunk: dict) -> None:
        kind = chunk["type"]
        self.parts.append({"type": kind, **_present(chunk, SOURCE_FIELDS[kind])})

    def _data(self, chunk: dict) -> None:
        if chunk.get("transient") is True:
            return
        data = {"data": chunk["data"]} if "data" in chunk else {}
        existing = self._data_part(chunk["type"], chunk.get("id"))
        if existing is not None:
            existing.pop("data", None)
            existing.update(data)
            return
        self.parts.append({"type": chunk["type"], **_present(chunk, ("id",)), **data})

    def _data_part(self, kind: str, part_id: Any) -> dict | None:
        if part_id is None:
            return None
        return next((p for p in self.parts if p["type"] == kind and p.get("id") == part_id), None)

    # -- tools ------------------------------------------------------------------------------
    def find_tool_part(self, tool_call_id: str) -> dict | None:
        """The tool part with this `toolCallId`, or None."""
        for part in self.parts:
            if is_tool_part(part) and part.get("toolCallId") == tool_call_id:
                return part
        return None

    def _tool_part(self, chunk: dict) -> dict:
        """The chunk's tool part, created (`input-streaming`) when the call is new."""
        part = self.find_tool_part(_text(chunk, "toolCallId"))
        if part is None:
            name = _text(chunk, "toolName") or "unknown"
            part = ({"type": "dynamic-tool", "toolName": name} if chunk.get("dynamic") is True
                    else {"type": f"tool-{name}"})
            part.update(toolCallId=_text(chunk, "toolCallId"), state="input-streaming")
            part.update(_call_extras(chunk))
            self.parts.append(part)
        return part

    def _advance(self, part: dict | None, state: str, fields: dict) -> None:
        """Move `part` forward to `state` with `fields`; a move that is not forward is ignored.

        States only rise in `TOOL_STATE_RANK`, so a replayed chunk never regresses a part;
        the one exception is a preliminary output, which any later output replaces (its
        `output` and `preliminary` go with it).
        """
        if part is None:
            return
        if state in SETTLED_TOOL_STATES and _is_preliminary(part):
            del part["preliminary"]
            part.pop("output", None)
        elif TOOL_STATE_RANK[state] <= TOOL_STATE_RANK.get(part["state"], 0):
            return
        part.update(fields, state=state)

    def _tool_input_start(self, chunk: dict) -> None:
        self._tool_part(chunk)

    def _tool_input_available(self, chunk: dict) -> None:
        fields = {"input": chunk.get("input"), **_call_extras(chunk)}
        self._advance(self._tool_part(chunk), "input-available", fields)

    def _tool_input_error(self, chunk: dict) -> None:
        fields = {"input": chunk.get("input"), "errorText": _text(chunk, "errorText"), **_call_extras(chunk)}
        self._advance(self._tool_part(chunk), "output-error", fields)

    def _tool_approval_request(self, chunk: dict) -> None:
        approval = {"id": _text(chunk, "approvalId")}
        if chunk.get("approvalDescriptor") is not None:
            approval["descriptor"] = chunk["approvalDescriptor"]
        part = self._known_tool(chunk)
        if part is not None and _reopens(part, approval["id"]):
            part.update(state="approval-requested", approval=approval)  # a new round: see `_reopens`
            return
        self._advance(part, "approval-requested", {"approval": approval})

    def _tool_output_available(self, chunk: dict) -> None:
        fields = {"output": chunk.get("output"), **_present(chunk, ("providerExecuted",))}
        if chunk.get("preliminary") is True:
            fields["preliminary"] = True
        self._advance(self._known_tool(chunk), "output-available", fields)

    def _tool_output_error(self, chunk: dict) -> None:
        fields = {"errorText": _text(chunk, "errorText"), **_present(chunk, ("providerExecuted",))}
        self._advance(self._known_tool(chunk), "output-error", fields)

    def _tool_output_denied(self, chunk: dict) -> None:
        self._advance(self._known_tool(chunk), "output-denied", {})

    def _known_tool(self, chunk: dict) -> dict | None:
        return self.find_tool_part(_text(chunk, "toolCallId"))


def _is_preliminary(part: dict) -> bool:
    """An `output-available` part whose output a later one replaces (`preliminary: true`)."""
    return part["state"] == "output-available" and part.get("preliminary") is True


def _call_extras(chunk: dict) -> dict:
    """What a `tool-input-*` chunk adds to its part besides state and input."""
    extras = _present(chunk, ("title", "providerExecuted"))
    if chunk.get("providerMetadata") is not None:
        extras["callProviderMetadata"] = chunk["providerMetadata"]
    return extras


def _stream(kind: str, action: Callable[[MessageAccumulator, str, dict], Any]) -> Callable:
    return lambda acc, chunk: action(acc, kind, chunk)


def _ignore(acc: MessageAccumulator, chunk: dict) -> None:
    """`tool-input-delta`, `error`, `abort`: nothing in the message changes."""


_HANDLERS: dict[str, Callable[[MessageAccumulator, dict], Any]] = {
    "start": MessageAccumulator._start,
    "finish": MessageAccumulator._merge_metadata,
    "message-metadata": MessageAccumulator._merge_metadata,
    "start-step": MessageAccumulator._step_start,
    "finish-step": MessageAccumulator._step_finish,
    "text-start": _stream("text", MessageAccumulator._open_part),
    "text-delta": _stream("text", MessageAccumulator._delta),
    "text-end": _stream("text", MessageAccumulator._end),
    "reasoning-start": _stream("reasoning", MessageAccumulator._open_part),
    "reasoning-delta": _stream("reasoning", MessageAccumulator._delta),
    "reasoning-end": _stream("reasoning", MessageAccumulator._end),
    "source-url": MessageAccumulator._source,
    "source-document": MessageAccumulator._source,
    "file": MessageAccumulator._source,
    "tool-input-start": MessageAccumulator._tool_input_start,
    "tool-input-delta": _ignore,
    "tool-input-available": MessageAccumulator._tool_input_available,
    "tool-input-error": MessageAccumulator._tool_input_error,
    "tool-approval-request": MessageAccumulator._tool_approval_request,
    "tool-output-available": MessageAccumulator._tool_output_available,
    "tool-output-error": MessageAccumulator._tool_output_error,
    "tool-output-denied": MessageAccumulator._tool_output_denied,
    "error": _ignore,
    "abort": _ignore,
}
