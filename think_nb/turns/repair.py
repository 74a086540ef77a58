"""Repairing interrupted tool calls before a model call (Think's `repairInterruptedToolPart`).

A tool part left without a result (the kernel was interrupted or restarted mid-tool, a tool was
cancelled) would make every later model call fail, because providers reject a tool call with
no result. Before each turn, such parts (any state but the settled ones and
`approval-responded`, which a continuation is about to run) are rewritten into `output-error`
parts, persisted and broadcast.
"""

from __future__ import annotations

from collections.abc import Callable

from think_nb.messages.accumulator import SETTLED_TOOL_STATES, is_tool_part
from think_nb.messages.final import is_final

INTERRUPTED_TEXT = "The tool call was interrupted before a result was recorded."


SUPERSEDED_TEXT = "The user sent a new message instead of approving this call, so it did not run."


def default_repair(part: dict) -> dict:
    """The default repair: `output-error` with `INTERRUPTED_TEXT` (or `SUPERSEDED_TEXT` for a call
    that was waiting for approval when a new message arrived), input kept."""
    text = SUPERSEDED_TEXT if part.get("state") == "approval-requested" else INTERRUPTED_TEXT
    return {**part, "state": "output-error", "errorText": text}


def needs_repair(part: dict) -> bool:
    return is_tool_part(part) and part.get("state") not in SETTLED_TOOL_STATES | {"approval-responded"}


def repaired(message: dict, repair: Callable[[dict], dict]) -> dict | None:
    """A repaired copy of `message`, or None when nothing needed repair (a final message, one
    look per stored message: `think_nb.messages.final`)."""
    if message.get("role") != "assistant" or is_final(message) or \
            not any(needs_repair(p) for p in message.get("parts", [])):
        return None
    return {**message, "parts": [repair(p) if needs_repair(p) else p for p in message["parts"]]}
