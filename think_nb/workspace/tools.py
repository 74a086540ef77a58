"""Think's workspace tools over any fsspec file system (`packages/think/src/tools/workspace.ts`).

    workspace_tools(fs)                    # {"read": Tool, "write": ..., "edit", "list", "find", "grep", "delete"}
    workspace_tools(fs, approval=True)     # delete, and write over an existing file, need approval
    read_tool(fs), write_tool(fs), ...     # one at a time (Think's createReadTool, ...)

`fs` is `agent.workspace` or any fsspec file system (`fsspec.filesystem("memory")`, a
`DirFileSystem` over a local folder, a bucket). Paths the model passes are normalised and
confined (`think_nb.workspace.paths`). Outputs are Think's shapes (anchor §6.2); a failure
(missing file, non-unique `old_string`, invalid regex, refused path, ...) raises
`WorkspaceToolError` with Think's message, which reaches the model as the call's error text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from think_nb.tools.tool import Tool, from_function
from think_nb.workspace import paths

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_READ_BYTES = 3_500_000
MAX_MATCHES = 200
MAX_FIND = 200
GREP_MAX_FILE_BYTES = 1024 * 1024
TOOL_NAMES = ("read", "write", "edit", "list", "find", "grep", "delete")

_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
          (b"%PDF", "application/pdf"))


class WorkspaceToolError(Exception):
    """A workspace tool could not do what was asked; the text goes back to the model."""


def _path(fs: Any, path: str) -> tuple[str, str]:
    """(normalised workspace path, the path as `fs` spells it)."""
    try:
        norm = paths.normalize(path)
        return norm, paths.confine(fs, norm)
    except paths.PathError as exc:
        raise WorkspaceToolError(str(exc)) from None


def _info(fs: Any, fs_path: str) -> dict | None:
    try:
        return fs.info(fs_path)
    except FileNotFoundError:
        return None


def _text(data: bytes) -> str | None:
    """The text of `data`, or None when it looks binary (NUL, or ≥1% replacement characters in 4 KB)."""
    head = data[:4096]
    if b"\x00" in head:
        return None
    sample = head.decode("utf-8", errors="replace")
    if sample and sample.count("\ufffd") / len(sample) >= 0.01:
        return None
    return data.decode("utf-8", errors="replace")


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
        norm, p = _path(fs, path)
        info = _info(fs, p)
        if info is None:
            raise WorkspaceToolError(f"File not found: {norm}")
        if info["type"] == "directory":
            raise WorkspaceToolError(f"{norm} is a directory, not a file")
        size = int(info.get("size") or 0)
        name = norm.rsplit("/", 1)[-1]
        if size > MAX_READ_BYTES:
            raise WorkspaceToolError(f"{norm} is {size} bytes, more than the {MAX_READ_BYTES} bytes read returns; "
                                     "use grep to find what you need in it")
        data = fs.cat_file(p)
        for magic, media in _MAGIC:
            if data.startswith(magic):
                kind = "file" if media == "application/pdf" else "image"
                return {"kind": kind, "path": norm, "name": name, "mediaType": media, "sizeBytes": size}
        text = _text(data)
        if text is None:
            return {"kind": "binary", "path": norm, "name": name, "mediaType": "application/octet-stream",
                    "sizeBytes": size, "unsupported": True}
        if (offset is not None and offset < 1) or (limit is not None and limit < 1):
            raise WorkspaceToolError("offset and limit must be at least 1")
        lines = text.splitlines()
        start = (offset or 1) - 1
        chosen = lines[start:start + limit] if limit else lines[start:]
        shown = chosen[:MAX_LINES]
        body = [f"{start + i + 1}\t{line[:MAX_LINE_CHARS] + '... (truncated)' if len(line) > MAX_LINE_CHARS else line}"
                for i, line in enumerate(shown)]
        if len(chosen) > MAX_LINES:
            body.append(f"... ({len(chosen) - MAX_LINES} more lines truncated)")
        out: dict = {"path": norm, "content": "\n".join(body), "totalLines": len(lines)}
        if offset is not None or limit is not None or len(chosen) > MAX_LINES:
            out.update(fromLine=start + 1, toLine=start + len(shown))
        return out

    return from_function(read)


def write_tool(fs: Any, *, approval: bool = False) -> Tool:
    """Think's `write`: create or overwrite a file (parents created). With `approval`, overwriting an
    existing file needs the user's approval."""

    def write(path: str, content: str) -> dict:
        """Create or overwrite a text file in the workspace (parent directories are created).

        Args:
            path: absolute workspace path, e.g. /notes/todo.md
            content: the whole new content of the file
        """
        norm, p = _path(fs, path)
        info = _info(fs, p)
        if info is not None and info["type"] == "directory":
            raise WorkspaceToolError(f"{norm} is a directory, not a file")
        data = content.encode("utf-8")
        _pipe(fs, p, data)
        return {"path": norm, "bytesWritten": len(data), "lines": len(content.splitlines())}

    def overwrites(arguments: dict) -> bool:
        try:
            _, p = _path(fs, arguments.get("path", ""))
        except WorkspaceToolError:
            return False  # refused when it runs; nothing to approve
        return _info(fs, p) is not None

    return from_function(write, needs_approval=overwrites if approval else False)


