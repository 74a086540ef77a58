"""An agent's UIMessages in SQLite: a tree of messages and a pointer to the current leaf.

The current branch (what the agent and the panel show) is the path from the root to the leaf.
Appending moves the leaf; regenerating appends a sibling under an earlier parent, so the old
reply stays reachable (Think's branch-on-regenerate).

Sessions: an agent may hold several conversations (`think_nb.session.sessions`). The default
session has id "" and stores its rows under `think_messages.agent_key = "<class>:<name>"`; session S
stores them under the *conversation key* `"<class>:<name>#S"`. Small state values
(`get_state`/`set_state`) stay per agent; the leaf pointer is per session. Without an explicit
`session_id`, a store opens the agent's active session (state `active_session`, default "").

Synthetic compaction summaries (ids starting `compaction_`) are never stored as messages, whoever
sends them back (guard for Think's open bug cloudflare/agents#1984).
"""

from __future__ import annotations

import logging
import sqlite3
import time

from think_nb import jsonsafe
from think_nb.store import ancestry
from think_nb.store.db import Database
from think_nb.store.migrations import LARGE_ROW_FLOOR
from think_nb.store.state import AgentState

LEAF = "leaf_id"
ACTIVE_SESSION = "active_session"
SYNTHETIC_PREFIX = "compaction_"
"""Id prefix of the synthetic summary message a compaction overlay shows in place of the range it covers."""

log = logging.getLogger("think_nb")

_BRANCH_SQL = """
WITH RECURSIVE chain(id, parent_id, content, depth, stored_depth) AS (
    SELECT id, parent_id, content, 0, depth FROM think_messages WHERE agent_key = :agent AND id = :leaf
    UNION ALL
    SELECT m.id, m.parent_id, m.content, chain.depth + 1, m.depth
    FROM think_messages m JOIN chain ON m.id = chain.parent_id AND m.agent_key = :agent
    WHERE chain.depth + 1 < :limit
)
SELECT content, depth, parent_id, stored_depth FROM chain
"""
# No ORDER BY: SQLite's recursive queue is FIFO, so rows come leaf first; `branch` reverses them
# (and sorts only if they ever do not come in depth order). Sorting 10,000 rows in SQL cost ~20%.


