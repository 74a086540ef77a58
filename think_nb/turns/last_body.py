"""The last request's custom body, kept for the turns that follow it (Think's `lastBody`).

A request's custom `body` (the JSON object a panel request or `submit(body=...)` carries
beside its messages) is shown to `before_turn` (`ctx.body`). Think persists it in
`think_config` under `lastBody`, so a turn no request starts reuses it: `continue_last_turn()`
without a body, the auto-continuation after a client tool's result or an approval, and the
continuation that recovers an interrupted turn. Here it is the `agent_state` key `lastBody`
(in SQLite, so a restarted kernel keeps it). A panel request without a body clears it, as does
`clear_messages()`; an explicit `continue_last_turn(body)` uses its own body for that turn.
"""

from __future__ import annotations

import json
from typing import Any

from think_nb.errors import UserError

LAST_BODY = "lastBody"
"""agent_state key of the last request's custom body (Think's `think_config` key)."""


def checked(body: Any, where: str) -> dict[str, Any] | None:
    """`body` as a JSON object (a dict of JSON values), or None; `UserError` naming `where` otherwise."""
    if body is None:
        return None
    if not isinstance(body, dict):
        raise UserError(f"{where}: body={body!r:.60} must be a dict (a JSON object) or None.")
    try:
        return dict(json.loads(json.dumps(body, allow_nan=False)))
    except (TypeError, ValueError) as exc:
        raise UserError(f"{where}: body must hold JSON values only ({exc}); pass plain dicts, lists, "
                        "strings, numbers, booleans and None.") from None


def remember(state: Any, body: dict[str, Any] | None) -> None:
    """Store `body` as the last request's (None or {} clears it)."""
    if body:
        state.set(LAST_BODY, body)
    else:
        state.delete(LAST_BODY)


def last(state: Any) -> dict[str, Any] | None:
    """The stored last body, or None."""
    value = state.get(LAST_BODY)
    return value if isinstance(value, dict) else None
