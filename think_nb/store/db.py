"""The SQLite connection for one file, shared by every agent of the process that uses it.

WAL mode (readers never block the writer, and a killed kernel leaves a file that opens),
a 5 s busy timeout for a second process on the same file, and migrations applied on open.
Access is serialised by a lock, so worker threads (sync tools, the CLI) may use it too.

Before anything is written, `open_database` checks the path (`check_db_path`): a directory,
a device, a path under a file, a read-only file or folder, a file that is not SQLite, a
damaged SQLite file, or another application's SQLite file (tables, none of them think_nb's)
is refused with a one-line `UserError` naming `db=` and the fix; the file is left as it was
(the checks read it through an `immutable` connection, which writes nothing, not even the
-wal/-shm files beside it). A think_nb file may also hold tables of the user's, of any name:
think_nb's own are all named `think_*` (`think_nb.store.migrations.PREFIX`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from think_nb.errors import UserError
from think_nb.store.migrations import NameTaken, migrate
from think_nb.store.owners import Owners

_open: dict[Path, Database] = {}
_HERE = Path()
_open_lock = threading.Lock()

SQLITE_HEADER = b"SQLite format 3\x00"
MARKER_TABLE = "_think_nb_migrations"  # every think_nb file has it (migrations.py creates it first)
_ENVIRONMENT_FAILURES = ("readonly", "read-only", "unable to open", "disk", "locked", "I/O")
BUSY_TIMEOUT_S = 5.0
"""How long a statement waits for another process's write lock."""
LOCK_WAIT_S = 60.0
"""How long opening a file waits for the lock (journal mode, another process's migrations: a large
file's backfill takes seconds); then statements wait `BUSY_TIMEOUT_S` again."""


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _set_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL. Switching needs a moment of exclusive access and SQLite reports
    "database is locked" at once, without its busy wait, when another process holds the file
    then (six processes opening a new file: ~1 run in 20 under load failed). So the switch is
    tried again, backing off, for up to `LOCK_WAIT_S`."""
    deadline = time.monotonic() + LOCK_WAIT_S
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


class Database:
    """A migrated SQLite file. Use `read()` for queries and `write()` for a transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        check_db_path(path)
        self._lock = threading.RLock()
        self.lock = self._lock
        """Held by every statement of this `Database`: hold it over several reads that no other thread
        of this process may interleave a write with."""
        self.memo: dict[str, Any] = {}
        """What modules know of this connection's file, kept for its life (`think_nb.store.presence`)."""
        self._depth = 0  # nesting of write() in the thread holding the lock
        self.writes = 0
        """Transactions begun on this connection (counted at BEGIN): with the file's `data_version`,
        which changes when another connection commits, it tells `think_nb.store.presence` that what
        it knows of the file's tables still holds."""
        self._atexit = False
        self._unregistered: dict[str, tuple[str, str, str, float]] = {}  # agents made, not in think_agents yet
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"db={str(path)!r}: its folder cannot be created ({exc.strerror}); "
                            "pass a path in a folder you can write to.") from exc
        try:
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None,
                                         timeout=BUSY_TIMEOUT_S)
        except sqlite3.OperationalError as exc:
            raise UserError(f"db={str(path)!r} could not be opened ({_one_line(exc)}); "
                            "pass a path to a file you can read and write.") from exc
        try:
            # opening waits longer than a statement: other processes may be migrating this file
            self._conn.execute(f"PRAGMA busy_timeout = {int(LOCK_WAIT_S * 1000)}")
            _set_wal(self._conn)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            with self._lock:
                migrate(self._conn)
            self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        except NameTaken as exc:
            self._conn.close()
            raise UserError(f"db={str(path)!r} {exc}.") from None
        except sqlite3.OperationalError as exc:
            self._conn.close()
            if not any(w in str(exc) for w in _ENVIRONMENT_FAILURES):
                raise
            # what the checks cannot foresee: a full disk, a lock held too long, a read-only mount
            raise UserError(f"db={str(path)!r} could not be opened for writing ({_one_line(exc)}); "
                            "pass a path on a writable disk that no other program holds locked.") from exc
        except BaseException:
            self._conn.close()
            raise
        self.owners = Owners(path)
        """Liveness of the processes that own `running` rows in this file (`think_nb.store.owners`)."""
        self.owners.claim()

    def read(self, sql: str, params: tuple | dict = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    @property
    def in_transaction(self) -> bool:
        """True while a transaction is open on this connection (its writes not committed yet)."""
        return self._conn.in_transaction

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The connection for several statements no other thread interleaves with, outside any
        transaction (each commits at once): for the connection's own TEMP tables."""
        with self._lock:
            yield self._conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A transaction: `with db.write() as c: c.execute(...)`; rolled back on error. Nested in
        another `write()` of the same thread, it joins the outer transaction (all or nothing)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            self.writes += 1
            registering = self._take_unregistered()
            try:
                if registering:  # the agents made since the last write, in this transaction
                    self._conn.executemany("INSERT OR IGNORE INTO think_agents VALUES (?, ?, ?, ?)", registering)
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                self._unregistered.update((row[0], row) for row in registering)
                raise
            finally:
                self._depth = 0
            self._conn.execute("COMMIT")

    def register_agent(self, key: str, class_name: str, name: str, created_at: float) -> None:
        """Record agent `key` in `think_agents` without a write of its own: the row joins this
        file's next transaction (`write()`), is written before `think_agents` is read here
        (`flush_agents()`), once the running event loop gets control back, and at exit. Creating an
        agent writes nothing, and 100 agents made in one cell are registered in one transaction."""
        with self._lock:
            first = not self._unregistered
            self._unregistered.setdefault(key, (key, class_name, name, created_at))
        if first:
            loop = asyncio._get_running_loop()
            if loop is not None:
                loop.call_soon(self.flush_agents)
            if not self._atexit:
                self._atexit = True
                atexit.register(self.flush_agents)

    def flush_agents(self) -> None:
        """Write the registrations `register_agent` holds (nothing when there are none)."""
        if self._unregistered:
            with contextlib.suppress(sqlite3.Error), self.write():
                pass

    def _take_unregistered(self) -> list[tuple[str, str, str, float]]:
        if not self._unregistered:
            return []
        rows = list(self._unregistered.values())
        self._unregistered.clear()
        return rows

    def execute(self, sql: str, params: tuple | dict = ()) -> Any:
        """One statement in its own transaction."""
        with self.write() as conn:
            return conn.execute(sql, params)

    def close(self) -> None:
        self.flush_agents()
        with _open_lock, self._lock:
            self._conn.close()
            _open.pop(self.path, None)


def open_database(path: str | os.PathLike[str]) -> Database:
    """The process-wide `Database` for `path` (created, WAL-enabled and migrated on first use).

    Raises:
        UserError: `path` cannot hold think_nb's data (see `check_db_path`); nothing was written.
    """
    found = _open.get(path) if type(path) is type(_HERE) else None  # a resolved path, already open
    if found is not None:
        return found
    if not isinstance(path, (str, os.PathLike)):
        raise UserError(f"db={path!r} must be a path (str or pathlib.Path) to a SQLite file, e.g. db='demo.sqlite'.")
    resolved = resolve_path(path)
    with _open_lock:
        if resolved not in _open:
            _open[resolved] = Database(resolved)
        return _open[resolved]


_resolved: dict[tuple[str, str], Path] = {}


def resolve_path(path: str | os.PathLike[str]) -> Path:
    """`Path(path).expanduser().resolve()`, remembered per path and working directory (resolving
    reads every folder on the way: most of an agent's creation when done each time). A symlink
    changed on the way while the process runs is not seen (the file it opened stays open anyway)."""
    text = os.fspath(path)
    key = (text, "" if os.path.isabs(text) else os.getcwd())
    found = _resolved.get(key)
    if found is None:
        found = _resolved[key] = Path(text).expanduser().resolve()
    return found


def check_db_path(path: Path) -> None:
    """Refuse, before anything is written, a path think_nb cannot or must not use as its SQLite file.

    Raises:
        UserError: one line naming `db=` and the fix.
    """
    shown = f"db={str(path)!r}"
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):  # NotADirectoryError: a/b where a is a file
        st = None
    except PermissionError:
        raise UserError(f"{shown} cannot be reached (permission denied on a folder on the way); "
                        "pass a path you can read and write.") from None
    except OSError as exc:  # a name too long, a loop of symlinks, ...
        raise UserError(f"{shown} cannot be used ({exc.strerror}); pass a plain file path, "
                        "e.g. db='demo.sqlite'.") from None
    if st is None:
        _check_new_file(path, shown)
        return
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{shown} is a directory; pass a file path, e.g. db={str(path / 'think.sqlite')!r}.")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a character device" if stat.S_ISCHR(st.st_mode) else "a block device" if stat.S_ISBLK(st.st_mode)
                else "a named pipe" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "not a regular file")
        raise UserError(f"{shown} is {kind}, not a file; pass a path for a SQLite file, e.g. db='demo.sqlite'.")
    if not os.access(path, os.R_OK):
        raise UserError(f"{shown} cannot be read (permission denied); make it readable (chmod u+rw) "
                        "or pass another path.")
    if not os.access(path, os.W_OK):
        raise UserError(f"{shown} is read-only (think_nb writes every turn to it); "
                        "make it writable (chmod u+w) or pass another path.")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UserError(f"{shown} is in the read-only folder {str(path.parent)!r} (SQLite creates its -wal and -shm "
                        "files beside it); make the folder writable or pass a path in a writable folder.")
    if st.st_size:
        _check_sqlite_file(path, shown, st.st_size)


