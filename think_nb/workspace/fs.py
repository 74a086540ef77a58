"""`WorkspaceFileSystem`: an fsspec file system over one agent's `think_workspace_files` table.

    fs = agent.workspace                       # this class, per agent
    fs.pipe_file("/notes/todo.md", b"- milk")  # or fs.open(path, "w").write(...)
    fs.ls("/notes", detail=False)              # ['/notes/todo.md']
    fs.cat_file("/notes/todo.md"), fs.glob("/**/*.md"), fs.rm("/notes", recursive=True)

Every fsspec method (`open`, `cat`, `glob`, `find`, `walk`, `du`, `rm`, `mkdir`, `copy`, ...) works
on top of the primitives here (Think's `Workspace` over DO SQLite is the model). Paths are
normalised by `think_nb.workspace.paths.normalize` (anything that could escape `/` is refused
with `PathError`). Writing a file creates its parent directories (Think's `writeFile`). A file
larger than `spill_threshold` bytes (default 1 MiB) is stored in `spill_dir` (default
`.think/<stem>.files/` beside the database), its row keeping only the name: Think's R2 overflow.
Instances are not cached by fsspec (each agent has its own).
"""

from __future__ import annotations

import hashlib
import io
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fsspec.spec import AbstractFileSystem

from think_nb.store.workspace import WorkspaceRow, WorkspaceRows
from think_nb.workspace import paths

SPILL_THRESHOLD = 1024 * 1024
"""Bytes above which a file's content is written beside the database instead of into it."""


class _WriteBuffer(io.BytesIO):
    """What `open(path, "wb")` returns: the bytes are stored when it is closed."""

    def __init__(self, fs: WorkspaceFileSystem, path: str, initial: bytes = b"") -> None:
        super().__init__(initial)
        self.seek(0, io.SEEK_END)
        self._fs, self._path = fs, path

    def close(self) -> None:
        if not self.closed:
            self._fs.pipe_file(self._path, self.getvalue())
        super().close()


