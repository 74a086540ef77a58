"""`Conversation`: the current branch of one agent's transcript, in memory and in SQLite.

The branch in memory is a window of the newest messages (`hydration_limit`, Think's hydration
budget); SQLite holds the whole tree (`AgentStore.messages`). Every change to the branch goes
through this object, so memory and storage never disagree; callers tell the views. It is owned
by the agent and shared with its `TurnEngine` and `Session`; nothing else writes messages.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

from think_nb.errors import UserError
from think_nb.messages import new_id
from think_nb.store.agent import AgentStore


class Conversation:
    """The current branch (see the module docstring).

    Args:
        store: the agent's `AgentStore`.
        hydration_limit: messages kept in memory (the newest; at least 4), None for all.
    """

    def __init__(self, store: AgentStore, hydration_limit: int | None) -> None:
        self.store = store
        self.limit = None if hydration_limit is None else max(4, int(hydration_limit))
        self._messages: list[dict] = []
        self.reload()

    # -- reading ---------------------------------------------------------------------------
    @property
    def messages(self) -> list[dict]:
        """The branch, oldest first (a new list; the dicts are live, do not mutate them)."""
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[dict]:
        return iter(list(self._messages))

    @property
    def last(self) -> dict | None:
        return self._messages[-1] if self._messages else None

    def get(self, message_id: str) -> dict | None:
        """A stored message of the active session (any branch), or None."""
        return self.store.messages.get(message_id)

    def known(self, message_id: str) -> None:
        """Raise `UserError` unless `message_id` is a stored message of the active session."""
        if not isinstance(message_id, str) or self.get(message_id) is None:
            raise UserError(f"No message {message_id!r} in this conversation; ids are in agent.messages "
                            "and agent.get_branches(id).")

    def siblings(self, message_id: str) -> list[dict]:
        return self.store.messages.siblings(message_id)

    # -- writing ---------------------------------------------------------------------------
    def reload(self) -> None:
        """Re-read the branch from SQLite (after a session switch, a recovery, another writer)."""
        self._messages = self.store.messages.branch(limit=self.limit)

    def sync(self) -> bool:
        """Re-read the branch when another writer (a second process on the same file) moved the
        leaf since this object last wrote or read it; True when it did."""
        last = self._messages[-1]["id"] if self._messages else None
        if self.store.messages.leaf_id == last:
            return False
        self.reload()
        return True

    def append(self, message: dict) -> dict:
        """Store `message` as the new leaf (an id is assigned when missing); returns what was stored.

        The parent is the stored leaf read in the same transaction, so concurrent writers (two
        kernels on one notebook file) stay on one branch in commit order; when another writer
        appended since, the in-memory branch is re-read and includes its messages."""
        message = {**message, "id": message.get("id") or new_id("msg")}
        expected = self._messages[-1]["id"] if self._messages else None
        parent = self.store.messages.append_to_leaf(message)
        if parent != expected and not str(message["id"]).startswith("compaction_"):
            self.reload()
        else:
            self._messages.append(message)
        return message

    def save(self, message: dict) -> dict:
        """Store a copy of an assistant message: replace it when on the branch, else append it."""
        stored = copy.deepcopy(message)
        for n in range(len(self._messages) - 1, -1, -1):  # newest first: a turn saves the leaf, O(1)
            if self._messages[n]["id"] == stored["id"]:
                self.store.messages.update(stored)
                self._messages[n] = stored
                return stored
        return self.append(stored)

    def replace(self, message: dict) -> None:
        """Store a new version of a message of the branch (same id)."""
        self.store.messages.update(message)
        self._messages = [message if m["id"] == message["id"] else m for m in self._messages]

    def rewrite(self, fn: Callable[[dict], dict | None]) -> list[dict]:
        """Apply `fn(message) -> changed copy | None` to every message of the branch; store the
        changed ones; returns them."""
        changed = []
        for n, message in enumerate(self._messages):
            fixed = fn(message)
            if fixed is not None:
                self.store.messages.update(fixed)
                self._messages[n] = fixed
                changed.append(fixed)
        return changed

    def rewind_to_last_user(self) -> bool:
        """Make the last user message the leaf (regenerate); False when there is none."""
        for n in range(len(self._messages) - 1, -1, -1):
            if self._messages[n]["role"] == "user":
                self.store.messages.set_leaf(self._messages[n]["id"])
                self._messages = self._messages[: n + 1]
                return True
        return False

    def switch_branch(self, message_id: str) -> None:
        """Make the branch through `message_id` current (its newest descendants)."""
        self.known(message_id)
        self.store.messages.set_leaf(self.store.messages.newest_leaf_under(message_id))
        self.reload()

    def open_session(self, session_id: str) -> None:
        """Show session `session_id`'s branch (the store makes it active)."""
        self.store.open_session(session_id)
        self.reload()

    def clear(self) -> None:
        """Delete the active session's messages."""
        self.store.messages.clear()
        self._messages = []
