"""Workspace file operations over any fsspec file system: the one implementation behind the
model's workspace tools (`tools.py`), the `execute` sandbox's `state.*` (`execute.py`) and an
extension's host functions (`think_nb.extensions.host`).

    read(fs, "/notes.md", offset=1, limit=50)     # {"path", "content": "1\\t...", "totalLines", ...}
    write(fs, path, content), edit(fs, path, old, new, replace_all=False), delete(fs, path)
    list_dir(fs, "/notes"), find(fs, "**/*.md"), grep(fs, "todo", include="**/*.md")
    read_text(fs, path), write_text(fs, path, text), remove(fs, path)     # plain values
    list_paths(fs, "/notes"), glob(fs, "**/*.md"), exists(fs, path), stat(fs, path)

`fs` is `agent.workspace` or any fsspec file system (memory, a `DirFileSystem` over a folder, a
bucket). Every path goes through `resolve` (`paths.normalize` + `paths.confine`): `/`-rooted,
nothing outside the root. Two kinds of operation:

- Think's (`read`, `write`, `edit`, `list_dir`, `find`, `grep`, `delete`): Think's output shapes,
  limits (`MAX_*`) and messages (`packages/think/src/tools/workspace.ts`); every failure, a
  refused path included, raises `WorkspaceToolError` with that message.
- plain (`read_text`, `write_text`, `remove`, `list_paths`, `glob`, `exists`, `stat`): values
  for code (`state.*`, extension host functions), no limits; a refused path raises `PathError`,
  a missing file the file system's own error (`FileNotFoundError`, ...).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from think_nb.workspace import paths
from think_nb.workspace.patterns import PatternError, compile_pattern, escape

MAX_LINES = 2000
"""Lines `read` returns at most (then it says how many more there are)."""
MAX_LINE_CHARS = 2000
"""Characters of one line `read` and `grep` show (then `... (truncated)` / cut)."""
MAX_READ_BYTES = 3_500_000
"""Bytes above which `read` refuses a file (use `grep`)."""
MAX_MATCHES = 200
"""Matches `grep` returns at most (then `truncated`)."""
MAX_FIND = 200
"""Files `find` lists at most (then `truncated`, `showing`)."""
GREP_MAX_FILE_BYTES = 1024 * 1024
"""Files larger than this are skipped by `grep` (counted in `filesSkipped`)."""

_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
          (b"%PDF", "application/pdf"))


class WorkspaceToolError(Exception):
    """A Think workspace operation could not do what was asked; the text (Think's message) goes
    back to the model as the tool call's error, or to the code as the exception's text."""


# -- paths and entries ---------------------------------------------------------------------------
def resolve(fs: Any, path: Any) -> tuple[str, str]:
    """(the normalised workspace path `"/a/b"`, the same path as `fs` spells it).

    Raises:
        PathError: the path could leave the workspace (see `think_nb.workspace.paths`).
    """
    norm = paths.normalize(path)
    return norm, paths.confine(fs, norm)


def _resolve(fs: Any, path: Any) -> tuple[str, str]:
    """`resolve` for Think's operations: a refused path is a `WorkspaceToolError`."""
    try:
        return resolve(fs, path)
    except paths.PathError as exc:
        raise WorkspaceToolError(str(exc)) from None


def _info(fs: Any, fs_path: str) -> dict | None:
    try:
        return fs.info(fs_path)
    except FileNotFoundError:
        return None


def stat(fs: Any, path: Any) -> dict | None:
    """fsspec's `info` of `path` (`{"name", "size", "type": "file" | "directory", ...}`), None
    when nothing is there. Raises `PathError` for a refused path."""
    return _info(fs, resolve(fs, path)[1])


def exists(fs: Any, path: Any) -> bool:
    """True when a file or directory is at `path` (the root always is). Raises `PathError`."""
    norm, p = resolve(fs, path)
    return norm == "/" or bool(fs.exists(p))


def _text(data: bytes) -> str | None:
    """The text of `data`, or None when it looks binary (NUL, or ≥1% replacement characters in 4 KB)."""
    head = data[:4096]
    if b"\x00" in head:
        return None
    sample = head.decode("utf-8", errors="replace")
    if sample and sample.count("\ufffd") / len(sample) >= 0.01:
        return None
    return data.decode("utf-8", errors="replace")


def _pipe(fs: Any, p: str, data: bytes) -> None:
    """Store `data` at `p` (as `fs` spells it), creating its parent directories."""
    parent = p.rsplit("/", 1)[0]
    if parent and parent != p and not fs.exists(parent):
        fs.makedirs(parent, exist_ok=True)
    fs.pipe_file(p, data)


# -- plain operations ----------------------------------------------------------------------------
def read_text(fs: Any, path: Any, *, missing_ok: bool = False) -> str | None:
    """The whole file as text (UTF-8, undecodable bytes replaced). With `missing_ok`, None when
    `path` is not a file (missing or a directory).

    Raises:
        PathError: a refused path. FileNotFoundError, IsADirectoryError (as `fs` raises them):
            without `missing_ok`, nothing readable at `path`.
    """
    _, p = resolve(fs, path)
    if missing_ok and not fs.isfile(p):
        return None
    return fs.cat_file(p).decode("utf-8", errors="replace")


def write_text(fs: Any, path: Any, text: str) -> int:
    """Create or overwrite the file at `path` with `text` (UTF-8; parents created); returns the
    bytes written. Raises `PathError`, or what `fs` raises (e.g. `IsADirectoryError`)."""
    _, p = resolve(fs, path)
    data = text.encode("utf-8")
    _pipe(fs, p, data)
    return len(data)


def remove(fs: Any, path: Any, *, recursive: bool = False) -> bool:
    """Delete the file (or, `recursive`, the directory) at `path`; False when nothing was there.
    Raises `PathError`, or what `fs` raises (e.g. a directory that is not empty)."""
    _, p = resolve(fs, path)
    if not fs.exists(p):
        return False
    fs.rm(p, recursive=recursive)
    return True


def list_paths(fs: Any, path: Any = "/") -> list[str]:
    """The workspace paths of the entries of directory `path`, sorted (`["/notes/a.md", ...]`).
    Raises `PathError`, or `FileNotFoundError` (as `fs` raises it) for a missing directory."""
    _, p = resolve(fs, path)
    return sorted("/" + str(e).lstrip("/") for e in fs.ls(p if p else "/", detail=False))


def glob(fs: Any, pattern: str) -> list[str]:
    """Every file matching the glob `pattern`, sorted (see `find` for the pattern; no limit)."""
    match = _glob(str(pattern))
    return [f for f in _all_files(fs) if match(f)]


def _all_files(fs: Any) -> list[str]:
    """Workspace paths of every file (normalised, leading '/')."""
    return sorted("/" + str(f).lstrip("/") for f in fs.find(_root(fs) or "/"))


def _root(fs: Any) -> str:
    return paths.confine(fs, "/") or ""


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
            regex += escape(pat[i])
            i += 1
    try:
        compiled = compile_pattern(regex)
    except PatternError as exc:
        raise WorkspaceToolError(f"Invalid glob {pattern!r}: {exc}") from None
    return lambda path: compiled.fullmatch(path) is not None


# -- Think's operations --------------------------------------------------------------------------
def read(fs: Any, path: Any, offset: int | None = None, limit: int | None = None) -> dict:
    """Think's `read`: `{"path", "content": "N<TAB>line\\n...", "totalLines"}` (+ `fromLine`,
    `toLine` when paged or cut at `MAX_LINES`); for an image/PDF/binary file a descriptor
    `{"kind", "path", "name", "mediaType", "sizeBytes"}`. `offset` is the first line (1-based),
    `limit` the number of lines. Raises `WorkspaceToolError`."""
    norm, p = _resolve(fs, path)
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


def write(fs: Any, path: Any, content: str) -> dict:
    """Think's `write`: create or overwrite a text file (parents created); `{"path",
    "bytesWritten", "lines"}`. Raises `WorkspaceToolError` (a directory is there, a refused path)."""
    norm, p = _resolve(fs, path)
    info = _info(fs, p)
    if info is not None and info["type"] == "directory":
        raise WorkspaceToolError(f"{norm} is a directory, not a file")
    data = content.encode("utf-8")
    _pipe(fs, p, data)
    return {"path": norm, "bytesWritten": len(data), "lines": len(content.splitlines())}


def overwrites(fs: Any, path: Any) -> bool:
    """True when `write` to `path` would replace something (False for a refused path: nothing
    to approve, the write itself refuses it)."""
    try:
        return stat(fs, path) is not None
    except paths.PathError:
        return False


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


def edit(fs: Any, path: Any, old_string: str, new_string: str, replace_all: bool = False) -> dict:
    """Think's `edit`: replace the one exact occurrence of `old_string` (every one with
    `replace_all`), else the whitespace-insensitive match (`fuzzyMatch`); an empty `old_string`
    creates a new file. `{"path", "replaced" | "created": True, "lines"}` (+ `occurrences` with
    `replace_all`). Raises `WorkspaceToolError` (not found, not unique, binary, directory, ...)."""
    norm, p = _resolve(fs, path)
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


def list_dir(fs: Any, path: Any = "/", limit: int = 200, offset: int = 0) -> dict:
    """Think's `list`: `{"path", "count", "entries": ["dir/", "file.md (12)", ...]}`, by name,
    `limit` (1-1000) entries from `offset`. Raises `WorkspaceToolError`."""
    norm, p = _resolve(fs, path)
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
    return {"path": norm, "count": len(names), "entries": names[offset:offset + limit]}


def find(fs: Any, pattern: str) -> dict:
    """Think's `find`: files matching the glob (`*` within a directory, `**` across, `?` one
    character; a pattern without '/' matches at any depth): `{"pattern", "count", "files"}`, the
    first `MAX_FIND` (+ `truncated`, `showing`). Raises `WorkspaceToolError` for an empty pattern."""
    if not pattern.strip():
        raise WorkspaceToolError("pattern is empty; pass a glob such as **/*.md")
    files = glob(fs, pattern)
    out: dict = {"pattern": pattern, "count": len(files), "files": files[:MAX_FIND]}
    if len(files) > MAX_FIND:
        out.update(truncated=True, showing=MAX_FIND)
    return out


def grep(fs: Any, query: str, include: str = "**/*", fixed_string: bool = False, case_sensitive: bool = False,
         context_lines: int = 0) -> dict:
    """Think's `grep`: the lines matching a regex (or a fixed string) in the files matching
    `include`, `"file:line: text"` each (with `context_lines` 0-10: `{"file", "line",
    "context"}`), at most `MAX_MATCHES`; files over `GREP_MAX_FILE_BYTES` are skipped. Raises
    `WorkspaceToolError` (empty query, invalid regex, bad `context_lines`)."""
    if not query:
        raise WorkspaceToolError("query is empty; pass a regular expression or text to search for")
    if not 0 <= context_lines <= 10:
        raise WorkspaceToolError("contextLines must be 0-10")
    try:
        regex = compile_pattern(escape(query) if fixed_string else query, ignore_case=not case_sensitive)
    except PatternError as exc:
        raise WorkspaceToolError(f"Invalid regular expression {query!r}: {exc}") from None
    matcher = _glob(include or "**/*")
    matches: list[Any] = []
    searched = with_matches = skipped = 0
    truncated = False
    for path, size, content in _files_with_content(fs):
        if not matcher(path):
            continue
        if size > GREP_MAX_FILE_BYTES:
            skipped += 1
            continue
        text = _text(content())
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
            if context_lines:
                lo, hi = max(1, n - context_lines), min(len(lines), n + context_lines)
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


def delete(fs: Any, path: Any, recursive: bool = False) -> dict:
    """Think's `delete`: remove a file, or a directory (one that is not empty only with
    `recursive`); a missing path is not an error. `{"deleted": path}`. Raises
    `WorkspaceToolError` (the root, a directory that is not empty, a refused path)."""
    norm, p = _resolve(fs, path)
    if norm == "/":
        raise WorkspaceToolError("the workspace root cannot be deleted; delete the entries in it")
    info = _info(fs, p)
    if info is None:
        return {"deleted": norm}
    if info["type"] == "directory" and not recursive and fs.ls(p, detail=False):
        raise WorkspaceToolError(f"{norm} is a directory that is not empty; pass recursive=true to delete it")
    fs.rm(p, recursive=info["type"] == "directory")
    return {"deleted": norm}
