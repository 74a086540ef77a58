"""Several sessions (conversations) per agent: create, list, switch, rename, fork, delete.

Think's `SessionManager`, for one agent. Each session has its own message tree, leaf pointer
and compaction overlays; context blocks (memory) belong to the agent and are shared by all its
sessions. The default session has id "" and name "default" (the transcript an agent had before
it had sessions). The active session is stored in the agent's state (`active_session`), so a
new kernel reopens it. Rows live in `sessions`; messages under the conversation key (see
`think_nb.store.messages`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from think_nb.errors import UserError
from think_nb.messages.ids import new_id
from think_nb.store.messages import ACTIVE_SESSION, MessageStore, conversation_key

if TYPE_CHECKING:
    from think_nb.agent import Think

DEFAULT_NAME = "default"


def _ensure_default(agent: Think) -> None:
    now = time.time()
    agent._store.db.execute("INSERT OR IGNORE INTO sessions VALUES (?, '', ?, NULL, NULL, ?, ?)",
                            (agent._store.agent_key, DEFAULT_NAME, now, now))


def list_sessions(agent: Think) -> list[dict]:
    """Every session of `agent`, oldest first: `{id, name, active, messages, parent_session_id,
    forked_from_message_id, created_at, updated_at}` (times: Unix seconds)."""
    _ensure_default(agent)
    key = agent._store.agent_key
    rows = agent._store.db.read(
        "SELECT s.id, s.name, s.parent_session_id, s.forked_from_message_id, s.created_at, s.updated_at, "
        "(SELECT count(*) FROM messages m WHERE m.agent_key = CASE s.id WHEN '' THEN s.agent_key "
        "ELSE s.agent_key || '#' || s.id END) FROM sessions s WHERE s.agent_key = ? ORDER BY s.created_at, s.rowid",
        (key,))
    active = agent._store.session_id
    return [{"id": i, "name": name, "active": i == active, "messages": count, "parent_session_id": parent,
             "forked_from_message_id": fork, "created_at": created, "updated_at": updated}
            for i, name, parent, fork, created, updated, count in rows]


def conversation_keys(agent: Think) -> dict[str, str]:
    """`{conversation key: session id}` for every session of `agent`."""
    return {conversation_key(agent._store.agent_key, s["id"]): s["id"] for s in list_sessions(agent)}


def resolve(agent: Think, ref: str) -> str:
    """The id of the session whose id or name is `ref`; raises `UserError` when there is none."""
    sessions = list_sessions(agent)
    for s in sessions:
        if s["id"] == ref:
            return s["id"]
    named = [s["id"] for s in sessions if s["name"] == ref]
    if len(named) == 1:
        return named[0]
    known = ", ".join(f"{s['name']} ({s['id'] or 'default'})" for s in sessions)
    raise UserError(f"No session {ref!r}" + (" (several share that name; use the id)" if named else "")
                    + f". Sessions: {known}.")


def create(agent: Think, name: str | None = None, *, parent: str | None = None,
           forked_from: str | None = None) -> str:
    """Create an empty session and return its id (does not switch to it)."""
    _ensure_default(agent)
    session_id = new_id("ses")
    now = time.time()
    agent._store.db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (agent._store.agent_key, session_id, name or session_id, parent, forked_from, now, now))
    return session_id


def switch(agent: Think, ref: str) -> str:
    """Make session `ref` (id or name) the active one: the agent's messages, panels and next
    turns use it. Refused while a turn runs. Returns the session id."""
    session_id = resolve(agent, ref)
    if agent.is_running:
        raise UserError("A turn is running; wait for it (await agent.wait_until_stable()) before switching sessions.")
    store = agent._store
    store.set_state(ACTIVE_SESSION, session_id)
    agent._store = MessageStore(store.db, store.agent_key, type(agent).__name__, agent.name, session_id)
    agent._messages = agent._store.branch(limit=agent._hydration_limit())
    if getattr(agent, "_session", None) is not None:
        agent._session.reset()
    agent._broadcast_messages()
    if getattr(agent, "_session", None) is not None:
        agent._session.emit_status()
    return session_id


def rename(agent: Think, ref: str, name: str) -> None:
    """Rename session `ref`."""
    session_id = resolve(agent, ref)
    agent._store.db.execute("UPDATE sessions SET name = ?, updated_at = ? WHERE agent_key = ? AND id = ?",
                            (name, time.time(), agent._store.agent_key, session_id))


def fork(agent: Think, at_message_id: str | None = None, name: str | None = None, *, source: str | None = None) -> str:
    """Copy the path root → `at_message_id` (default: the current leaf) of session `source`
    (default: the active one) into a new session, with new message ids; returns its id (Think's
    `SessionManager.fork`). The copy's last message is the new session's leaf."""
    source_id = resolve(agent, source) if source is not None else agent._store.session_id
    src = MessageStore(agent._store.db, agent._store.agent_key, type(agent).__name__, agent.name, source_id)
    path = src.branch(leaf_id=at_message_id) if at_message_id or src.leaf_id else []
    if at_message_id and (not path or path[-1]["id"] != at_message_id):
        raise UserError(f"No message {at_message_id!r} in session {source_id or DEFAULT_NAME!r}.")
    session_id = create(agent, name, parent=source_id, forked_from=at_message_id or (path[-1]["id"] if path else None))
    dst = MessageStore(agent._store.db, agent._store.agent_key, type(agent).__name__, agent.name, session_id)
    parent = None
    for message in path:
        copy = {**message, "id": new_id("msg")}
        dst.append(copy, parent)
        parent = copy["id"]
    return session_id


def delete(agent: Think, ref: str) -> None:
    """Delete session `ref` with its messages and overlays. Deleting the active session switches
    to the default one first; the default session cannot be deleted (use `clear_messages()`)."""
    session_id = resolve(agent, ref)
    if session_id == "":
        raise UserError("The default session cannot be deleted; use agent.clear_messages() to empty it.")
    if agent._store.session_id == session_id:
        switch(agent, "")
    store = MessageStore(agent._store.db, agent._store.agent_key, type(agent).__name__, agent.name, session_id)
    store.clear()
    agent._store.db.execute("DELETE FROM sessions WHERE agent_key = ? AND id = ?", (agent._store.agent_key, session_id))