class MessageStore:
    """Messages of one session of one agent (`agent_key` = "<class>:<name>").

    Args:
        session_id: the session to open ("" = the default session); None opens the agent's
            active session (see the module docstring).

    Attributes:
        key: the conversation key the session's rows are stored under.
    """

    def __init__(self, db: Database, agent_key: str, session_id: str | None = None) -> None:
        self.db = db
        self.agent_key = agent_key
        self._state = AgentState(db, agent_key)
        if session_id is None:
            session_id = str(self._state.get(ACTIVE_SESSION, "") or "")
        self.session_id = session_id
        self.key = conversation_key(agent_key, session_id)
        self._leaf_key = LEAF if not session_id else f"{LEAF}#{session_id}"

    # -- messages -------------------------------------------------------------
    @property
    def leaf_id(self) -> str | None:
        return self._state.get(self._leaf_key)

    def branch(self, limit: int | None = None, leaf_id: str | None = None) -> list[dict]:
        """The current branch (or the path to `leaf_id`), root first.

        Args:
            limit: keep only the last `limit` messages of the path (a window, so a long history
                is never loaded whole; Think's hydration budget). None loads the whole path.
        """
        return self.branch_window(limit, leaf_id)[0]

    def branch_window(self, limit: int | None = None, leaf_id: str | None = None) -> tuple[list[dict], int | None]:
        """`(branch(limit, leaf_id), total)`: `total` is None when the window holds the whole path,
        else the path's length in messages (-1 when its rows carry no depth: written before m016)."""
        leaf = leaf_id or self.leaf_id
        if leaf is None:
            return [], None
        params = {"agent": self.key, "leaf": leaf, "limit": limit if limit is not None else 1 << 62}
        rows = self.db.read(_BRANCH_SQL, params)
        if any(rows[n][1] != n for n in (0, len(rows) - 1) if rows):
            rows.sort(key=lambda row: row[1])
        total = None
        if rows and limit is not None and len(rows) >= limit and rows[-1][2] is not None:
            total = rows[0][3] + 1 if rows[0][3] is not None else -1
        return [jsonsafe.loads_stored(row[0]) for row in reversed(rows)], total

    def on_branch(self, ids: list[str]) -> set[str]:
        """The ids of `ids` that lie on the current branch (the path from the root to the leaf);
        the others are on another version of a reply (a regenerated or switched-away branch).

        Two queries, O(len(ids) * log depth) primary-key lookups whatever the branch's length
        (`think_nb.store.ancestry`); the walk of the whole branch only when a row has no depth
        (written by a think_nb older than migration m016)."""
        return set(self.ages(ids))

    def ages(self, ids: list[str]) -> dict[str, int]:
        """`{id: messages after it on the current branch}` (0: the leaf) for the ids of `ids` that lie
        on the branch; the others are left out. As `on_branch`: by the rows' depths and jump
        pointers (one query for the depths, one walking toward every id at once); by a walk of the
        branch's ids when a row has no depth (written before m016)."""
        leaf = self.leaf_id
        if leaf is None or not ids:
            return {}
        wanted = list(dict.fromkeys(ids))
        depths = dict(self.db.read(
            "SELECT id, depth FROM think_messages WHERE agent_key = :agent "
            "AND id IN (SELECT value FROM json_each(:ids))",
            {"agent": self.key, "ids": jsonsafe.dumps_plain([*wanted, leaf])}))
        top = depths.get(leaf)
        if top is None or any(depths[i] is None for i in wanted if i in depths):
            return self._ages_by_walk(wanted, leaf)
        reachable = [i for i in wanted if i in depths and depths[i] <= top]
        if not reachable:
            return {}
        rows = self.db.read(ancestry.ON_BRANCH_SQL,
                            {"agent": self.key, "leaf": leaf, "ids": jsonsafe.dumps_plain(reachable)})
        return {row[0]: top - depths[row[0]] for row in rows}

    def _ages_by_walk(self, ids: list[str], leaf: str) -> dict[str, int]:
        rows = self.db.read(
            "WITH RECURSIVE chain(id, parent_id, n) AS (SELECT id, parent_id, 0 FROM think_messages WHERE agent_key = "
            ":agent AND id = :leaf UNION ALL SELECT m.id, m.parent_id, chain.n + 1 FROM think_messages m JOIN chain "
            "ON m.id = chain.parent_id AND m.agent_key = :agent) "
            "SELECT id, n FROM chain WHERE id IN (SELECT value FROM json_each(:ids))",
            {"agent": self.key, "leaf": leaf, "ids": jsonsafe.dumps_plain(list(ids))})
        return {row[0]: row[1] for row in rows}

    def count(self) -> int:
        """How many messages this session stores (every branch)."""
        return self.db.read("SELECT count(*) FROM think_messages WHERE agent_key = ?", (self.key,))[0][0]

    def append(self, message: dict, parent_id: str | None) -> None:
        """Store a new message under `parent_id` and make it the leaf. Idempotent by id (an
        existing id is updated in place, never re-parented).

        A synthetic compaction message (id `compaction_*`) is not stored (cloudflare/agents#1984);
        a parent that is one means "the current leaf"."""
        if str(message.get("id", "")).startswith(SYNTHETIC_PREFIX):
            log.warning("not storing synthetic compaction message %s (echoed back?)", message["id"])
            return
        if parent_id is not None and parent_id.startswith(SYNTHETIC_PREFIX):
            parent_id = self.leaf_id
        with self.db.write() as conn:
            self._upsert_leaf(conn, message, parent_id)

    def append_to_leaf(self, message: dict) -> str | None:
        """Store a new message under the current leaf, read inside the write transaction, and
        make it the leaf; returns the parent it got. Two processes appending to one agent so stay
        on one branch, in commit order (a reader's in-memory branch may be behind: compare the
        returned parent with what it expected). An id already stored is updated in place (never
        re-parented) and becomes the leaf. Synthetic compaction messages are not stored."""
        if str(message.get("id", "")).startswith(SYNTHETIC_PREFIX):
            log.warning("not storing synthetic compaction message %s (echoed back?)", message["id"])
            return self.leaf_id
        with self.db.write() as conn:
            row = conn.execute("SELECT value FROM think_agent_state WHERE agent_key = ? AND key = ?",
                               (self.agent_key, self._leaf_key)).fetchone()
            leaf = jsonsafe.loads_stored(row[0]) if row is not None else None
            existing = conn.execute("SELECT parent_id FROM think_messages WHERE agent_key = ? AND id = ?",
                                    (self.key, message["id"])).fetchone()
            parent = existing[0] if existing is not None else leaf
            self._upsert_leaf(conn, message, parent)
        return parent

    def _upsert_leaf(self, conn: sqlite3.Connection, message: dict, parent_id: str | None) -> None:
        """Insert `message` under `parent_id` (an existing id: content updated, never re-parented)
        and make it the leaf, inside the caller's write transaction."""
        now = time.time()
        reader = ancestry.Reader(conn, self.key)
        where = ancestry.child_fields(parent_id, message["id"], reader, reader.stored) or (None, None, None)
        conn.execute(
            "INSERT INTO think_messages (agent_key, id, parent_id, role, content, created_at, updated_at, depth, "
            "jump_id, jump_depth) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_key, id) DO UPDATE SET "
            "content = excluded.content, updated_at = excluded.updated_at",
            (self.key, message["id"], parent_id, message["role"], jsonsafe.dumps_stored(message), now, now, *where))
        conn.execute("INSERT OR REPLACE INTO think_agent_state VALUES (?, ?, ?)",
                     (self.agent_key, self._leaf_key, jsonsafe.dumps_stored(message["id"])))

    def extend(self, messages: list[dict], parent_id: str | None) -> None:
        """Store `messages` as a chain under `parent_id` in one transaction; the last becomes the leaf."""
        now = time.time()
        with self.db.write() as conn:
            rows, parent, reader, unknown = [], parent_id, ancestry.Reader(conn, self.key), False
            for message in messages:
                where = None if unknown else ancestry.child_fields(parent, message["id"], reader, reader.stored)
                unknown = where is None  # a chain under a message of unknown depth: all unknown
                if where is not None:
                    reader.known[message["id"]] = where
                rows.append((self.key, message["id"], parent, message["role"], jsonsafe.dumps_stored(message), now,
                             now, *(where or (None, None, None))))
                parent = message["id"]
            conn.executemany("INSERT INTO think_messages (agent_key, id, parent_id, role, content, created_at, "
                             "updated_at, depth, jump_id, jump_depth) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            conn.execute("INSERT OR REPLACE INTO think_agent_state VALUES (?, ?, ?)",
                         (self.agent_key, self._leaf_key, jsonsafe.dumps_stored(parent)))

    def update(self, message: dict) -> bool:
        """Replace a stored message's content; returns False when the id is unknown."""
        cursor = self.db.execute("UPDATE think_messages SET content = ?, updated_at = ? WHERE agent_key = ? AND id = ?",
                                 (jsonsafe.dumps_stored(message), time.time(), self.key, message["id"]))
        return cursor.rowcount > 0

    def large_rows(self, min_chars: int) -> list[tuple[str, int, int | None]]:
        """`(id, size, depth)` of this session's messages (every branch) whose stored JSON is at least
        `min_chars` characters. Read from the size index alone (m025, partial since m026: rows of at
        least `LARGE_ROW_FLOOR` characters, the condition this query names): no message is read, and
        a session without such rows costs one index range scan. Below the floor, every row is read."""
        floor = f" AND length(content) >= {LARGE_ROW_FLOOR}" if min_chars >= LARGE_ROW_FLOOR else ""
        return self.db.read("SELECT id, length(content), depth FROM think_messages WHERE agent_key = ? AND "
                            f"length(content) >= ?{floor}", (self.key, min_chars))

    def content_of(self, message_id: str) -> str | None:
        """A stored message's JSON text as stored (`rewrite_if_unchanged` compares against it), or None."""
        rows = self.db.read("SELECT content FROM think_messages WHERE agent_key = ? AND id = ?", (self.key, message_id))
        return rows[0][0] if rows else None

    def rewrite_if_unchanged(self, message: dict, expected: str) -> bool:
        """Replace a stored message's content with `message` (same id) only while its stored JSON is
        still `expected` (compare-and-set: a turn or another process that wrote it since wins);
        True when it was replaced. Its place in the tree, its seq and its parent never change."""
        cursor = self.db.execute("UPDATE think_messages SET content = ?, updated_at = ? WHERE agent_key = ? AND id = ? "
                                 "AND content = ?",
                                 (jsonsafe.dumps_stored(message), time.time(), self.key, message["id"], expected))
        return cursor.rowcount > 0

    def get(self, message_id: str) -> dict | None:
        rows = self.db.read("SELECT content FROM think_messages WHERE agent_key = ? AND id = ?", (self.key, message_id))
        return jsonsafe.loads_stored(rows[0][0]) if rows else None

    def siblings(self, message_id: str) -> list[dict]:
        """`message_id` and the other children of its parent, oldest first."""
        rows = self.db.read(
            "SELECT content FROM think_messages WHERE agent_key = :agent AND parent_id IS (SELECT parent_id "
            "FROM think_messages WHERE agent_key = :agent AND id = :id) ORDER BY seq",
            {"agent": self.key, "id": message_id})
        return [jsonsafe.loads_stored(row[0]) for row in rows]

    def sibling_revisions(self, message_ids: list[str]) -> dict[str, tuple]:
        """For each stored message of `message_ids`: its sibling group's revision `(count, newest
        seq, newest updated_at)`, which changes whenever a sibling is added, removed or rewritten.
        One indexed query for them all (the panel's branch annotations are remembered by it)."""
        if not message_ids:
            return {}
        marks = ",".join("?" * len(message_ids))
        rows = self.db.read(
            "SELECT m.id, COUNT(s.seq), MAX(s.seq), MAX(s.updated_at) FROM think_messages m JOIN think_messages s "
            f"ON s.agent_key = m.agent_key AND s.parent_id IS m.parent_id WHERE m.agent_key = ? AND m.id IN ({marks}) "
            "GROUP BY m.id", (self.key, *message_ids))
        return {row[0]: tuple(row[1:]) for row in rows}

    def newest_leaf_under(self, message_id: str) -> str:
        """Follow the newest child from `message_id` down to a leaf; returns that leaf's id."""
        current = message_id
        while True:
            rows = self.db.read("SELECT id FROM think_messages WHERE agent_key = ? AND parent_id = ? ORDER BY seq DESC "
                                "LIMIT 1", (self.key, current))
            if not rows:
                return current
            current = rows[0][0]

    def set_leaf(self, message_id: str | None) -> None:
        self._state.set(self._leaf_key, message_id)

    def delete_leaf(self, message_id: str) -> bool:
        """Delete `message_id` when it is the leaf (no children), making its parent the leaf, in
        one transaction (its search entry goes with it); False, and nothing changed, otherwise. For
        a reply the turn itself discards (context-overflow recovery, `think_nb.turns.overflow`)."""
        with self.db.write() as conn:
            row = conn.execute("SELECT value FROM think_agent_state WHERE agent_key = ? AND key = ?",
                               (self.agent_key, self._leaf_key)).fetchone()
            if row is None or jsonsafe.loads_stored(row[0]) != message_id:
                return False
            found = conn.execute("SELECT parent_id FROM think_messages WHERE agent_key = ? AND id = ?",
                                 (self.key, message_id)).fetchone()
            if found is None or conn.execute("SELECT 1 FROM think_messages WHERE agent_key = ? AND parent_id = ? "
                                             "LIMIT 1", (self.key, message_id)).fetchone():
                return False
            conn.execute("DELETE FROM think_messages WHERE agent_key = ? AND id = ?", (self.key, message_id))
            if found[0] is None:
                conn.execute("DELETE FROM think_agent_state WHERE agent_key = ? AND key = ?",
                             (self.agent_key, self._leaf_key))
            else:
                conn.execute("INSERT OR REPLACE INTO think_agent_state VALUES (?, ?, ?)",
                             (self.agent_key, self._leaf_key, jsonsafe.dumps_stored(found[0])))
        return True

    def clear(self) -> None:
        """Delete every message of this session, its compaction overlays (Think's `clearMessages`) and its
        turn records (`think_nb.store.records`)."""
        with self.db.write() as conn:
            conn.execute("DELETE FROM think_messages WHERE agent_key = ?", (self.key,))
            conn.execute("DELETE FROM think_compactions WHERE conversation_key = ?", (self.key,))
            conn.execute("DELETE FROM think_turn_records WHERE conversation_key = ?", (self.key,))  # their turns
            conn.execute("DELETE FROM think_agent_state WHERE agent_key = ? AND key = ?",
                         (self.agent_key, self._leaf_key))

    def tree_rows(self) -> dict[str, tuple[str | None, float]]:
        """`{id: (parent_id, created_at)}` of every stored message of this session (every branch)."""
        return {i: (p, c) for i, p, c in self.db.read(
            "SELECT id, parent_id, created_at FROM think_messages WHERE agent_key = ?", (self.key,))}


def usage_by_request(db: Database, agent_key: str) -> dict[str, dict]:
    """`{request id: metadata.usage}` of the agent's stored assistant messages, in every session
    (the rows of `agent_key` and of its `agent_key#S` conversation keys); a message without a
    request id or usage is left out."""
    rows = db.read("SELECT json_extract(content, '$.metadata.requestId'), json_extract(content, '$.metadata.usage') "
                   "FROM think_messages WHERE (agent_key = ? OR (agent_key >= ? AND agent_key < ?)) AND "
                   "role = 'assistant'", (agent_key, f"{agent_key}#", f"{agent_key}$"))  # '$' sorts just after '#'
    out: dict[str, dict] = {}
    for request_id, usage in rows:
        if isinstance(request_id, str) and isinstance(usage, str):
            value = jsonsafe.loads_stored(usage)
            if isinstance(value, dict):
                out[request_id] = value
    return out


def conversation_key(agent_key: str, session_id: str) -> str:
    """The `think_messages.agent_key` value of a session's rows ("" = the default session)."""
    return agent_key if not session_id else f"{agent_key}#{session_id}"
