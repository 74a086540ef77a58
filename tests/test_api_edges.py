"""Bad input at the API edge gets one clear line, never a raw sqlite3/OSError/pydantic dump.

Storage (`Think(name, db=...)`): every unusable `db=` is refused with a `UserError` that names
`db=` and the fix, before anything is written (the folder's files, bytes and modes are
unchanged; another application's SQLite file gets no think_nb table). Tools: what cannot work
as a tool is refused when the tool is made (`@tool`, `client_tool`, `Tool`) or resolved from
`get_tools()`, before the model is asked anything.

Read-only cases need permissions that bind: as root (CI here) they run in a child process
without CAP_DAC_OVERRIDE (`setpriv`), so the file modes apply as they would for a user.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from think_nb import Think, client_tool, tool
from think_nb.errors import UserError
from think_nb.store import open_database
from think_nb.testing import ScriptedModel as S
from think_nb.tools import Tool, resolve_tools

THINK_TABLES = {"_think_nb_migrations", "think_agents", "think_messages", "think_agent_state"}


# -- helpers ------------------------------------------------------------------

def snapshot(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path under `root` with its mode and (for files) bytes."""
    return {str(p.relative_to(root)): (p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path.as_uri() + "?mode=ro", uri=True)
    try:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()


def think_file(path: Path, rows: int = 200) -> Path:
    """A real think_nb SQLite file with some data in it, closed (no -wal/-shm left)."""
    db = open_database(path)
    with db.write() as conn:
        conn.executemany("INSERT INTO think_agent_state VALUES (?, ?, ?)",
                         [("k", str(i), "x" * 400) for i in range(rows)])
    db.close()
    assert not path.with_name(path.name + "-wal").exists()
    return path


def foreign_file(path: Path, *statements: str) -> Path:
    with sqlite3.connect(path) as conn:
        for sql in statements:
            conn.execute(sql)
    conn.close()
    return path


def empty_file(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def expect_one_line(message: str, *fragments: str) -> None:
    assert "\n" not in message and message.strip() == message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


CHILD = """
import json, sys
from think_nb import Think
from think_nb.errors import UserError
try:
    Think("edge", db=sys.argv[1])
    print(json.dumps(["opened", "", False]))
except Exception as exc:
    print(json.dumps([type(exc).__name__, str(exc), isinstance(exc, UserError)]))
"""


def open_without_privileges(db: Path) -> tuple[str, str, bool]:
    """`Think("edge", db=db)` in a child whose file permissions bind (root loses CAP_DAC_OVERRIDE)."""
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run([*prefix, sys.executable, "-c", CHILD, str(db)], capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    kind, message, is_user_error = json.loads(proc.stdout.strip().splitlines()[-1])
    return kind, message, is_user_error


# -- db= ------------------------------------------------------------------------

def _text_file(d: Path) -> Path:
    (d / "notes.txt").write_text("just some notes\n")
    return d / "notes.txt"


def _directory(d: Path) -> Path:
    (d / "folder").mkdir()
    (d / "folder" / "keep.txt").write_text("x")
    return d / "folder"


def _under_a_file(d: Path) -> Path:
    (d / "a").write_text("a file")
    return d / "a" / "b.sqlite"


def _deep_under_a_file(d: Path) -> Path:
    (d / "a").write_text("a file")
    return d / "a" / "b" / "c" / "think.sqlite"


def _truncated(d: Path) -> Path:
    path = think_file(d / "t.sqlite")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _truncated_header(d: Path) -> Path:
    path = think_file(d / "t.sqlite")
    path.write_bytes(path.read_bytes()[:50])
    return path


def _corrupt_page(d: Path) -> Path:
    path = think_file(d / "c.sqlite")
    data = bytearray(path.read_bytes())
    data[4096 * 3: 4096 * 5] = bytes(range(256)) * 32
    path.write_bytes(bytes(data))
    return path


def _corrupt_schema(d: Path) -> Path:
    path = think_file(d / "c.sqlite")
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * 3996  # the schema's b-tree page
    path.write_bytes(bytes(data))
    return path


def _foreign_messages(d: Path) -> Path:
    return foreign_file(d / "chat.db", "CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)",
                        "INSERT INTO messages (body) VALUES ('hello')")


def _foreign_other_tables(d: Path) -> Path:
    return foreign_file(d / "shop.sqlite", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
                        "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER)",
                        "CREATE INDEX orders_user ON orders (user_id)", "INSERT INTO users (name) VALUES ('ada')")


def _foreign_wal_mode(d: Path) -> Path:
    return foreign_file(d / "app.sqlite", "PRAGMA journal_mode=WAL", "CREATE TABLE agents (x)")


DB_CASES: list[tuple[str, Callable[[Path], Path], str]] = [
    ("text file", _text_file, "is not a SQLite file"),
    ("directory", _directory, "is a directory; pass a file path"),
    ("under a file", _under_a_file, "is a file, not a folder"),
    ("deep under a file", _deep_under_a_file, "is a file, not a folder"),
    ("truncated SQLite", _truncated, "is a damaged SQLite file (truncated:"),
    ("truncated SQLite header", _truncated_header, "is a damaged SQLite file (truncated:"),
    ("corrupt SQLite page", _corrupt_page, "is a damaged SQLite file ("),
    ("corrupt SQLite schema", _corrupt_schema, "is a damaged SQLite file (database disk image is malformed)"),
    ("/dev/null", lambda d: Path("/dev/null"), "is a character device, not a file"),
    ("file name too long", lambda d: d / ("x" * 300 + ".sqlite"), "cannot be used (File name too long)"),
    ("another app's messages table", _foreign_messages, "belongs to another application (it holds messages;"),
    ("another app's tables", _foreign_other_tables,
     "belongs to another application (it holds orders, orders_user, users;"),
    ("another app's WAL file", _foreign_wal_mode, "belongs to another application (it holds agents;"),
]


@pytest.mark.parametrize(("make", "expected"), [c[1:] for c in DB_CASES], ids=[c[0] for c in DB_CASES])
def test_an_unusable_db_path_is_refused_in_one_line_and_nothing_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], Path], expected: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    db = make(work)
    foreign = "belongs to another application" in expected
    before_tables = tables(db) if foreign else set()
    before = snapshot(work)

    with pytest.raises(UserError) as info:
        Think("edge", db=db)

    message = str(info.value)
    expect_one_line(message, f"db={str(db.resolve())!r}", expected, "; ")
    assert "sqlite3." not in message and "Errno" not in message and "Traceback" not in message
    assert snapshot(work) == before  # no file, sidecar, folder, byte or mode changed
    if foreign:
        assert tables(db) == before_tables and "_think_nb_migrations" not in before_tables  # no think_nb table


def _read_only_file(d: Path) -> Path:
    path = think_file(d / "ro.sqlite")
    path.chmod(0o444)
    return path


def _read_only_folder_new_file(d: Path) -> Path:
    (d / "locked").mkdir()
    (d / "locked").chmod(0o555)
    return d / "locked" / "new.sqlite"


def _read_only_folder_existing_file(d: Path) -> Path:
    (d / "locked").mkdir()
    path = think_file(d / "locked" / "think.sqlite")
    (d / "locked").chmod(0o555)
    return path


def _read_only_folder_new_subfolder(d: Path) -> Path:
    (d / "locked").mkdir()
    (d / "locked").chmod(0o555)
    return d / "locked" / "sub" / "new.sqlite"


READ_ONLY_CASES: list[tuple[str, Callable[[Path], Path], str]] = [
    ("read-only file", _read_only_file, "is read-only (think_nb writes every turn to it); make it writable"),
    ("read-only folder, new file", _read_only_folder_new_file, "cannot be created: the folder"),
    ("read-only folder, new subfolder", _read_only_folder_new_subfolder, "cannot be created: the folder"),
    ("read-only folder, existing file", _read_only_folder_existing_file, "is in the read-only folder"),
]


@pytest.mark.parametrize(("make", "expected"), [c[1:] for c in READ_ONLY_CASES], ids=[c[0] for c in READ_ONLY_CASES])
def test_a_read_only_db_path_is_refused_in_one_line_and_nothing_is_written(
        tmp_path: Path, make: Callable[[Path], Path], expected: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    db = make(work)
    before = snapshot(work)
    try:
        kind, message, is_user_error = open_without_privileges(db)
        after = snapshot(work)
    finally:
        for p in [work, *work.rglob("*")]:  # let pytest clean up
            if p.is_dir():
                p.chmod(0o755)
    assert (kind, is_user_error) == ("UserError", True), message
    expect_one_line(message, f"db={str(db)!r}", expected, "; ")
    assert after == before  # no file, sidecar, folder, byte or mode changed


GOOD_CASES: list[tuple[str, Callable[[Path], Path]]] = [
    ("new file in new folders", lambda d: d / "x" / "y" / "think.sqlite"),
    ("empty file", lambda d: empty_file(d / "empty.sqlite")),
    ("think_nb file", lambda d: think_file(d / "mine.sqlite")),
    ("think_nb file with a table of the user's", lambda d: foreign_file(think_file(d / "mine.sqlite"),
                                                                        "CREATE TABLE notes (t TEXT)")),
    ("think_nb file with the user's own messages table", lambda d: foreign_file(
        think_file(d / "mine.sqlite"), "CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)",
        "INSERT INTO messages (body) VALUES ('hello')")),
    ("empty SQLite file (no tables)", lambda d: foreign_file(d / "blank.sqlite", "PRAGMA user_version=1")),
]


@pytest.mark.parametrize("make", [c[1] for c in GOOD_CASES], ids=[c[0] for c in GOOD_CASES])
def test_usable_db_paths_still_open(tmp_path: Path, make: Callable[[Path], Path]) -> None:
    db = make(tmp_path)
    agent = Think("edge", db=db)
    assert tables(db) >= THINK_TABLES and agent.messages == []


def test_a_think_nb_file_left_with_a_live_wal_still_opens_with_its_data(tmp_path: Path) -> None:
    """A kernel killed before a checkpoint leaves data only in the -wal file: the checks must see it."""
    src = think_file(tmp_path / "src.sqlite", rows=0)
    db = open_database(src)
    db.execute("INSERT INTO think_agent_state VALUES ('k', 'only-in-wal', 'v')")
    copy = tmp_path / "copy" / "think.sqlite"
    copy.parent.mkdir()
    for suffix in ("", "-wal"):  # what a killed process leaves: the file and its un-checkpointed WAL
        shutil.copyfile(f"{src}{suffix}", f"{copy}{suffix}")
    db.close()
    assert copy.with_name("think.sqlite-wal").stat().st_size > 0
    assert open_database(copy).read("SELECT value FROM think_agent_state WHERE key = 'only-in-wal'") == [("v",)]


def test_db_must_be_a_path() -> None:
    with pytest.raises(UserError) as info:
        open_database(3)  # type: ignore[arg-type]
    expect_one_line(str(info.value), "db=3 must be a path")


# -- tools ----------------------------------------------------------------------

ran: list[str] = []


def count(n: int):
    """Count to n."""
    ran.append("count")
    yield from range(n)


async def stream(n: int):
    """Stream n items."""
    ran.append("stream")
    for i in range(n):
        yield i


def connect(sock: socket.socket) -> str:
    """Use a socket."""
    ran.append("connect")
    return "ok"


def apply(fn: Callable[[int], int], x: int) -> int:
    """Apply fn."""
    ran.append("apply")
    return fn(x)


def add(a: int, b: int) -> int:
    """Add."""
    ran.append("add")
    return a + b


TOOL_CASES: list[tuple[str, Callable[[], object], tuple[str, ...]]] = [
    ("sync generator", lambda: tool(count), ("tool 'count'", "a generator", "must be an async generator")),
    ("parameter without JSON schema (socket)", lambda: tool(connect),
     ("tool 'connect'", "parameter 'sock' has type socket", "no JSON schema")),
    ("parameter without JSON schema (Callable)", lambda: tool(apply),
     ("tool 'apply'", "parameter 'fn' has type collections.abc.Callable[[int], int]", "no JSON schema")),
    ("name with a space", lambda: tool(add, name="add numbers"), ("name='add numbers' must match", "pass name=")),
    ("name too long", lambda: tool(add, name="a" * 65), (f"name={'a' * 65!r} must match",)),
    ("empty name", lambda: tool(add, name=""), ("name='' must match",)),
    ("non-ASCII name", lambda: tool(add, name="résumé"), ("name='résumé' must match",)),
    ("lambda (no name)", lambda: tool(lambda a: a), ("parameter 'a' has no type hint", "name='<lambda>' must match")),
    ("get_tools() dict key", lambda: resolve_tools({"add two": add}), ("get_tools() key 'add two' is not a valid",)),
    ("get_tools() generator", lambda: resolve_tools([count]), ("tool 'count'", "must be an async generator")),
    ("get_tools() socket parameter", lambda: resolve_tools({"conn": connect}), ("tool 'conn'", "parameter 'sock'")),
    ("client_tool name", lambda: client_tool("page title", "The title.", js="return document.title;"),
     ("tool name 'page title' is not allowed",)),
    ("Tool() name", lambda: Tool("a/b", "d", {"type": "object", "properties": {}}, add), ("tool name 'a/b'",)),
    ("needs_approval type", lambda: tool(add, needs_approval="yes"), ("needs_approval='yes' must be",)),
]


@pytest.mark.parametrize(("register", "fragments"), [c[1:] for c in TOOL_CASES], ids=[c[0] for c in TOOL_CASES])
def test_a_bad_tool_is_refused_when_it_is_made_in_one_line(register: Callable[[], object],
                                                           fragments: tuple[str, ...]) -> None:
    ran.clear()
    with pytest.raises(UserError) as info:
        register()
    expect_one_line(str(info.value), *fragments)
    assert ran == []  # nothing ran


GET_TOOLS_CASES: list[tuple[str, object, str]] = [
    ("sync generator", [count], "tool 'count': the function is a generator"),
    ("socket parameter", [add, connect], "tool 'connect': parameter 'sock' has type socket"),
    ("Callable parameter", {"apply": apply}, "tool 'apply': parameter 'fn'"),
    ("bad dict key", {"add two": add}, "get_tools() key 'add two' is not a valid tool name"),
]


@pytest.mark.parametrize(("tools", "expected"), [c[1:] for c in GET_TOOLS_CASES], ids=[c[0] for c in GET_TOOLS_CASES])
async def test_a_bad_tool_from_get_tools_fails_the_turn_before_the_model_is_asked(
        tools: object, expected: str) -> None:
    ran.clear()
    script = S([[S.tool_call("count", {"n": 2})], [S.text("done")]])

    class Edge(Think):
        def get_model(self):
            return script.model

        def get_tools(self):
            return tools

    result = await Edge("edge").send("go")
    assert result.status == "error"
    expect_one_line(result.error or "", expected)
    assert script.requests == [] and ran == []  # the model was never asked and no tool ran
