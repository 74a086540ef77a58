"""Where a message stands in its session's tree: its depth and a jump pointer, so "is message m on
the branch that ends at leaf l" takes O(log depth) index lookups instead of a walk of the branch.

Each row of `think_messages` carries `depth` (a root is 0) and `jump_id`/`jump_depth`, an ancestor
chosen by the skew-binary rule (E. W. Myers, "An applicative random-access stack", 1983): for a
message v under parent p, with j = jump(p) and jj = jump(j),

    jump(v) = jj   if depth(p) - depth(j) == depth(j) - depth(jj)   else   p

and a root jumps to itself. Walking from a leaf by `jump` when it does not overshoot the target
depth, by `parent_id` otherwise, reaches its ancestor at any depth in O(log depth) steps
(`ON_BRANCH_SQL`). A message is on a branch exactly when it is the branch leaf's ancestor at its
own depth.

    child_fields(parent_id, message_id, lookup, stored)   # (depth, jump_id, jump_depth) of a new child
    backfill(conn)                         # migration m016: every stored row, parents first

A row with no depth (written into a migrated file by a think_nb older than m016) makes its
descendants' fields unknown (NULL): `MessageStore.on_branch` then walks the branch as before.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable
from functools import partial

Fields = tuple[int, str, int]
"""(depth, jump_id, jump_depth) of a stored message."""

TABLE = "think_messages"


def root_fields(message_id: str) -> Fields:
    return (0, message_id, 0)


def child_fields(parent_id: str | None, message_id: str, lookup: Callable[[str], Fields | None],
                 stored: Callable[[str], bool] = lambda _id: False) -> Fields | None:
    """The fields of a new message `message_id` under `parent_id`. `lookup(id)` gives a stored (or
    just computed) message's fields, None when unknown; `stored(id)` whether a message with no
    fields is stored at all. A parent that is not stored makes a root (as `MessageStore.branch`
    sees it); a stored parent with unknown fields gives None."""
    if parent_id is None:
        return root_fields(message_id)
    parent = lookup(parent_id)
    if parent is None:
        return None if stored(parent_id) else root_fields(message_id)
    depth, jump_id, jump_depth = parent
    jump = lookup(jump_id)
    if jump is None:
        return None
    if depth - jump_depth == jump_depth - jump[2]:
        return (depth + 1, jump[1], jump[2])
    return (depth + 1, parent_id, depth)


class Reader:
    """`lookup` (calling it) and `stored` over a connection, inside the caller's transaction, for
    one conversation key, with the fields computed in this write remembered (a chain refers to its
    own new rows)."""

    def __init__(self, conn: sqlite3.Connection, key: str) -> None:
        self.conn, self.key = conn, key
        self.known: dict[str, Fields] = {}

    def __call__(self, message_id: str) -> Fields | None:
        if message_id in self.known:
            return self.known[message_id]
        row = self.conn.execute(f"SELECT depth, jump_id, jump_depth FROM {TABLE} WHERE agent_key = ? AND id = ?",
                                (self.key, message_id)).fetchone()
        if row is None or row[0] is None:
            return None
        return (row[0], row[1], row[2])

    def stored(self, message_id: str) -> bool:
        return self.conn.execute(f"SELECT 1 FROM {TABLE} WHERE agent_key = ? AND id = ?",
                                 (self.key, message_id)).fetchone() is not None


def backfill(conn: sqlite3.Connection, table: str = TABLE) -> None:
    """Fill the fields of every row of `table` (migration m016), parents first; a row whose
    parent is not stored is a root (as `MessageStore.branch` treats it)."""
    rows = conn.execute(f"SELECT seq, agent_key, id, parent_id FROM {table}").fetchall()
    stored = {(key, mid) for _, key, mid, _ in rows}
    children: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    stack: list[tuple[int, str, str, str | None]] = []
    for seq, key, mid, parent in rows:
        if parent is None or (key, parent) not in stored or parent == mid:
            stack.append((seq, key, mid, None))
        else:
            children[(key, parent)].append((seq, mid))
    known: dict[tuple[str, str], Fields] = {}
    updates = []
    while stack:
        seq, key, mid, parent = stack.pop()
        got = child_fields(parent, mid, partial(_known, known, key))
        assert got is not None  # parents first: every parent and its jumps are known
        known[(key, mid)] = got
        updates.append((*got, seq))
        stack.extend((cseq, key, cid, mid) for cseq, cid in children.get((key, mid), ()))
    conn.executemany(f"UPDATE {table} SET depth = ?, jump_id = ?, jump_depth = ? WHERE seq = ?", updates)


def _known(known: dict[tuple[str, str], Fields], key: str, message_id: str) -> Fields | None:
    return known.get((key, message_id))


ON_BRANCH_SQL = f"""
WITH RECURSIVE
target(id, d) AS (SELECT id, depth FROM {TABLE} WHERE agent_key = :agent
                  AND id IN (SELECT value FROM json_each(:ids)) AND depth IS NOT NULL),
walk(tid, td, id, depth, parent_id, jump_id, jump_depth) AS (
    SELECT target.id, target.d, m.id, m.depth, m.parent_id, m.jump_id, m.jump_depth FROM target, {TABLE} m
    WHERE m.agent_key = :agent AND m.id = :leaf AND m.depth >= target.d
    UNION ALL
    SELECT walk.tid, walk.td, m.id, m.depth, m.parent_id, m.jump_id, m.jump_depth FROM walk, {TABLE} m
    WHERE walk.depth > walk.td AND m.agent_key = :agent
      AND m.id = CASE WHEN walk.jump_depth >= walk.td THEN walk.jump_id ELSE walk.parent_id END
)
SELECT tid FROM walk WHERE depth = td AND id = tid
"""
"""The ids of the JSON array `:ids` that are `:leaf`'s ancestor at their own depth (on the branch):
one walk per id from the leaf, all in one statement, each O(log depth) steps. An id deeper than the
leaf, unknown, or with no depth gives no row."""
