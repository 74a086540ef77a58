"""The workspace: an agent's virtual file system and the tools the model uses on it.

- `paths.py`: path normalisation and escape refusal (`normalize`, `PathError`).
- `fs.py`: `WorkspaceFileSystem`, fsspec over the `think_workspace_files` table (spill to disk).
- `ops.py`: the file operations (Think's `read`, `write`, `edit`, `list`, `find`, `grep`, `delete`,
  and plain `read_text`, `write_text`, `remove`, `list_paths`, `glob`, `exists`, `stat`) over any
  fsspec file system; the tools, `execute`'s `state.*` and extensions' host functions call them.
- `tools.py`: Think's workspace tools over those operations: `workspace_tools(fs)`, `read_tool(fs)`, ...
- `execute.py`: the `execute` tool (model-written Python in a pydantic-monty sandbox).
- `fetch.py`: the `fetch` tool (GET only, allowlisted, SSRF-guarded, size-capped).
"""

from think_nb.workspace.execute import execute_tool
from think_nb.workspace.fetch import fetch_tool
from think_nb.workspace.fs import WorkspaceFileSystem
from think_nb.workspace.paths import PathError, normalize
from think_nb.workspace.tools import (
    delete_tool,
    edit_tool,
    find_tool,
    grep_tool,
    list_tool,
    read_tool,
    workspace_tools,
    write_tool,
)

__all__ = ["PathError", "WorkspaceFileSystem", "delete_tool", "edit_tool", "execute_tool", "fetch_tool", "find_tool",
           "grep_tool", "list_tool", "normalize", "read_tool", "workspace_tools", "write_tool"]
