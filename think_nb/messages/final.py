"""Final messages: stored UIMessages that nothing changes in place any more.

A part is final when it has no `state` or its state is `done` (text, reasoning) or a settled tool
state (`output-available`, `output-error`, `output-denied`); a message is final when all its parts
are. The engine changes a stored message in place only to move an open part on (an approval
decided, a client tool's result, a recovery closing a streaming part: `TOOL_STATE_RANK` only
rises); any other change replaces the message (`think_nb.conversation`). So once final, a stored
dict stays as it is, and per-turn passes over the history (repair, conversion) skip it after one
look: their cost per turn stays flat as the history grows.

`is_final` remembers a yes by identity (the entry keeps the message alive, so its id is never
reused while remembered); a no is checked again on the next call.
"""

from __future__ import annotations

from think_nb.messages.accumulator import SETTLED_TOOL_STATES

FINAL_STATES = SETTLED_TOOL_STATES | {"done"}
REMEMBERED = 8192
"""Final messages remembered (the oldest half is forgotten when full; forgetting costs one look)."""

_FINAL: dict[int, dict] = {}


def is_final(message: dict) -> bool:
    """True when every part of `message` is final (see the module docstring)."""
    if _FINAL.get(id(message)) is message:
        return True
    if not all(p.get("state", "done") in FINAL_STATES for p in message.get("parts", ())):
        return False
    if len(_FINAL) >= REMEMBERED:
        for key in list(_FINAL)[: REMEMBERED // 2]:
            del _FINAL[key]
    _FINAL[id(message)] = message
    return True

