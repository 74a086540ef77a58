"""Workspace paths: normalised absolute POSIX paths under `/`, and nothing outside the root.

`normalize(path)` accepts `"notes.md"`, `"/notes.md"`, `"./a//b/"` (→ `"/a/b"`) and refuses, with a
one-line `PathError` naming the fix, anything that could address outside the workspace: `..`
segments, NUL and other control characters, backslashes, Windows drives and UNC paths, `~`, URLs
(`file://...`), and paths longer than 4096 characters (Think's limit). A `..` is refused rather
than resolved, so a path always means what it says.

`confine(fs, path)` adds the check only a host-backed file system needs: for a `DirFileSystem`
over the local disk, the real path (symlinks followed) must stay inside its root.
"""

from __future__ import annotations

import os
import re
from typing import Any

from think_nb.errors import UserError

MAX_PATH = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class PathError(UserError, ValueError):
    """A workspace path that is refused (its message says why and what to pass instead)."""


def normalize(path: Any) -> str:
    """Return the canonical form of a workspace path (`"/a/b"`, root `"/"`).

    Raises:
        PathError: the path is not a string, is empty, or could escape the workspace root.
    """
    if not isinstance(path, str):
        raise PathError(f"path={path!r} is not a string; pass a string such as '/notes/todo.md'.")
    shown = repr(path if len(path) <= 80 else path[:77] + "...")
    if not path.strip():
        raise PathError("path is empty; pass a workspace path such as '/notes/todo.md'.")
    if len(path) > MAX_PATH:
        raise PathError(f"path {shown} is longer than {MAX_PATH} characters; pass a shorter path.")
    if _CONTROL.search(path):
        raise PathError(f"path {shown} contains a NUL or control character; pass a plain path such as '/notes.md'.")
    if "\\" in path:
        raise PathError(f"path {shown} contains a backslash; pass a path with '/' such as '/dir/file.txt'.")
    if path.startswith("~"):
        raise PathError(f"path {shown} names a home directory; pass a workspace path from '/' such as '/notes.md'.")
    if _SCHEME.match(path):
        raise PathError(f"path {shown} is a URL or drive path; pass a workspace path such as '/notes.md'.")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathError(f"path {shown} contains '..'; the workspace has no parent directory, pass an absolute "
                        "path such as '/dir/file.txt'.")
    return "/" + "/".join(parts)


def parent(path: str) -> str:
    """The parent of a normalised path (`"/"` for top-level entries and the root)."""
    return path.rsplit("/", 1)[0] or "/"


def ancestors(path: str) -> list[str]:
    """The directories above a normalised path, outermost first, root excluded (`/a/b/c` → `/a`, `/a/b`)."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def confine(fs: Any, path: str) -> str:
    """`path` (normalised) as `fs` spells it, refusing a symlink that leads outside a local root.

    Our SQLite and fsspec's memory file systems take `/a/b`; a `DirFileSystem` takes `a/b` relative
    to its root, and when it sits on the local disk the real path must stay under that root.

    Raises:
        PathError: the real path of a local `DirFileSystem` entry is outside its root.
    """
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    if not isinstance(fs, DirFileSystem):
        return path
    relative = path.lstrip("/")
    if isinstance(fs.fs, LocalFileSystem):
        root = os.path.realpath(fs.path)
        real = os.path.realpath(os.path.join(root, relative))
        if real != root and not real.startswith(root + os.sep):
            raise PathError(f"path {path!r} leads outside the workspace (a symlink); pass a path inside it.")
    return relative
