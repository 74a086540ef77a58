"""The workspace: an agent's virtual file system and the tools the model uses on it.

- `paths.py`: path normalisation and escape refusal (`normalize`, `PathError`).
- `fs.py`: `WorkspaceFileSystem`, fsspec over the `think_workspace_files` table (spill to disk).
- `ops.py`: the file operations (Think's `read`, `write`, `edit`, `list`, `find`, `grep`, `delete`,
  and plain `read_text`, `write_text`, `remove`, `list_paths`, `glob`, `exists`, `stat`) over any
  fsspec file system; the tools, `execute`'s `state.*` and extensions' host functions call them.
- `tools.py`: Think's workspace tools over those operations: `workspace_tools(fs)`, `read_tool(fs)`, ...
- `execute.py`: the `execute` tool (model-written Python in a pydantic-monty sandbox).
- `fetch.py`: the `fetch` tool (GET only, allowlisted, SSRF-guarded, size-capped).

Importing this package imports none of them: each name below is imported on first use (PEP 562),
so an agent that is offered the workspace tools but never calls one never loads fsspec or httpx.
"""

from think_nb.lazy import attach as _attach
from think_nb.lazy import listing as _listing

_WHERE = {"execute_tool": ".execute", "fetch_tool": ".fetch", "WorkspaceFileSystem": ".fs", "PathError": ".paths",
          "normalize": ".paths", **dict.fromkeys(("delete_tool", "edit_tool", "find_tool", "grep_tool", "list_tool",
                                                  "read_tool", "workspace_tools", "write_tool"), ".tools")}

__all__ = ["PathError", "WorkspaceFileSystem", "delete_tool", "edit_tool", "execute_tool", "fetch_tool", "find_tool",
           "grep_tool", "list_tool", "normalize", "read_tool", "workspace_tools", "write_tool"]


_SUBMODULES = ("execute", "fetch", "fs", "frame", "ops", "paths", "patterns", "tools")
"""`import think_nb.workspace as w; w.ops` imports `ops`, as before the names were lazy."""

__getattr__ = _attach(__name__, _WHERE, _SUBMODULES)


def __dir__() -> list[str]:
    return _listing(__name__, _WHERE, _SUBMODULES)
