"""Think's workspace tools over any fsspec file system (`packages/think/src/tools/workspace.ts`).

    workspace_tools(fs)                    # {"read": Tool, "write": ..., "edit", "list", "find", "grep", "delete"}
    workspace_tools(fs, approval=True)     # delete, and write over an existing file, need approval
    read_tool(fs), write_tool(fs), ...     # one at a time (Think's createReadTool, ...)

`fs` is `agent.workspace` or any fsspec file system (`fsspec.filesystem("memory")`, a
`DirFileSystem` over a local folder, a bucket), or a `Deferred` one, made on the first call (the
agent's default workspace: a turn that calls no workspace tool never imports fsspec). Paths the
model passes are normalised and confined (`think_nb.workspace.paths`). Outputs are Think's shapes
(anchor §6.2); a failure (missing file, non-unique `old_string`, invalid regex, refused path, ...)
raises `WorkspaceToolError` with Think's message, which reaches the model as the call's error text.

This module is the tools' names, parameters and descriptions (their JSON schemas come from the
signatures and docstrings below, written out in `think_nb.workspace.declarations` so that offering
the tools builds no pydantic model: `think_nb.tools.tool.declared`); what each one does is
`think_nb.workspace.ops`.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

from think_nb.tools.tool import Tool, declared
from think_nb.workspace import ops
from think_nb.workspace.declarations import DECLARED
from think_nb.workspace.ops import WorkspaceToolError

__all__ = ["Deferred", "WorkspaceToolError", "delete_tool", "edit_tool", "find_tool", "grep_tool", "list_tool",
           "read_tool", "workspace_tools", "write_tool"]


class Deferred:
    """A file system made on first use: `Deferred(lambda: agent.workspace)`. `get()` returns it."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.get = make


def resolve(fs: Any) -> Any:
    """The file system `fs` stands for (`fs` itself, or what a `Deferred` makes)."""
    return fs.get() if isinstance(fs, Deferred) else fs


def read_tool(fs: Any) -> Tool:
    """Think's `read`: numbered lines of a text file, a descriptor for an image/PDF/binary file."""

    def read(path: str, offset: int | None = None, limit: int | None = None) -> dict:
        """Read a file from the workspace. Returns lines as `N<TAB>text`, at most 2000 lines of at most
        2000 characters each; says what was truncated. Use offset/limit to page through long files.

        Args:
            path: absolute workspace path, e.g. /notes/todo.md
            offset: first line to return (1-based)
            limit: number of lines to return
        """
        found = ops.read(resolve(fs), path, offset, limit)
        return with_media(resolve(fs), found)

    return _declare(read)


MAX_MEDIA_READ = 3_500_000
"""Largest image or PDF `read` hands the model (bytes; Think's 3.5 MB): larger ones stay a descriptor."""


def with_media(fs: Any, found: dict) -> dict:
    """Think's `read` of an image or a PDF as the model gets it (its `toModelOutput`): the descriptor
    as text, then the file as image or file content (`think_nb.messages.media`); anything else as is."""
    if found.get("kind") not in ("image", "file") or found.get("sizeBytes", 0) > MAX_MEDIA_READ:
        return found
    from think_nb import jsonsafe

    data = fs.cat_file(ops._resolve(fs, found["path"])[1])
    kind = "image-data" if found["kind"] == "image" else "file-data"
    item = {"type": kind, "data": base64.b64encode(data).decode("ascii"), "mediaType": found["mediaType"]}
    return {"type": "content", "value": [{"type": "text", "text": jsonsafe.dumps(found)}, item]}


def write_tool(fs: Any, *, approval: bool = False) -> Tool:
    """Think's `write`: create or overwrite a file (parents created). With `approval`, overwriting an
    existing file needs the user's approval."""

    def write(path: str, content: str) -> dict:
        """Create or overwrite a text file in the workspace (parent directories are created).

        Args:
            path: absolute workspace path, e.g. /notes/todo.md
            content: the whole new content of the file
        """
        return ops.write(resolve(fs), path, content)

    def overwrites(arguments: dict) -> bool:
        return ops.overwrites(resolve(fs), arguments.get("path", ""))

    return _declare(write, needs_approval=overwrites if approval else False)