class WorkspaceFileSystem(AbstractFileSystem):
    """fsspec file system over an agent's workspace rows (see the module docstring).

    Args:
        rows: the agent's `WorkspaceRows` (`agent.store.workspace`).
        spill_dir: where files above `spill_threshold` go (created on first use).
        spill_threshold: size in bytes above which content is spilled (default 1 MiB).

    Raises (from its methods): `FileNotFoundError`, `IsADirectoryError`, `NotADirectoryError`,
    `FileExistsError` as the built-in file system would, and `PathError` for a refused path.
    """

    protocol = "thinkws"
    root_marker = "/"
    cachable = False

    def __init__(self, rows: WorkspaceRows, spill_dir: str | Path, spill_threshold: int = SPILL_THRESHOLD,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows = rows
        self.spill_dir = Path(spill_dir)
        self.spill_threshold = int(spill_threshold)
        self._spill_prefix = hashlib.sha256(rows.agent_key.encode()).hexdigest()[:16]

    # -- paths ---------------------------------------------------------------------------------
    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]  # type: ignore[return-value]
        text = str(path)
        if text.startswith("thinkws://"):
            text = text[len("thinkws://"):]
        return paths.normalize(text or "/")

    def _row(self, path: str) -> WorkspaceRow | None:
        return self.rows.get(path)

    @staticmethod
    def _entry(row: WorkspaceRow) -> dict:
        return {"name": row.path, "size": row.size, "type": row.kind, "created": row.created_at,
                "mtime": row.modified_at, "spilled": row.spill is not None}

    # -- fsspec primitives ---------------------------------------------------------------------
    def info(self, path: str, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        if path == "/":
            return {"name": "/", "size": 0, "type": "directory"}
        row = self._row(path)
        if row is None:
            raise FileNotFoundError(path)
        return self._entry(row)

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list:
        path = self._strip_protocol(path)
        row = self._row(path) if path != "/" else None
        if path != "/" and row is None:
            raise FileNotFoundError(path)
        if row is not None and row.kind == "file":
            entries = [self._entry(row)]
        else:
            entries = [self._entry(r) for r in self.rows.children(path)]
        return entries if detail else [e["name"] for e in entries]

    def find(self, path: str, maxdepth: int | None = None, withdirs: bool = False, detail: bool = False,
             **kwargs: Any) -> Any:
        """Every file below `path` in one query (fsspec's default walks directory by directory)."""
        path = self._strip_protocol(path)
        if maxdepth is not None:
            return super().find(path, maxdepth=maxdepth, withdirs=withdirs, detail=detail, **kwargs)
        row = self._row(path) if path != "/" else None
        if row is not None and row.kind == "file":
            found = [row]
        else:
            found = self.rows.under(path, None if withdirs else "file")
            if withdirs and row is not None:
                found.insert(0, row)
        out = {r.path: self._entry(r) for r in found}
        return out if detail else sorted(out)

    def iter_files(self, path: str = "/") -> Iterator[tuple[str, int, bytes | None]]:
        """(path, size, bytes) of every file below `path`, by path: one query for the inline ones
        (spilled files are read from disk as they come). Used by the `grep` tool."""
        for row, content in self.rows.contents_under(self._strip_protocol(path)):
            yield row.path, row.size, content if content is not None else self.cat_file(row.path)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        path = self._strip_protocol(path)
        row = self._row(path) if path != "/" else None
        if path == "/" or (row is not None and row.kind == "directory"):
            raise IsADirectoryError(path)
        if row is None:
            raise FileNotFoundError(path)
        data = (self.spill_dir / row.spill).read_bytes() if row.spill else (self.rows.content(path) or b"")
        return data[start:end] if start is not None or end is not None else data

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if isinstance(value, str):
            value = value.encode()
        if path == "/":
            raise IsADirectoryError("/")
        row = self._row(path)
        if row is not None and row.kind == "directory":
            raise IsADirectoryError(path)
        if mode == "create" and row is not None:
            raise FileExistsError(path)
        self._make_parents(path)
        spill = None
        if len(value) > self.spill_threshold:
            spill = f"{self._spill_prefix}-{uuid.uuid4().hex}"
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            (self.spill_dir / spill).write_bytes(value)
        replaced = self.rows.put_file(path, None if spill else bytes(value), len(value), spill)
        self._unlink(replaced)

    def _make_parents(self, path: str) -> None:
        above = paths.ancestors(path)
        for p in above:
            row = self._row(p)
            if row is not None and row.kind == "file":
                raise NotADirectoryError(f"{p} is a file, so {path} cannot be created under it")
        if above:
            self.rows.make_dirs(above)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if path == "/":
            return
        row = self._row(path)
        if row is not None:
            raise FileExistsError(path)
        if not create_parents and paths.parent(path) != "/" and self._row(paths.parent(path)) is None:
            raise FileNotFoundError(paths.parent(path))
        self._make_parents(path)
        self.rows.make_dirs([path])

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        path = self._strip_protocol(path)
        row = self._row(path) if path != "/" else None
        if row is not None and row.kind == "file":
            raise FileExistsError(path)
        if row is not None and not exist_ok:
            raise FileExistsError(path)
        if path != "/":
            self._make_parents(path)
            self.rows.make_dirs([path])

    def rmdir(self, path: str) -> None:
        path = self._strip_protocol(path)
        row = self._row(path)
        if row is None or row.kind != "directory":
            raise FileNotFoundError(path) if row is None else NotADirectoryError(path)
        if self.rows.children(path):
            raise OSError(f"Directory not empty: {path}")
        self.rows.delete(path)

    def rm_file(self, path: str) -> None:
        path = self._strip_protocol(path)
        row = self._row(path)
        if row is None:
            raise FileNotFoundError(path)
        if row.kind == "directory":
            raise IsADirectoryError(path)
        for spill in self.rows.delete(path):
            self._unlink(spill)

    def _rm(self, path: str) -> None:
        row = self._row(self._strip_protocol(path))
        if row is not None and row.kind == "directory":
            self.rmdir(path)
        else:
            self.rm_file(path)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        """Delete a file, or a directory with `recursive=True` (one statement for the whole tree)."""
        for p in [path] if isinstance(path, str) else list(path):
            p = self._strip_protocol(p)
            if p == "/":
                if not recursive:
                    raise IsADirectoryError("/")
                for r in self.rows.children("/"):
                    self.rm(r.path, recursive=True)
                continue
            row = self._row(p)
            if row is None:
                raise FileNotFoundError(p)
            if row.kind == "directory" and not recursive:
                self.rmdir(p)
                continue
            for spill in self.rows.delete(p, recursive=True):
                self._unlink(spill)

    def _open(self, path: str, mode: str = "rb", block_size: Any = None, autocommit: bool = True,
              cache_options: Any = None, **kwargs: Any) -> Any:
        path = self._strip_protocol(path)
        if "r" in mode and "+" not in mode:
            return io.BytesIO(self.cat_file(path))
        if "a" in mode:
            return _WriteBuffer(self, path, self.cat_file(path) if self.exists(path) else b"")
        if "x" in mode and self.exists(path):
            raise FileExistsError(path)
        if "w" in mode or "x" in mode:
            self.pipe_file(path, b"")  # like the built-in open: the file exists (empty) at once
            return _WriteBuffer(self, path)
        raise ValueError(f"mode={mode!r} is not supported; use 'rb', 'wb', 'ab', 'xb' (or their text forms).")

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        self.pipe_file(path2, self.cat_file(path1))

    def created(self, path: str) -> Any:
        import datetime

        return datetime.datetime.fromtimestamp(self.info(path)["created"], datetime.UTC)

    def modified(self, path: str) -> Any:
        import datetime

        return datetime.datetime.fromtimestamp(self.info(path)["mtime"], datetime.UTC)

    def _unlink(self, spill: str | None) -> None:
        if spill:
            (self.spill_dir / spill).unlink(missing_ok=True)
