"""The workspace table (`think_workspace_files`): one agent's virtual files and directories.

Rows are `WorkspaceRow`s keyed by a normalised absolute POSIX path (`think_nb.workspace.paths`
normalises; this module trusts its input). A file holds its bytes in `content`, or names a
`spill` file beside the database when it is large (the file system decides, see
`think_nb.workspace.fs`). The root `/` is implicit: it never has a row.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from think_nb.store.db import Database

_COLUMNS = "path, kind, size, spill, created_at, modified_at"


@dataclass(frozen=True)
class WorkspaceRow:
    """One entry: `kind` is "file" or "directory"; `size` in bytes; times in Unix seconds."""

    path: str
    kind: str
    size: int
    spill: str | None
    created_at: float
    modified_at: float


def _parent(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"


def _like_prefix(path: str) -> str:
    base = path.rstrip("/") + "/"
    return base.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class WorkspaceRows:
    """The `think_workspace_files` rows of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def get(self, path: str) -> WorkspaceRow | None:
        rows = self.db.read(f"SELECT {_COLUMNS} FROM think_workspace_files WHERE agent_key = ? AND path = ?",
                            (self.agent_key, path))
        return WorkspaceRow(*rows[0]) if rows else None

    def content(self, path: str) -> bytes | None:
        """The inline bytes of a file (None for a spilled file, a directory or no row)."""
        rows = self.db.read("SELECT content FROM think_workspace_files WHERE agent_key = ? AND path = ?",
                            (self.agent_key, path))
        return bytes(rows[0][0]) if rows and rows[0][0] is not None else None

    def children(self, path: str) -> list[WorkspaceRow]:
        """The entries directly under directory `path`, by path."""
        rows = self.db.read(f"SELECT {_COLUMNS} FROM think_workspace_files WHERE agent_key = ? AND parent = ? "
                            "ORDER BY path", (self.agent_key, path))
        return [WorkspaceRow(*r) for r in rows]

    def under(self, path: str, kind: str | None = None) -> list[WorkspaceRow]:
        """Every entry below `path` (any depth), by path; only `kind` ones when given."""
        sql = (f"SELECT {_COLUMNS} FROM think_workspace_files WHERE agent_key = ? AND path LIKE ? ESCAPE '\\'"
               + (" AND kind = ?" if kind else "") + " ORDER BY path")
        params: tuple = (self.agent_key, _like_prefix(path)) + ((kind,) if kind else ())
        return [WorkspaceRow(*r) for r in self.db.read(sql, params)]

    def contents_under(self, path: str) -> Iterator[tuple[WorkspaceRow, bytes | None]]:
        """Files below `path` with their inline bytes (None when spilled), by path."""
        rows = self.db.read(f"SELECT {_COLUMNS}, content FROM think_workspace_files WHERE agent_key = ? "
                            "AND kind = 'file' AND path LIKE ? ESCAPE '\\' ORDER BY path",
                            (self.agent_key, _like_prefix(path)))
        for r in rows:
            yield WorkspaceRow(*r[:6]), (bytes(r[6]) if r[6] is not None else None)

    def put_file(self, path: str, content: bytes | None, size: int, spill: str | None) -> str | None:
        """Create or replace a file (its parent directories must exist); returns the spill name it replaced."""
        now = time.time()
        with self.db.write() as c:
            old = c.execute("SELECT spill, created_at FROM think_workspace_files WHERE agent_key = ? AND path = ?",
                            (self.agent_key, path)).fetchone()
            c.execute("INSERT OR REPLACE INTO think_workspace_files VALUES (?, ?, ?, 'file', ?, ?, ?, ?, ?)",
                      (self.agent_key, path, _parent(path), size, content, spill, old[1] if old else now, now))
        return old[0] if old and old[0] != spill else None

    def make_dirs(self, paths: list[str]) -> None:
        """Create directories (existing ones are kept)."""
        now = time.time()
        with self.db.write() as c:
            c.executemany("INSERT OR IGNORE INTO think_workspace_files "
                          "VALUES (?, ?, ?, 'directory', 0, NULL, NULL, ?, ?)",
                          [(self.agent_key, p, _parent(p), now, now) for p in paths])

    def delete(self, path: str, recursive: bool = False) -> list[str]:
        """Delete `path` (and, when `recursive`, everything below it); returns the spill names freed."""
        with self.db.write() as c:
            where = "agent_key = ? AND (path = ?" + (" OR path LIKE ? ESCAPE '\\')" if recursive else ")")
            params: tuple = (self.agent_key, path) + ((_like_prefix(path),) if recursive else ())
            spills = [r[0] for r in c.execute(f"SELECT spill FROM think_workspace_files WHERE {where} "
                                              "AND spill IS NOT NULL", params)]
            c.execute(f"DELETE FROM think_workspace_files WHERE {where}", params)
        return spills

    def count(self) -> int:
        return int(self.db.read("SELECT COUNT(*) FROM think_workspace_files WHERE agent_key = ?",
                                (self.agent_key,))[0][0])
