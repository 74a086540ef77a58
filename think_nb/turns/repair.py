"""Repairing interrupted tool calls before a model call (Think's `repairInterruptedToolPart`).

A tool part left without a result (the kernel was interrupted or restarted mid-tool, a tool was
cancelled) would make every later model call fail, because providers reject a tool call with
no result. Before each turn, such parts (any state but the settled ones and
`approval-responded`, which a continuation is about to run) are rewritten into `output-error`
parts, persisted and broadcast. An `approval-responded` part whose approval was already used (the
call started once: `think_nb.store.approvals`) is repaired too (`USED_TEXT`): no continuation will
run it again, so it would otherwise stay "approved" for ever. (Think repairs no
`approval-responded` part; its continuation would run the call again after a crash. think_nb
never runs a gated call twice for one approval.)
"""

from __future__ import annotations

from collections.abc import Callable

from think_nb.messages.accumulator import SETTLED_TOOL_STATES, is_tool_part
from think_nb.messages.final import is_final

INTERRUPTED_TEXT = "The tool call was interrupted before a result was recorded."


SUPERSEDED_TEXT = "The user sent a new message instead of approving this call, so it did not run."


USED_TEXT = ("This call already started once under its approval, and an approval runs a call once, so it did "
             "not run again; if the process ended while it ran, its result was never recorded. Ask for it anew "
             "if it should run again.")
"""The `output-error` of an approved call whose approval was used (`Approvals.claim`): a part set
back to `approval-responded`, or a call the kernel died running (SIGKILL), found by a recovered
continuation or by this repair. An ungated call killed the same way gets `INTERRUPTED_TEXT`; a
gated one is never run silently twice."""


def default_repair(part: dict) -> dict:
    """The default repair: `output-error` with `INTERRUPTED_TEXT` (`SUPERSEDED_TEXT` for a call
    that was waiting for approval when a new message arrived, `USED_TEXT` for an approved call
    whose approval was used), input kept."""
    state = part.get("state")
    text = {"approval-requested": SUPERSEDED_TEXT, "approval-responded": USED_TEXT}.get(str(state), INTERRUPTED_TEXT)
    return {**part, "state": "output-error", "errorText": text}


def checked_repair(part: dict, value: object) -> dict:
    """What an overridden `repair_interrupted_tool_part(part)` returned, as the part to store: None
    is the default repair (`default_repair`); a dict must be the same call (`type`, `toolCallId`)
    settled (`output-available`, `output-error` or `output-denied`). Raises `HookError` naming the
    method for anything else (it was stored as is, and every later turn failed as think_nb's error)."""
    from think_nb.errors import HookError

    if value is None:
        return default_repair(part)
    if isinstance(value, dict) and value.get("type") == part.get("type") and \
            value.get("toolCallId") == part.get("toolCallId") and value.get("state") in SETTLED_TOOL_STATES:
        return value
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    raise HookError("repair_interrupted_tool_part",
                    f"returned {shown} for tool call {part.get('toolCallId')!r}; return the part settled (state "
                    "'output-available' with 'output', or 'output-error' with 'errorText'), or None for the default")


def needs_repair(part: dict, used: Callable[[str], bool] = lambda call_id: False) -> bool:
    """True for a tool part without a result that no continuation will run: any state but the
    settled ones, and `approval-responded` only when `used(toolCallId)` (its approval was used)."""
    if not is_tool_part(part) or part.get("state") in SETTLED_TOOL_STATES:
        return False
    return part.get("state") != "approval-responded" or used(str(part.get("toolCallId")))


def repaired(message: dict, repair: Callable[[dict], dict],
             used: Callable[[str], bool] = lambda call_id: False) -> dict | None:
    """A repaired copy of `message`, or None when nothing needed repair (a final message, one
    look per stored message: `think_nb.messages.final`). `used`: see `needs_repair`."""
    if message.get("role") != "assistant" or is_final(message) or \
            not any(needs_repair(p, used) for p in message.get("parts", [])):
        return None
    return {**message, "parts": [repair(p) if needs_repair(p, used) else p for p in message["parts"]]}
