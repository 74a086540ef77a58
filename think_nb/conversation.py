"""`Conversation`: the current branch of one agent's transcript, in memory and in SQLite.

The branch in memory is a window of the newest messages (`hydration_limit`, Think's hydration
budget); SQLite holds the whole tree (`AgentStore.messages`). Every change to the branch goes
through this object, so memory and storage never disagree; callers tell the views. It is owned
by the agent's runtime and shared with its `TurnEngine`, `Session` and recovery; nothing else writes
messages (a test reads the package for other writers).

What is kept in memory is exactly what is stored: every message is mapped to its stored form
(`jsonsafe.stored_value`: strict JSON, the table in `think_nb.jsonsafe`) here, where every message
enters, before it is stored and kept; NaN, a set, bytes, a tuple, a non-str key or a lone surrogate
in a message become in memory what SQLite holds, so a new agent on the file reads the same branch
and a later `save_messages(lambda cur: [*cur, m])` resends exactly what is stored (issue 28 §1).

Per-turn work stays flat as the branch grows: a message is found by id through an index, and the
leading messages known final (`think_nb.messages.final`: nothing changes them in place any more)
are counted once, so `unfinished()` looks only at the messages after them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from think_nb import events
from think_nb.errors import UserError
from think_nb.jsonsafe import stored_value
from think_nb.messages import new_id
from think_nb.messages.final import is_final
from think_nb.messages.sanitize import sanitize
from think_nb.store.agent import AgentStore

HYDRATION = "transcript-hydration"


class StartUpSteps(Protocol):
    """Where a failed hydration is recorded (`think_nb.startup.StartUp`)."""

    def failed(self, step: str, exc: BaseException) -> None: ...
    def succeeded(self, step: str) -> None: ...


class Conversation:
    """The current branch (see the module docstring).

    Args:
        store: the agent's `AgentStore`.
        hydration_limit: messages kept in memory (the newest; at least 4), None for all.
        start_up: returns where a failed first read (hydration) is recorded (called only then); the
            branch is then empty in memory until a later `sync()` / `reload()` reads it (Think's
            best-effort `transcript-hydration`, `think_nb.startup`). None: the first read raises.
    """

    _messages: list[dict]
    _position: dict[str, int]  # message id -> index in _messages
    _final: int  # _messages[:_final] are final (never changed in place: see the module docstring)
    _windowed: tuple[int, int] | None  # (stored branch length, messages held) last told, while a window

    def __init__(self, store: AgentStore, hydration_limit: int | None, *, empty: bool = False,
                 start_up: Callable[[], StartUpSteps] | None = None) -> None:
        self.store = store
        self.limit = None if hydration_limit is None else max(4, int(hydration_limit))
        self.start_up = start_up
        self.degraded = False  # the first read failed: the branch in memory is empty, not what is stored
        if empty:  # the caller knows nothing is stored (`think_nb.store.presence`): nothing to read
            self._set([])

    def __getattr__(self, attr: str) -> object:
        """The branch is read from SQLite on first use (an agent made and not used reads nothing)."""
        if attr in ("_messages", "_position", "_final"):
            self.hydrate()
            return self.__dict__[attr]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def hydrate(self) -> None:
        """Read the branch unless it was read: the first read, best effort when `start_up` is given
        (a failure leaves the branch empty in memory and is recorded there)."""
        if "_messages" in self.__dict__:
            return
        try:
            self.reload()
        except Exception as exc:
            if self.start_up is None:
                raise
            self._set([])
            self.degraded = True
            self.start_up().failed(HYDRATION, exc)

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

    def unfinished(self) -> list[dict]:
        """The messages of the branch that are not final (`think_nb.messages.final`), in order; the
        final messages at the start of the branch are looked at once, not on every call."""
        messages, n = self._messages, self._final
        while n < len(messages) and is_final(messages[n]):
            n += 1
        self._final = n
        return [m for m in messages[n:] if not is_final(m)]

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
        """Re-read the branch from SQLite (after a session switch, a recovery, another writer); a
        degraded hydration is recovered by it. When the window holds less than the stored branch,
        `chat:hydration:windowed` tells so, once per change of what it holds (Think's: a chronically
        long branch is re-read often)."""
        messages, total = self.store.messages.branch_window(limit=self.limit)
        self._set(messages)
        if self.degraded:
            self.degraded = False
            if self.start_up is not None:
                self.start_up().succeeded(HYDRATION)
        seen = None if total is None else (total, len(messages))
        if total is not None and seen != self.__dict__.get("_windowed"):
            events.emit("chat:hydration:windowed", {"total_messages": None if total < 0 else total,
                                                     "budget_messages": self.limit, "hydrated_messages": len(messages)},
                        agent=self.store.agent_key)
        self._windowed = seen

    def _set(self, messages: list[dict]) -> None:
        """Make `messages` the branch in memory (indexes rebuilt)."""
        self._messages = messages
        self._position = {m["id"]: n for n, m in enumerate(messages)}
        self._final = 0

    def _put(self, n: int, message: dict) -> None:
        """Replace the branch's message at index `n` (same id) in memory."""
        self._messages[n] = message
        self._final = min(self._final, n)

    def sync(self) -> bool:
        """Re-read the branch when another writer (a second process on the same file) moved the
        leaf since this object last wrote or read it, or when the first read failed (each turn
        tries it again: Think's next safe-boundary sync); True when it did."""
        self.hydrate()
        if self.degraded:
            try:
                self.reload()
            except Exception:  # noqa: BLE001 - still unreadable: the turn goes on; its first write reads it again
                return False
            return True
        last = self._messages[-1]["id"] if self._messages else None
        if self.store.messages.leaf_id == last:
            return False
        self.reload()
        return True

    def append(self, message: dict) -> dict:
        """Store `message` as the new leaf (an id is assigned when missing); returns what was stored.

        The parent is the stored leaf read in the same transaction, so concurrent writers (two
        kernels on one notebook file) stay on one branch in commit order; when another writer
        appended since, the in-memory branch is re-read and includes its messages. `message` is
        kept and stored in its stored form (`stored_value`; the caller's dict is not kept)."""
        message = _stored({**message, "id": message.get("id") or new_id("msg")})
        expected = self._messages[-1]["id"] if self._messages else None
        parent = self.store.messages.append_to_leaf(message)
        if parent != expected and not str(message["id"]).startswith("compaction_"):
            self.reload()
        else:
            self._position[message["id"]] = len(self._messages)
            self._messages.append(message)
        return message

    def attach(self, messages: list[dict], parent_id: str | None) -> list[dict]:
        """Store `messages` as a chain under `parent_id` (None: the root), the last one the new
        leaf, in one transaction, and show that branch; returns what was stored (stored forms,
        ids assigned when missing)."""
        stored = [_stored({**m, "id": m.get("id") or new_id("msg")}) for m in messages]
        self.store.messages.extend(stored, parent_id)
        self.reload()
        return stored

    def save(self, message: dict) -> dict:
        """Store a copy (its stored form) of an assistant message: replace it when on the branch,
        else append it."""
        stored = _stored(message)
        n = self._position.get(stored["id"])
        if n is None:
            return self.append(stored)
        self.store.messages.update(stored)
        self._put(n, stored)
        return stored

    def replace(self, message: dict) -> dict:
        """Store a new version (its stored form) of a message of the branch (same id); returns
        what was stored."""
        message = _stored(message)
        self.store.messages.update(message)
        n = self._position.get(message["id"])
        if n is not None:
            self._put(n, message)
        return message

    def rewrite(self, fn: Callable[[dict], dict | None]) -> list[dict]:
        """Apply `fn(message) -> changed copy | None` to every message of the branch; store the
        changed ones (in their stored form); returns them."""
        changed = []
        for n, message in enumerate(self._messages):
            fixed = fn(message)
            if fixed is not None:
                fixed = _stored(fixed)
                self.store.messages.update(fixed)
                self._put(n, fixed)
                changed.append(fixed)
        return changed

    def held(self, message_id: str) -> dict | None:
        """The branch's message `message_id` as held in memory (the live dict: do not mutate), or None
        when it is not in the window."""
        n = self._position.get(message_id)
        return self._messages[n] if n is not None else None

    def rewrite_stored(self, message: dict, expected: str) -> bool:
        """Store `message`'s stored form in place of the stored message of its id while that is still
        the JSON text `expected` (a maintenance rewrite: media eviction; `MessageStore.rewrite_if_unchanged`).
        Touches SQLite only, so a worker thread may call it; `rewritten` then updates memory. True
        when stored."""
        return self.store.messages.rewrite_if_unchanged(_stored(message), expected)

    def rewritten(self, message: dict, was: dict | None) -> None:
        """Hold `message`, which `rewrite_stored` stored, in memory in place of `was` when the branch
        still holds that very dict (a turn that replaced it since keeps its own version). Views are not
        told: they keep what they show until they read the branch again (Think's silent rewrite)."""
        n = self._position.get(message["id"])
        if n is not None and was is not None and self._messages[n] is was:
            self._put(n, _stored(message))

    def rewind_to_last_user(self) -> bool:
        """Make the last user message the leaf (regenerate); False when there is none."""
        for n in range(len(self._messages) - 1, -1, -1):
            if self._messages[n]["role"] == "user":
                self.store.messages.set_leaf(self._messages[n]["id"])
                self._set(self._messages[: n + 1])
                return True
        return False

    def discard(self, message_id: str) -> bool:
        """Delete the branch's last message when it is `message_id` (a reply its own turn
        discards); True when it did. Nothing else changes."""
        if not self._messages or self._messages[-1]["id"] != message_id:
            return False
        if not self.store.messages.delete_leaf(message_id):
            return False
        self._messages.pop()
        self._position.pop(message_id, None)
        self._final = min(self._final, len(self._messages))
        return True

    def set_leaf(self, message_id: str | None) -> None:
        """Make `message_id` (None: nothing) the leaf of the stored branch and show that branch (a
        recovered turn's reply that is not kept leaves the branch; it stays in the tree)."""
        self.store.messages.set_leaf(message_id)
        self.reload()

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
        self._set([])


def _stored(message: dict) -> dict:
    """`message` in its stored form (`jsonsafe.stored_value`), sanitized (`think_nb.messages.sanitize`:
    no OpenAI item ids, no empty reasoning part without metadata), a new dict."""
    stored = sanitize(stored_value(message))
    assert isinstance(stored, dict)
    return stored
