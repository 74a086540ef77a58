"""A turn's recovery checkpoint (Think's `this.stash(data)` inside a chat fiber, read back by
`onChatRecovery` as `ctx.recoveryData`).

Code running inside a turn (a hook, a tool, whatever started it: `send`, `save_messages`,
`chat`, the panel, ...) calls `agent.stash(data)`; `data` (JSON-serialisable) is written to the
agent's `agent_state` under `stash:<request id>` at once, replacing the turn's earlier stash. If
the turn is interrupted (its process dies, or the stall watchdog ends it), `on_chat_recovery`
sees it as `ctx.recovery_data`, and the row is deleted once read (`take`). A turn that ends in
its own process deletes its row (`drop`, from the turn engine; only for turns that stashed).
"""

from __future__ import annotations

import json
from typing import Any

from think_nb import events
from think_nb.errors import UserError
from think_nb.store.agent import AgentStore

PREFIX = "stash:"
_STASHED: set[str] = set()  # request ids that stashed in this process (their rows are dropped at turn end)


def stash(store: AgentStore, agent_key: str, running: str | None, data: Any) -> None:
    """Checkpoint `data` for the turn this code runs in. `running` is the agent's running turn's
    request id (None when idle). Raises `UserError` outside a turn or for data JSON cannot hold."""
    scope = events.current()
    request_id = scope[1] if scope is not None and scope[0] == agent_key else running
    if request_id is None:
        raise UserError("stash(data) checkpoints the running turn: call it from a hook or a tool "
                        "while a turn runs (e.g. in before_turn or a tool's body).")
    try:
        value = json.loads(json.dumps(data))
    except (TypeError, ValueError) as exc:
        raise UserError(f"stash(data) needs JSON-serialisable data (dicts, lists, str, numbers, "
                        f"bools, None): {exc}") from None
    store.state.set(PREFIX + request_id, value)
    _STASHED.add(request_id)


def take(store: AgentStore, request_id: str) -> Any:
    """The stash of an interrupted turn (None when it stashed nothing), deleted once read."""
    value = store.state.get(PREFIX + request_id)
    if value is not None:
        store.state.delete(PREFIX + request_id)
    _STASHED.discard(request_id)
    return value


def drop(store: AgentStore, request_id: str) -> None:
    """A turn ended in this process: delete its stash, if it made one."""
    if request_id in _STASHED:
        _STASHED.discard(request_id)
        store.state.delete(PREFIX + request_id)
