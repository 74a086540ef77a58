"""Chunk → message accumulation: builds one assistant UIMessage from a UIMessageChunk stream.

Mirrors Think's `message-builder.ts applyChunkToParts` / `stream-accumulator.ts`: text and
reasoning `*-start` push a part in state `streaming`, deltas append, `*-end` marks it `done`;
`start-step` pushes `{type: "step-start"}`; tool chunks are idempotent per `toolCallId` and a
settled tool part (output-available / output-error / output-denied) never regresses;
`finish` and `message-metadata` merge metadata; `finish-step` and `abort` add nothing.
The panel's reducer (js/src/state.ts) applies the same rules.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

SETTLED_TOOL_STATES = frozenset({"output-available", "output-error", "output-denied"})


def is_tool_part(part: dict) -> bool:
    """True for `tool-<name>` and `dynamic-tool` parts."""
    t = part.get("type", "")
    return t.startswith("tool-") or t == "dynamic-tool"


def tool_name_of(part: dict) -> str:
    """The tool name of a tool part (`tool-add` → `add`; `dynamic-tool` → its `toolName`)."""
    return part["toolName"] if part.get("type") == "dynamic-tool" else part["type"][len("tool-"):]


class MessageAccumulator:
    """Accumulates UIMessageChunks (dicts) into `self.message`, an assistant UIMessage.

    Args:
        message_id: id of the new message; a `start` chunk with `messageId` overrides it.
        base: an existing assistant message to continue (continuation turns append to a copy).
    """

    def __init__(self, message_id: str, base: dict | None = None) -> None:
        self.message: dict = copy.deepcopy(base) if base else {"id": message_id, "role": "assistant", "parts": []}
        self._raw_input: dict[str, str] = {}

    @property
    def parts(self) -> list[dict]:
        return self.message["parts"]

    def apply(self, chunk: dict) -> None:
        """Apply one chunk. Unknown chunk types are ignored (forward compatible)."""
        kind = chunk.get("type", "")
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, chunk)
        elif kind.startswith("data-"):
            self._data(chunk)

    # -- text and reasoning -------------------------------------------------
    def _start_stream_part(self, kind: str, chunk: dict) -> None:
        part: dict[str, Any] = {"type": kind, "text": "", "state": "streaming"}
        if chunk.get("providerMetadata"):
            part["providerMetadata"] = chunk["providerMetadata"]
        self.parts.append(part)

    def _delta(self, kind: str, chunk: dict) -> None:
        part = self._last_streaming(kind)
        if part is None:
            self._start_stream_part(kind, chunk)
            part = self.parts[-1]
        part["text"] += chunk.get("delta", "")

    def _end(self, kind: str, chunk: dict) -> None:
        part = self._last_streaming(kind)
        if part is not None:
            part["state"] = "done"

    def _last_streaming(self, kind: str) -> dict | None:
        for part in reversed(self.parts):
            if part["type"] == kind:
                return part if part.get("state") == "streaming" else None
        return None

    # -- tools ----------------------------------------------------------------
    def find_tool_part(self, tool_call_id: str) -> dict | None:
        """The tool part with this `toolCallId`, or None."""
        for part in self.parts:
            if is_tool_part(part) and part.get("toolCallId") == tool_call_id:
                return part
        return None

    def _tool_part(self, chunk: dict) -> dict:
        part = self.find_tool_part(chunk["toolCallId"])
        if part is None:
            part = {"type": f"tool-{chunk.get('toolName', 'unknown')}", "toolCallId": chunk["toolCallId"],
                    "state": "input-streaming", "input": None}
            self.parts.append(part)
        return part

    def _tool_input_start(self, chunk: dict) -> None:
        self._tool_part(chunk)

    def _tool_input_delta(self, chunk: dict) -> None:
        part = self._tool_part(chunk)
        if part["state"] != "input-streaming":
            return
        raw = self._raw_input.get(chunk["toolCallId"], "") + chunk.get("inputTextDelta", "")
        self._raw_input[chunk["toolCallId"]] = raw
        with contextlib.suppress(ValueError):  # partial JSON: keep the last parsable input
            part["input"] = json.loads(raw)

    def _tool_input_available(self, chunk: dict) -> None:
        part = self._tool_part(chunk)
        if part["state"] in ("input-streaming", "input-available"):
            part["state"] = "input-available"
            part["input"] = chunk.get("input")

    def _tool_input_error(self, chunk: dict) -> None:
        part = self._tool_part(chunk)
        if part["state"] not in SETTLED_TOOL_STATES:
            part.update(state="output-error", input=chunk.get("input"), errorText=chunk.get("errorText", ""))

    def _tool_approval_request(self, chunk: dict) -> None:
        part = self._tool_part(chunk)
        if part["state"] not in SETTLED_TOOL_STATES:
            part.update(state="approval-requested", approval={"id": chunk.get("approvalId")})

    def _tool_output_available(self, chunk: dict) -> None:
        part = self._tool_part(chunk)
        if part["state"] not in SETTLED_TOOL_STATES:
            part.update(state="output-available", output=chunk.get("output"))
            if chunk.get("preliminary"):
                part["preliminary"] = True

    def _tool_output_error(self, chunk: dict) -> None:
        part = self._tool_part(chunk)
        if part["state"] not in SETTLED_TOOL_STATES:
            part.update(state="output-error", errorText=chunk.get("errorText", ""))

    def _tool_output_denied(self, chunk: dict) -> None:
        part = self._tool_part(chunk)
        if part["state"] not in SETTLED_TOOL_STATES:
            part["state"] = "output-denied"

    # -- message-level ----------------------------------------------------------
    def _start(self, chunk: dict) -> None:
        if chunk.get("messageId") and not self.parts:
            self.message["id"] = chunk["messageId"]
        self._merge_metadata(chunk.get("messageMetadata"))

    def _step_start(self, chunk: dict) -> None:
        self.parts.append({"type": "step-start"})

    def _finish(self, chunk: dict) -> None:
        self._merge_metadata(chunk.get("messageMetadata"))

    def _merge_metadata(self, metadata: dict | None) -> None:
        if metadata:
            self.message.setdefault("metadata", {}).update(metadata)

    def _data(self, chunk: dict) -> None:
        if chunk.get("transient"):
            return
        part = {"type": chunk["type"], "data": chunk.get("data")}
        if chunk.get("id") is not None:
            part["id"] = chunk["id"]
            for existing in self.parts:
                if existing["type"] == chunk["type"] and existing.get("id") == chunk["id"]:
                    existing["data"] = chunk.get("data")
                    return
        self.parts.append(part)


_HANDLERS = {
    "start": MessageAccumulator._start,
    "start-step": MessageAccumulator._step_start,
    "text-start": lambda acc, c: acc._start_stream_part("text", c),
    "text-delta": lambda acc, c: acc._delta("text", c),
    "text-end": lambda acc, c: acc._end("text", c),
    "reasoning-start": lambda acc, c: acc._start_stream_part("reasoning", c),
    "reasoning-delta": lambda acc, c: acc._delta("reasoning", c),
    "reasoning-end": lambda acc, c: acc._end("reasoning", c),
    "tool-input-start": MessageAccumulator._tool_input_start,
    "tool-input-delta": MessageAccumulator._tool_input_delta,
    "tool-input-available": MessageAccumulator._tool_input_available,
    "tool-input-error": MessageAccumulator._tool_input_error,
    "tool-approval-request": MessageAccumulator._tool_approval_request,
    "tool-output-available": MessageAccumulator._tool_output_available,
    "tool-output-error": MessageAccumulator._tool_output_error,
    "tool-output-denied": MessageAccumulator._tool_output_denied,
    "finish": MessageAccumulator._finish,
    "message-metadata": lambda acc, c: acc._merge_metadata(c.get("messageMetadata")),
}