def _pipe(fs: Any, p: str, data: bytes) -> None:
    parent = p.rsplit("/", 1)[0]
    if parent and parent != p and not fs.exists(parent):
        fs.makedirs(parent, exist_ok=True)
    fs.pipe_file(p, data)


def _fuzzy(text: str) -> tuple[str, list[int]]:
    """`text` with CRLF→LF and runs of spaces/tabs collapsed, and each kept char's original offset."""
    out: list[str] = []
    where: list[int] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\r" and text[i + 1:i + 2] == "\n":
            i += 1
            continue
        if ch in " \t":
            j = i
            while j < len(text) and text[j] in " \t":
                j += 1
            out.append(" ")
            where.append(i)
            i = j
            continue
        out.append(ch)
        where.append(i)
        i += 1
    where.append(len(text))
    return "".join(out), where


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
        norm, p = _path(fs, path)
        info = _info(fs, p)
        if old_string == "":
            if info is not None:
                raise WorkspaceToolError(f"{norm} already exists; use the write tool to overwrite it")
            _pipe(fs, p, new_string.encode("utf-8"))
            return {"path": norm, "created": True, "lines": len(new_string.splitlines())}
        if info is None:
            raise WorkspaceToolError(f"File not found: {norm}")
        if info["type"] == "directory":
            raise WorkspaceToolError(f"{norm} is a directory, not a file")
        text = _text(fs.cat_file(p))
        if text is None:
            raise WorkspaceToolError(f"{norm} is a binary file; edit works on text files")
        count = text.count(old_string)
        fuzzy = False
        if count > 1 and not replace_all:
            raise WorkspaceToolError(f"old_string appears {count} times in {norm}; include more context to make "
                                     "it unique, or pass replace_all=true")
        if count >= 1:
            updated = text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
        else:
            haystack, where = _fuzzy(text)
            needle = _fuzzy(old_string)[0]
            hits = [m.start() for m in re.finditer(re.escape(needle), haystack)] if needle.strip() else []
            if not hits:
                raise WorkspaceToolError(f"old_string not found in {norm}. Read the file first and copy the text "
                                         "exactly")
            if len(hits) > 1 and not replace_all:
                raise WorkspaceToolError(f"old_string is ambiguous in {norm} ({len(hits)} whitespace-insensitive "
                                         "matches); include more context")
            pieces, last = [], 0
            for h in hits:
                begin, end = where[h], where[h + len(needle)]
                pieces += [text[last:begin], new_string]
                last = end
            updated = "".join([*pieces, text[last:]])
            fuzzy, count = True, len(hits)
        _pipe(fs, p, updated.encode("utf-8"))
        out: dict = {"path": norm, "replaced": True, "lines": len(updated.splitlines())}
        if replace_all:
            out["occurrences"] = count
        if fuzzy:
            out["fuzzyMatch"] = True
        return out

    return from_function(edit)


