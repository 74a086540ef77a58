"""Several sessions (conversations) per agent: create, list, resolve, rename, fork, delete.

Think's `SessionManager`, for one agent. Each session has its own message tree, leaf pointer
and compaction overlays; context blocks (memory) belong to the agent and are shared by all its
sessions. The default session has id "" and name "default" (the transcript an agent had before
it had sessions). The active session is stored in the agent's state, so a new kernel reopens
it. Switching is `Think.switch_session` (it reloads the branch and tells the views); the
functions here work on an `AgentStore` only.
"""

from __future__ import annotations

from think_nb.errors import UserError
from think_nb.messages.ids import new_id
from think_nb.store.agent import AgentStore
from think_nb.store.sessions import DEFAULT_NAME

__all__ = ["DEFAULT_NAME", "conversation_keys", "create", "delete", "fork", "list_sessions", "rename", "resolve"]


def list_sessions(store: AgentStore) -> list[dict]:
    """Every session of the agent, oldest first: `{id, name, active, messages, parent_session_id,
    forked_from_message_id, created_at, updated_at}` (times: Unix seconds)."""
    active = store.session_id
    return [{"id": i, "name": name, "active": i == active, "messages": count, "parent_session_id": parent,
             "forked_from_message_id": fork, "created_at": created, "updated_at": updated}
            for i, name, parent, fork, created, updated, count in store.sessions.rows()]


def conversation_keys(store: AgentStore) -> dict[str, str]:
    """`{conversation key: session id}` for every session of the agent."""
    return {store.conversation_key(s["id"]): s["id"] for s in list_sessions(store)}


def resolve(store: AgentStore, ref: str) -> str:
    """The id of the session whose id or name is `ref`; raises `UserError` when there is none."""
    found = store.sessions.ids_of(ref)
    if len(found) == 1:
        return found[0]
    sessions, named = list_sessions(store), found
    known = ", ".join(f"{s['name']} ({s['id'] or 'default'})" for s in sessions)
    raise UserError(f"No session {ref!r}" + (" (several share that name; use the id)" if named else "")
                    + f". Sessions: {known}.")


def create(store: AgentStore, name: str | None = None, *, parent: str | None = None,
           forked_from: str | None = None) -> str:
    """Create an empty session and return its id (does not switch to it)."""
    session_id = new_id("ses")
    store.sessions.insert(session_id, name or session_id, parent, forked_from)
    return session_id


def rename(store: AgentStore, ref: str, name: str) -> None:
    """Rename session `ref`."""
    store.sessions.rename(resolve(store, ref), name)


def fork(store: AgentStore, at_message_id: str | None = None, name: str | None = None, *,
         source: str | None = None) -> str:
    """Copy the path root → `at_message_id` (default: the current leaf) of session `source`
    (default: the active one) into a new session, with new message ids; returns its id (Think's
    `SessionManager.fork`). The copy's last message is the new session's leaf."""
    source_id = resolve(store, source) if source is not None else store.session_id
    src = store.session_messages(source_id)
    path = src.branch(leaf_id=at_message_id) if at_message_id or src.leaf_id else []
    if at_message_id and (not path or path[-1]["id"] != at_message_id):
        raise UserError(f"No message {at_message_id!r} in session {source_id or DEFAULT_NAME!r}.")
    session_id = create(store, name, parent=source_id, forked_from=at_message_id or (path[-1]["id"] if path else None))
    dst = store.session_messages(session_id)
    parent = None
    for message in path:
        copy = {**message, "id": new_id("msg")}
        dst.append(copy, parent)
        parent = copy["id"]
    return session_id


def delete(store: AgentStore, session_id: str) -> None:
    """Delete an inactive session with its messages and overlays (the caller switches away first;
    the default session cannot be deleted: use `clear_messages()`)."""
    if session_id == "":
        raise UserError("The default session cannot be deleted; use agent.clear_messages() to empty it.")
    if store.session_id == session_id:
        raise UserError("Switch to another session before deleting this one.")
    store.session_messages(session_id).clear()
    store.sessions.delete(session_id)
