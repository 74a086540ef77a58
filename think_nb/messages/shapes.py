"""The pydantic models of incoming messages and parts: what `think_nb.messages.validate` checks.

Imported on first need, not with think_nb: a message of the plain shape
(`think_nb.messages.validate.plain_message`: what `send("hi")`, a panel's typed message or a resent
history holds) is taken without building them, so a turn that only sends text never imports
pydantic (issue 29 §3, first token). `plain_message` accepts only what these models accept
(tests/test_message_shapes.py checks it over generated messages); anything else is validated by the
models, and a refusal names the field.
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic


class Part(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")


class TextPart(Part):
    type: Literal["text", "reasoning"]
    text: str
    state: Literal["streaming", "done"] | None = None


class StepStart(Part):
    type: Literal["step-start"]


class FilePart(Part):
    type: Literal["file"]
    mediaType: str
    url: str
    filename: str | None = None


class SourceUrl(Part):
    type: Literal["source-url"]
    sourceId: str
    url: str
    title: str | None = None


class SourceDocument(Part):
    type: Literal["source-document"]
    sourceId: str
    mediaType: str
    title: str
    filename: str | None = None


class DataPart(Part):
    type: str = pydantic.Field(pattern=r"^data-.+")
    id: str | None = None
    data: Any = None


KNOWN: dict[str, type[Part]] = {"text": TextPart, "reasoning": TextPart, "step-start": StepStart,
                                 "file": FilePart, "source-url": SourceUrl, "source-document": SourceDocument}


class Message(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    id: str | None = pydantic.Field(default=None, min_length=1, max_length=256)
    role: Literal["user", "assistant", "system"]
    parts: list[dict[str, Any]]
    metadata: dict[str, Any] | None = None


# -- imported transcripts (Think.import_messages): settled tool parts ----------------------------------
class Approval(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    id: str = pydantic.Field(min_length=1, max_length=256)
    approved: bool
    reason: str | None = None


class SettledToolPart(Part):
    type: str = pydantic.Field(pattern=r"^(tool-[A-Za-z0-9_.:-]{1,128}|dynamic-tool)$")
    toolCallId: str = pydantic.Field(min_length=1, max_length=256)
    state: Literal["output-available", "output-error", "output-denied"]
    toolName: str | None = None
    input: Any = None
    output: Any = None
    errorText: str | None = None
    approval: Approval | None = None
    providerExecuted: bool | None = None


def part_model(kind: str) -> type[Part] | None:
    """The model of a part type, or None for a type kept as data (an unknown one)."""
    return KNOWN.get(kind) or (DataPart if kind.startswith("data-") else None)