def _check_new_file(path: Path, shown: str) -> None:
    """The file does not exist: its nearest existing ancestor must be a writable folder."""
    ancestor = path.parent
    while True:
        try:
            st = ancestor.stat()
            break
        except (FileNotFoundError, NotADirectoryError):
            ancestor = ancestor.parent
        except OSError as exc:
            raise UserError(f"{shown} cannot be created: {str(ancestor)!r} cannot be reached ({exc.strerror}); "
                            "pass a path in a folder you can write to.") from None
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"{shown} cannot be created: {str(ancestor)!r} is a file, not a folder; "
                        "pass a path whose folders are directories.")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UserError(f"{shown} cannot be created: the folder {str(ancestor)!r} is read-only; "
                        "pass a path in a writable folder.")


def _check_sqlite_file(path: Path, shown: str, size: int) -> None:
    """An existing, non-empty file: it must be an undamaged SQLite file that is think_nb's (or has no tables)."""
    with path.open("rb") as f:
        header = f.read(100)
    if not header.startswith(SQLITE_HEADER):
        raise UserError(f"{shown} is not a SQLite file (it does not start with the SQLite header); "
                        "pass a new path or a think_nb .sqlite file.")
    damaged = f"{shown} is a damaged SQLite file ({{}}); move it aside (or restore a backup) and pass a new path."
    if len(header) < 100:
        raise UserError(damaged.format(f"truncated: {size} bytes, shorter than its own header"))
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages, counter, valid_for = (int.from_bytes(header[i:i + 4], "big") for i in (28, 24, 92))
    wal = path.with_name(path.name + "-wal")
    live_wal = wal.exists() and wal.stat().st_size > 0
    # Without a WAL to replay, the header's page count (when valid) is what the file must hold.
    if not live_wal and counter == valid_for and pages and size < pages * page_size:
        raise UserError(damaged.format(f"truncated: {size} of {pages * page_size} bytes"))
    # `immutable=1` reads the file and writes nothing beside it; with a WAL to replay (think_nb's own
    # file after a crash) a read-only connection is needed to see the committed state.
    uri = path.as_uri() + ("?mode=ro" if live_wal else "?immutable=1")
    try:
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            names = sorted(name for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"))
            if names and MARKER_TABLE not in names:
                tables = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
                raise UserError(f"{shown} belongs to another application (it holds {tables}; none made by think_nb) "
                                "and think_nb will not change it; pass a new path, e.g. "
                                f"db={str(path.with_name(path.stem + '.think.sqlite'))!r}.")
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(1)")]
    except sqlite3.DatabaseError as exc:
        raise UserError(damaged.format(_one_line(exc))) from None
    if problems != ["ok"]:
        raise UserError(damaged.format(_one_line(problems[0]) if problems else "quick_check failed"))
