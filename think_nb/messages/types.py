"""The AI SDK's message and chunk shapes, as TypedDicts: what `agent.messages` holds and what
`on_chunk(chunk)` receives (AI SDK v5 `UIMessage`, its `parts`, and `UIMessageChunk`).

They describe the keys think_nb reads and writes; every value is strict JSON
(`think_nb.jsonsafe`). A part or a chunk carries the keys of its `type` only (a `text` part has
`text` and `state`; a `tool-<name>` part has `toolCallId`, `state`, `input`, and `output` or
`errorText` once settled), so all keys but `type` are optional here.
"""

from __future__ import annotations

from typing import Any, Literal, Required, TypedDict

__all__ = ["UIMessage", "UIMessageChunk", "UIMessagePart"]


class UIMessagePart(TypedDict, total=False):
    """One part of a message: `text`, `reasoning`, `step-start`, `file`, `data-<name>`, or a tool
    call `tool-<name>` (its `state`: input-streaming | input-available | approval-requested |
    approval-responded | output-available | output-error | output-denied)."""

    type: Required[str]
    text: str
    state: str
    toolCallId: str
    input: Any
    output: Any
    errorText: str
    approval: dict[str, Any]
    preliminary: bool
    providerMetadata: dict[str, Any]
    mediaType: str
    url: str
    filename: str
    id: str
    data: Any


class UIMessage(TypedDict, total=False):
    """A message of the transcript (`agent.messages`): `id`, `role`, `parts`, optional `metadata`
    (think_nb keeps usage, the model, `continuation`, `interrupted` there)."""

    id: Required[str]
    role: Required[Literal["system", "user", "assistant"]]
    parts: Required[list[UIMessagePart]]
    metadata: dict[str, Any]


class UIMessageChunk(TypedDict, total=False):
    """One streamed chunk (`on_chunk(chunk)`): `start`, `start-step`, `text-start`/`-delta`/`-end`,
    `reasoning-*`, `tool-input-start`/`-delta`/`-available`, `tool-output-available`/`-error`,
    `tool-approval-request`, `data-<name>`, `finish-step`, `finish`, `error`, `abort`."""

    type: Required[str]
    id: str
    delta: str
    messageId: str
    toolCallId: str
    toolName: str
    input: Any
    output: Any
    errorText: str
    finishReason: str
    messageMetadata: dict[str, Any]
    data: Any
    approvalId: str
    preliminary: bool
