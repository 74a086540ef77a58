"""The sub-agents of a parent, read from the file, and erasing one (Think's `cf_agents_sub_agents`
registry: `hasSubAgent`, `listSubAgents`, `deleteSubAgent`).

A sub-agent made by `parent.sub_agent(Child, name)` is stored in its parent's file under the key
`"<parent key>/<Child>:<name>"` and registered in `think_agents` (class name, name, created at) when it
is first created, so its parent's children are known from the file alone, in a new process too.

`erase(db, key)` deletes every row of agent `key` and of its own sub-agents: each think_nb table's
rows whose `agent_key` (or `conversation_key`) is the key, one of its sessions (`<key>#<session>`) or
a descendant (`<key>/...`), the agent-tool runs that name it as their child, and last its
`think_agents` rows. Tables are found from the schema, so a table added later is erased too. Rows
go in batches of `BATCH` (a transaction each: 10,000 messages take ~1.5 s with their full-text
triggers, and the file's one connection is not held that long at once), in a worker thread; a
process killed midway leaves the child registered, and erasing it again finishes.
"""

from __future__ import annotations

import sqlite3

from think_nb.store.db import Database

KEY_COLUMNS = ("agent_key", "conversation_key")
"""Columns that hold an agent's key (or a conversation key derived from it)."""
BATCH = 200
"""Rows deleted per transaction by `erase` (measured on 10,000 messages: 1.6 s in all, the longest
transaction 99 ms; 100 rows: 2.4 s, 75 ms)."""


def child_key(parent_key: str, class_name: str, name: str) -> str:
    """The storage key of `parent`'s sub-agent `class_name` named `name`."""
    return f"{parent_key}/{class_name}:{name}"


def children(db: Database, parent_key: str, class_name: str | None = None) -> list[dict]:
    """The direct sub-agents of `parent_key` registered in `db`, oldest first: `{class, name, key,
    created_at (epoch s), messages}` (`messages`: stored messages, every session)."""
    db.flush_agents()
    rows = db.read("SELECT a.class_name, a.name, a.key, a.created_at, (SELECT count(*) FROM think_messages m "
                   "WHERE m.agent_key = a.key OR substr(m.agent_key, 1, length(a.key) + 1) = a.key || '#') "
                   "FROM think_agents a WHERE substr(a.key, 1, length(?) + 1) = ? || '/' "
                   "AND a.key = ? || '/' || a.class_name || ':' || a.name ORDER BY a.created_at, a.rowid",
                   (parent_key, parent_key, parent_key))
    return [{"class": c, "name": n, "key": k, "created_at": t, "messages": count}
            for c, n, k, t, count in rows if class_name is None or c == class_name]


def exists(db: Database, key: str) -> bool:
    """Whether an agent with storage key `key` was ever created in this file."""
    db.flush_agents()
    return bool(db.read("SELECT 1 FROM think_agents WHERE key = ?", (key,)))


def erase(db: Database, key: str) -> list[str]:
    """Delete every stored row of agent `key` and its descendants (see the module docstring);
    returns the workspace spill file names their rows held (to delete from disk). Blocking: call it
    in a worker thread."""
    db.flush_agents()
    match = "({col} = ? OR substr({col}, 1, length(?) + 1) IN (? || '#', ? || '/'))"
    args = (key, key, key, key)
    spills = [s for (s,) in db.read("SELECT spill FROM think_workspace_files WHERE spill IS NOT NULL AND "
                                    + match.format(col="agent_key"), args)]
    with db.locked() as c:
        tables = _tables(c)
    for table, column in [*((t, col) for t, cols in tables for col in cols), ("think_child_runs", "child_key"),
                          ("think_agents", "key")]:
        while True:
            with db.write() as c:
                gone = c.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE "
                                 f"{match.format(col=column)} LIMIT {BATCH})", args).rowcount
            if gone < BATCH:
                break
    return spills


def _tables(c: sqlite3.Connection) -> list[tuple[str, list[str]]]:
    """Every think_nb table (not FTS shadow tables: triggers keep those) with its key columns."""
    names = [n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'think!_%' "
                                     "ESCAPE '!' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%'")]
    out = []
    for name in names:
        columns = [row[1] for row in c.execute(f"PRAGMA table_info({name})") if row[1] in KEY_COLUMNS]
        if columns:
            out.append((name, columns))
    return out