def list_tool(fs: Any) -> Tool:
    """Think's `list`: a directory's entries, `name/` for directories and `name (size)` for files."""

    def list(path: str = "/", limit: int = 200, offset: int = 0) -> dict:
        """List a workspace directory.

        Args:
            path: absolute directory path (default /)
            limit: at most this many entries (1-1000)
            offset: skip this many entries
        """
        norm, p = _path(fs, path)
        if not 1 <= limit <= 1000 or offset < 0:
            raise WorkspaceToolError("limit must be 1-1000 and offset at least 0")
        info = _info(fs, p) if norm != "/" else {"type": "directory"}
        if info is None:
            raise WorkspaceToolError(f"Directory not found: {norm}")
        if info["type"] != "directory":
            raise WorkspaceToolError(f"{norm} is a file, not a directory")
        entries = sorted(fs.ls(p, detail=True), key=lambda e: e["name"])
        names = [f"{e['name'].rstrip('/').rsplit('/', 1)[-1]}/" if e["type"] == "directory"
                 else f"{e['name'].rsplit('/', 1)[-1]} ({e.get('size') or 0})" for e in entries]
        page = names[offset:offset + limit]
        return {"path": norm, "count": len(names), "entries": page}

    return from_function(list)


def _all_files(fs: Any, root: str) -> list[str]:
    """Workspace paths of every file below `root` (normalised, leading '/')."""
    found = fs.find(root if root else "/")
    return sorted("/" + str(f).lstrip("/") for f in found)


def _root(fs: Any) -> str:
    return paths.confine(fs, "/") or ""


def find_tool(fs: Any) -> Tool:
    """Think's `find`: files matching a glob (`*`, `**`, `?`), the first 200."""

    def find(pattern: str) -> dict:
        """Find workspace files by glob pattern, e.g. **/*.md or /notes/*.txt.

        Args:
            pattern: glob pattern; * matches within a directory, ** across directories, ? one character
        """
        if not pattern.strip():
            raise WorkspaceToolError("pattern is empty; pass a glob such as **/*.md")
        matcher = _glob(pattern)
        files = [f for f in _all_files(fs, _root(fs)) if matcher(f)]
        out: dict = {"pattern": pattern, "count": len(files), "files": files[:MAX_FIND]}
        if len(files) > MAX_FIND:
            out.update(truncated=True, showing=MAX_FIND)
        return out

    return from_function(find)