def edit_tool(fs: Any) -> Tool:
    """Think's `edit`: replace one exact occurrence (or all), fuzzy on whitespace when exact fails."""

    def edit(path: str, old_string: str, new_string: str, replace_all: bool = False) -> dict:
        """Replace text in a workspace file. old_string must occur exactly once (include more context
        to make it unique) unless replace_all is true. An empty old_string creates a new file.

        Args:
            path: absolute workspace path
            old_string: the exact text to replace (read the file first)
            new_string: the replacement text
            replace_all: replace every occurrence instead of exactly one
        """
        return ops.edit(resolve(fs), path, old_string, new_string, replace_all)

    return _declare(edit)


def list_tool(fs: Any) -> Tool:
    """Think's `list`: a directory's entries, `name/` for directories and `name (size)` for files."""

    def list(path: str = "/", limit: int = 200, offset: int = 0) -> dict:
        """List a workspace directory.

        Args:
            path: absolute directory path (default /)
            limit: at most this many entries (1-1000)
            offset: skip this many entries
        """
        return ops.list_dir(resolve(fs), path, limit, offset)

    return _declare(list)


def find_tool(fs: Any) -> Tool:
    """Think's `find`: files matching a glob (`*`, `**`, `?`), the first 200."""

    def find(pattern: str) -> dict:
        """Find workspace files by glob pattern, e.g. **/*.md or /notes/*.txt.

        Args:
            pattern: glob pattern; * matches within a directory, ** across directories, ? one character
        """
        return ops.find(resolve(fs), pattern)

    return _declare(find)


def grep_tool(fs: Any) -> Tool:
    """Think's `grep`: a regex (or fixed string) over the workspace's files, at most 200 matches."""

    def grep(query: str, include: str = "**/*", fixedString: bool = False,
             caseSensitive: bool = False, contextLines: int = 0) -> dict:
        """Search file contents in the workspace, line by line. Returns "file:line: text" matches
        (at most 200); files over 1 MiB are skipped.

        Args:
            query: regular expression (or plain text with fixedString)
            include: glob of files to search (default **/*)
            fixedString: treat query as plain text
            caseSensitive: match case (default false)
            contextLines: lines of context around each match (0-10)
        """
        return ops.grep(resolve(fs), query, include, fixedString, caseSensitive, contextLines)

    return _declare(grep)


def delete_tool(fs: Any, *, approval: bool = False) -> Tool:
    """Think's `delete`: remove a file or (recursive) a directory; a missing path is not an error."""

    def delete(path: str, recursive: bool = False) -> dict:
        """Delete a workspace file, or a directory with recursive=true. Deleting a missing path is not an error.

        Args:
            path: absolute workspace path
            recursive: delete a directory and everything in it
        """
        return ops.delete(resolve(fs), path, recursive)

    return _declare(delete, needs_approval=approval)


def _declare(fn: Callable, needs_approval: bool | Callable[[dict], Any] = False) -> Tool:
    """The tool for `fn` with its declared description and schema (`DECLARED`, a copy)."""
    spec = copy.deepcopy(DECLARED[fn.__name__])
    return declared(fn, description=spec["description"], parameters=spec["parameters"], needs_approval=needs_approval)


def workspace_tools(fs: Any, *, approval: bool = False) -> dict[str, Tool]:
    """Think's `createWorkspaceTools(ws)` (without `bash`): `{name: Tool}` for the seven tools.

    Args:
        fs: any fsspec file system (`agent.workspace`, memory, a `DirFileSystem`, ...).
        approval: True makes `delete`, and `write` over an existing file, need the user's approval.
    """
    return {"read": read_tool(fs), "write": write_tool(fs, approval=approval), "edit": edit_tool(fs),
            "list": list_tool(fs), "find": find_tool(fs), "grep": grep_tool(fs),
            "delete": delete_tool(fs, approval=approval)}
