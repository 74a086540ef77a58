"""Which processes writing one database are alive (the owners of `running` rows).

Rows that stand for work in progress (a turn in the turn log, a turn's stream, a running
submission) carry the id of the process doing the work (`PROCESS`). When an agent is created it
recovers the work of processes that died; work of a process that is still alive (a second kernel
on the same notebook file) is left alone.

Liveness is an OS file lock, not a guess from a pid or a heartbeat: each process that opens a
database holds an exclusive lock on `<db>.owners/<PROCESS>.lock` for as long as it lives
(`flock` on POSIX, straight from `fcntl`; `filelock`'s `msvcrt.locking` on Windows: importing
`filelock` costs a fresh process ~60 M instructions, a tenth of its first turn, for the one call
`flock` makes, issue 29 §3). The OS releases it the moment
the process dies, SIGKILL included, so "the lock can be taken" means "its owner is dead"; a pid
reused by another program cannot fool it. Rows with no owner, or whose lock file is gone, belong
to dead processes too. This needs the database on a local disk, which SQLite's WAL mode needs
as well.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: filelock's msvcrt lock
    fcntl = None  # type: ignore[assignment]


def _new_id() -> str:
    return os.urandom(16).hex()  # 128 random bits, as uuid4().hex (without importing uuid and platform)


PROCESS = _new_id()
"""Owner id of the rows this process writes."""

log = logging.getLogger("think_nb")
_held: dict[Path, Any] = {}  # this process's lock per owners folder, held until the process ends
_held_lock = threading.Lock()


class Held(Exception):
    """Another process holds the lock."""


def _take(path: Path) -> Any:
    """Take the exclusive lock on `path` without waiting; the handle to `_give_back`.

    Raises:
        Held: another process holds it.
        OSError: the file cannot be opened.
    """
    if fcntl is None:
        from filelock import FileLock, Timeout

        lock = FileLock(path, thread_local=False, is_singleton=False)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            raise Held(path) from None
        return lock
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Held(path) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _give_back(handle: Any) -> None:
    if isinstance(handle, int):
        os.close(handle)  # closing the only descriptor of the lock releases it
    else:
        handle.release()


def _after_fork_in_child() -> None:
    """A forked child is another process: a new id and its own locks. The parent's descriptors are
    shared with it by fork; they are left open (closing one would not release the parent's lock, but
    `flock(LOCK_UN)` would) and forgotten."""
    global PROCESS
    PROCESS = _new_id()
    folders = list(_held)
    _held.clear()
    for folder in folders:
        with contextlib.suppress(OSError, Held):
            _held[folder] = _take(folder / f"{PROCESS}.lock")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Owners:
    """The owner locks beside one database file (see the module docstring).

    Args:
        db_path: the SQLite file; the locks live in the folder `<db_path>.owners/`.
    """

    def __init__(self, db_path: Path) -> None:
        self.folder = db_path.with_name(db_path.name + ".owners")
        self._dead: set[str] = set()

    def claim(self) -> None:
        """Hold this process's lock for its lifetime (idempotent). When the folder cannot be
        written, liveness is unknown: other owners are then treated as dead, as before locks."""
        with _held_lock:
            if self.folder in _held:
                return
            try:
                self.folder.mkdir(exist_ok=True)
                lock = _take(self.folder / f"{PROCESS}.lock")
            except (OSError, Held) as exc:
                log.warning("think_nb: cannot hold an owner lock in %s (%s); a second process on this file "
                            "may see this one's running turns as interrupted", self.folder, exc)
                return
            _held[self.folder] = lock

    @staticmethod
    def current() -> str:
        """This process's owner id (changes in a forked child)."""
        return PROCESS

    def alive(self, owner: str | None) -> bool:
        """True when the process `owner` still runs (this process is alive)."""
        if owner == PROCESS:
            return True
        if not owner or owner in self._dead:
            return False
        path = self.folder / f"{owner}.lock"
        if not path.exists():
            self._dead.add(owner)
            return False
        try:
            probe = _take(path)
        except Held:
            return True
        except OSError:  # cannot even open it: unknown, so not alive (its work is recovered)
            self._dead.add(owner)
            return False
        _give_back(probe)
        with contextlib.suppress(OSError):
            path.unlink()
        self._dead.add(owner)
        return False
