"""The workspace operations (`think_nb.workspace.ops`) that code calls: the plain operations on
each kind of file system (ours over SQLite, fsspec's memory, a `DirFileSystem` over a folder),
their errors next to the Think operations' errors, and the extension host functions, which are
these operations. (The Think operations are tested through the tools in `test_workspace.py`,
`state.*` in `test_execute.py`.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from think_nb import Think
from think_nb.extensions.host import host_functions
from think_nb.extensions.manifest import parse
from think_nb.store import AgentStore, open_database
from think_nb.workspace import PathError, WorkspaceFileSystem, ops


@pytest.fixture(params=["sqlite", "memory", "dir"])
def fs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        store = AgentStore(open_database(tmp_path / "ws.sqlite"), "T:ws", "T", "ws")
        yield WorkspaceFileSystem(store.workspace, tmp_path / "ws.files")
    elif request.param == "memory":
        memory = MemoryFileSystem(skip_instance_cache=True)
        memory.store.clear()
        memory.pseudo_dirs[:] = [""]
        yield memory
        memory.store.clear()
    else:
        (tmp_path / "root").mkdir()
        yield DirFileSystem(str(tmp_path / "root"), fsspec.filesystem("file"))


def test_plain_operations_give_values_on_every_file_system(fs: Any) -> None:
    assert ops.write_text(fs, "notes/a.md", "alpha\n") == 6  # parents created
    ops.write_text(fs, "/notes/deep/b.txt", "beta")
    ops.write_text(fs, "/top.txt", "top")
    assert ops.read_text(fs, "/notes/a.md") == "alpha\n"
    assert ops.list_paths(fs, "/notes") == ["/notes/a.md", "/notes/deep"]
    assert ops.list_paths(fs) == ["/notes", "/top.txt"]
    assert ops.glob(fs, "*.txt") == ["/notes/deep/b.txt", "/top.txt"]
    assert ops.glob(fs, "/notes/**") == ["/notes/a.md", "/notes/deep/b.txt"]
    assert ops.exists(fs, "/") and ops.exists(fs, "/notes") and not ops.exists(fs, "/nope")
    assert ops.stat(fs, "/top.txt")["type"] == "file" and ops.stat(fs, "/nope") is None  # type: ignore[index]
    assert ops.read_text(fs, "/nope", missing_ok=True) is None
    assert ops.read_text(fs, "/notes", missing_ok=True) is None  # a directory is not a file
    with pytest.raises(FileNotFoundError):
        ops.read_text(fs, "/nope")
    assert ops.remove(fs, "/top.txt") is True and ops.remove(fs, "/top.txt") is False
    assert ops.remove(fs, "/notes", recursive=True) is True and ops.list_paths(fs) == []


def test_a_refused_path_is_a_path_error_for_plain_operations_and_a_tool_error_for_thinks(fs: Any) -> None:
    for plain in (lambda: ops.read_text(fs, "/../x"), lambda: ops.write_text(fs, "~/x", "x"),
                  lambda: ops.remove(fs, "a\\b"), lambda: ops.list_paths(fs, "file:///etc"),
                  lambda: ops.exists(fs, ".."), lambda: ops.stat(fs, None)):
        with pytest.raises(PathError, match="pass"):
            plain()
    for think in (lambda: ops.read(fs, "/../x"), lambda: ops.write(fs, "~/x", "x"),
                  lambda: ops.delete(fs, "a\\b"), lambda: ops.list_dir(fs, "file:///etc")):
        with pytest.raises(ops.WorkspaceToolError, match="pass"):
            think()
    assert ops.overwrites(fs, "/../x") is False  # nothing to approve: the write refuses it


async def test_the_extension_host_functions_are_the_plain_operations(tmp_path: Path) -> None:
    agent = Think("host", db=tmp_path / "host.sqlite")
    host = host_functions(agent, parse({"name": "fs", "version": "1", "permissions": {"workspace": "read-write"}}))
    await host["write_file"]("/out/x.txt", 42)  # content is made text
    assert agent.workspace.cat("/out/x.txt") == b"42"
    assert await host["read_file"]("/out/x.txt") == "42" and await host["read_file"]("/missing") is None
    assert await host["list_files"]("/out") == ["/out/x.txt"] and await host["exists"]("/out")
    assert await host["delete_file"]("/out/x.txt") is True and await host["delete_file"]("/out/x.txt") is False
    with pytest.raises(PathError, match=re.escape("contains '..'")):
        await host["read_file"]("/../etc/passwd")
    read_only = host_functions(agent, parse({"name": "ro", "version": "1", "permissions": {"workspace": "read"}}))
    with pytest.raises(PermissionError, match=re.escape("permissions.workspace='read-write'")):
        await read_only["write_file"]("/y.txt", "y")
