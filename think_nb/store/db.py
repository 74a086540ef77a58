"""The SQLite connection for one file, shared by every agent of the process that uses it.

WAL mode (readers never block the writer, and a killed kernel leaves a file that opens),
a 5 s busy timeout for a second process on the same file, and migrations applied on open.
Access is serialised by a lock, so worker threads (sync tools, the CLI) may use it too.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from think_nb.store.migrations import migrate

_open: dict[Path, Database] = {}
_open_lock = threading.Lock()


class Database:
    """A migrated SQLite file. Use `read()` for queries and `write()` for a transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=5.0)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._lock = threading.RLock()
        with self._lock:
            migrate(self._conn)

    def read(self, sql: str, params: tuple | dict = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A transaction: `with db.write() as c: c.execute(...)`; rolled back on error."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def execute(self, sql: str, params: tuple | dict = ()) -> Any:
        """One statement in its own transaction."""
        with self.write() as conn:
            return conn.execute(sql, params)

    def close(self) -> None:
        with _open_lock, self._lock:
            self._conn.close()
            _open.pop(self.path, None)


def open_database(path: str | Path) -> Database:
    """The process-wide `Database` for `path` (created, WAL-enabled and migrated on first use)."""
    resolved = Path(path).expanduser().resolve()
    with _open_lock:
        if resolved not in _open:
            _open[resolved] = Database(resolved)
        return _open[resolved]