def _glob(pattern: str) -> Callable[[str], bool]:
    """A matcher of workspace paths for a glob; a pattern without '/' matches at any depth."""
    pat = pattern if pattern.startswith("/") else ("/**/" + pattern if "/" not in pattern.rstrip("/")
                                                   else "/" + pattern)
    regex = ""
    i = 0
    while i < len(pat):
        if pat.startswith("/**/", i):
            regex += "/(?:.*/)?"
            i += 4
        elif pat.startswith("**", i):
            regex += ".*"
            i += 2
        elif pat[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pat[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(pat[i])
            i += 1
    compiled = re.compile(regex + r"\Z")
    return lambda path: compiled.match(path) is not None


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
        if not query:
            raise WorkspaceToolError("query is empty; pass a regular expression or text to search for")
        if not 0 <= contextLines <= 10:
            raise WorkspaceToolError("contextLines must be 0-10")
        try:
            regex = re.compile(re.escape(query) if fixedString else query, 0 if caseSensitive else re.IGNORECASE)
        except re.error as exc:
            raise WorkspaceToolError(f"Invalid regular expression {query!r}: {exc}") from None
        matcher = _glob(include or "**/*")
        matches: list[Any] = []
        searched = with_matches = skipped = 0
        truncated = False
        for path, size, read in _files_with_content(fs):
            if not matcher(path):
                continue
            if size > GREP_MAX_FILE_BYTES:
                skipped += 1
                continue
            text = _text(read())
            if text is None:
                continue
            searched += 1
            if regex.search(text) is None:
                continue
            lines = text.splitlines()
            hit = False
            for n, line in enumerate(lines, 1):
                if regex.search(line) is None:
                    continue
                hit = True
                if contextLines:
                    lo, hi = max(1, n - contextLines), min(len(lines), n + contextLines)
                    ctx = [f"{'>' if k == n else ' '} {k}: {lines[k - 1]}" for k in range(lo, hi + 1)]
                    matches.append({"file": path, "line": n, "context": "\n".join(ctx)})
                else:
                    matches.append(f"{path}:{n}: {line[:MAX_LINE_CHARS]}")
                if len(matches) >= MAX_MATCHES:
                    truncated = True
                    break
            with_matches += hit
            if truncated:
                break
        out: dict = {"query": query, "filesSearched": searched, "filesWithMatches": with_matches,
                     "totalMatches": len(matches), "matches": matches}
        if truncated:
            out["truncated"] = True
        if skipped:
            out.update(filesSkipped=skipped, note=f"{skipped} files over {GREP_MAX_FILE_BYTES} bytes were skipped")
        return out

    return from_function(grep)


def _files_with_content(fs: Any) -> Iterator[tuple[str, int, Callable[[], bytes]]]:
    """(workspace path, size, a reader of its bytes) for every file, by path: one query on our own
    file system (`iter_files`), `find` + `cat_file` per file on any other."""
    if hasattr(fs, "iter_files"):
        for path, size, data in fs.iter_files("/"):
            yield path, size, functools.partial(bytes, data)
        return
    detail = fs.find(_root(fs) or "/", detail=True)
    for name, info in sorted(detail.items()):
        path = "/" + str(name).lstrip("/")
        yield path, int(info.get("size") or 0), functools.partial(_cat, fs, path)


def _cat(fs: Any, path: str) -> bytes:
    return fs.cat_file(paths.confine(fs, path))


def delete_tool(fs: Any, *, approval: bool = False) -> Tool:
    """Think's `delete`: remove a file or (recursive) a directory; a missing path is not an error."""

    def delete(path: str, recursive: bool = False) -> dict:
        """Delete a workspace file, or a directory with recursive=true. Deleting a missing path is not an error.

        Args:
            path: absolute workspace path
            recursive: delete a directory and everything in it
        """
        norm, p = _path(fs, path)
        if norm == "/":
            raise WorkspaceToolError("the workspace root cannot be deleted; delete the entries in it")
        info = _info(fs, p)
        if info is None:
            return {"deleted": norm}
        if info["type"] == "directory" and not recursive and fs.ls(p, detail=False):
            raise WorkspaceToolError(f"{norm} is a directory that is not empty; pass recursive=true to delete it")
        fs.rm(p, recursive=info["type"] == "directory")
        return {"deleted": norm}

    return from_function(delete, needs_approval=approval)


def workspace_tools(fs: Any, *, approval: bool = False) -> dict[str, Tool]:
    """Think's `createWorkspaceTools(ws)` (without `bash`): `{name: Tool}` for the seven tools.

    Args:
        fs: any fsspec file system (`agent.workspace`, memory, a `DirFileSystem`, ...).
        approval: True makes `delete`, and `write` over an existing file, need the user's approval.
    """
    return {"read": read_tool(fs), "write": write_tool(fs, approval=approval), "edit": edit_tool(fs),
            "list": list_tool(fs), "find": find_tool(fs), "grep": grep_tool(fs),
            "delete": delete_tool(fs, approval=approval)}
