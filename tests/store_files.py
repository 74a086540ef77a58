"""Test helper: a think_nb SQLite file as an older think_nb made it.

`old_file(path, before="m014")` applies the migrations before `before` the way `migrate` did
before m014 (one transaction, each recorded in `_think_nb_migrations`) with the plain names of
that time (`messages`, `agent_state`, ...): the file a user of that version has.
`tests/test_store_names.py` pins the schema this makes to the one that version made.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from think_nb.store.migrations import MIGRATIONS


def old_file(path: Path, before: str = "m014") -> sqlite3.Connection:
    """Make `path` with the migrations whose names sort before `before`; returns the open
    connection (autocommit) to add rows with the old names. Raises FileExistsError if `path` exists."""
    if path.exists():
        raise FileExistsError(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE _think_nb_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    conn.execute("BEGIN IMMEDIATE")
    for step in MIGRATIONS:
        if step.__name__ < before:
            step(conn, "")
            conn.execute("INSERT INTO _think_nb_migrations VALUES (?, 0)", (step.__name__,))
    conn.execute("COMMIT")
    return conn
