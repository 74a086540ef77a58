"""The schema as named, append-only migrations (llm's `migrations.py` pattern).

Never edit or reorder a migration that has shipped: add a new one. Each is applied once, in
order, inside a transaction, and recorded in `_think_nb_migrations(name, applied_at)`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []
migration = MIGRATIONS.append


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    # Agents are keyed by "<class>:<name>" so two classes may share a name in one notebook.
    db.execute("CREATE TABLE agents (key TEXT PRIMARY KEY, class_name TEXT NOT NULL, name TEXT NOT NULL, "
               "created_at REAL NOT NULL)")
    # UIMessages as a tree: regenerate adds a sibling under the same parent, nothing is lost.
    # `seq` gives a stable insertion order; `content` is the whole UIMessage as JSON.
    db.execute("CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent_key TEXT NOT NULL, "
               "id TEXT NOT NULL, parent_id TEXT, role TEXT NOT NULL, content TEXT NOT NULL, "
               "created_at REAL NOT NULL, updated_at REAL NOT NULL, UNIQUE (agent_key, id))")
    db.execute("CREATE INDEX messages_parent ON messages (agent_key, parent_id)")
    # Small per-agent JSON values: the current leaf of the tree, Think's config blob, ...
    db.execute("CREATE TABLE agent_state (agent_key TEXT NOT NULL, key TEXT NOT NULL, value TEXT, "
               "PRIMARY KEY (agent_key, key))")


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded; returns the names applied now."""
    db.execute("CREATE TABLE IF NOT EXISTS _think_nb_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = {row[0] for row in db.execute("SELECT name FROM _think_nb_migrations")}
    applied = []
    for step in MIGRATIONS:
        if step.__name__ in done:
            continue
        db.execute("BEGIN IMMEDIATE")  # the connection is in autocommit mode; DDL is transactional in SQLite
        try:
            step(db)
            db.execute("INSERT INTO _think_nb_migrations VALUES (?, ?)", (step.__name__, time.time()))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        applied.append(step.__name__)
    return applied
