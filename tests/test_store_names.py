"""think_nb's names in its SQLite file never meet the user's own (think_nb.store.migrations, m014).

Every table, index, trigger and FTS table think_nb makes is `think_<name>`; the one other name is
its migration record `_think_nb_migrations`. A file made before m014 (plain names: `messages`,
`agent_state`, ...) is renamed when it is opened and keeps every row, its AUTOINCREMENT counters
and its full-text search. A user's table in the file, whatever its name (`messages`, `notes`, the
plain name of any think_nb table), is left as it is while think_nb opens the file and runs turns.
Real SQLite files, real turns (scripted model).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_files import old_file
from think_nb import Think
from think_nb.errors import UserError
from think_nb.session.search import search_messages
from think_nb.store import AgentStore, open_database
from think_nb.store.migrations import MIGRATIONS, PREFIX, migrate
from think_nb.testing import ScriptedModel as S

MARKER = "_think_nb_migrations"
SHIPPED_BEFORE_M014 = "b5ceaa861b13fac32eac54cacb47a7b8ce39fe5d73ad224f13ef3d7c3bc44d45"
"""sha256 of the schema (sqlite_master rows but the migration record's) that m001-m013 of the
think_nb of commit 9cbec73 made; `old_file` must make the same, or the old-file tests test nothing."""
COMMON_NAMES = ["notes", "users", "data", "items", "documents", "embeddings", "cache", "config"]


def schema(conn: sqlite3.Connection) -> list[tuple]:
    """`(type, name, tbl_name, sql)` of every object but the migration record, by type and name."""
    return conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name != ? "
                        "AND name != 'sqlite_autoindex__think_nb_migrations_1' ORDER BY type, name",
                        (MARKER,)).fetchall()


def names_of_a_new_file() -> list[str]:
    """Every name in sqlite_master of a file think_nb makes now (SQLite's own `sqlite_*` ones excepted)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                                        "ORDER BY name")]
    conn.close()
    return names


THINK_NAMES = names_of_a_new_file()
PLAIN_NAMES = sorted({n.removeprefix(PREFIX) for n in THINK_NAMES if n != MARKER})


def chat_class(replies: list[str]) -> type[Think]:
    """A Think subclass named Chat whose scripted model answers `replies`, one per turn."""
    script = S([[S.text(r)] for r in replies])

    class Chat(Think):
        include_workspace_tools = False

        def get_model(self) -> str:
            return script.model

    return Chat


def user_table(path: Path, name: str) -> list[tuple]:
    """Create the user's table `name` with three rows (its own connection, as the user's code would);
    returns what it holds."""
    with sqlite3.connect(path) as conn:
        conn.execute(f'CREATE TABLE "{name}" (id INTEGER PRIMARY KEY, body TEXT, n REAL)')
        conn.executemany(f'INSERT INTO "{name}" (body, n) VALUES (?, ?)',
                         [("mine", 1.5), ("also mine", None), ("{\"json\": true}", -2.0)])
    conn.close()
    return user_rows(path, name)


def user_rows(path: Path, name: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(f'SELECT * FROM "{name}" ORDER BY id').fetchall()
        rows += conn.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = ?", (name,)).fetchall()
    conn.close()
    return rows


# -- the schema -------------------------------------------------------------------------------------
def test_the_migrations_before_m014_make_the_schema_they_shipped_with(tmp_path: Path) -> None:
    """`old_file` (m001-m013 with the plain names) is the file the think_nb before m014 made:
    m001-m013 now take the prefix as an argument, and with "" they make exactly what they made."""
    conn = old_file(tmp_path / "old.sqlite")
    assert hashlib.sha256(json.dumps(schema(conn)).encode()).hexdigest() == SHIPPED_BEFORE_M014
    conn.close()


def test_every_name_is_prefixed_and_a_new_file_has_the_schema_of_a_renamed_old_one(tmp_path: Path) -> None:
    assert {n for n in THINK_NAMES if not n.startswith(PREFIX)} == {MARKER}
    assert {"think_messages", "think_messages_fts", "think_search_entries_fts", "think_messages_parent",
            "think_messages_fts_ai"} <= set(THINK_NAMES)
    old_file(tmp_path / "old.sqlite").close()
    renamed, new = open_database(tmp_path / "old.sqlite"), open_database(tmp_path / "new.sqlite")
    record = "SELECT name FROM _think_nb_migrations ORDER BY name"
    assert renamed.read(record) == new.read(record) == [(m.__name__,) for m in MIGRATIONS]
    with renamed.locked() as a, new.locked() as b:
        # the same objects with the same SQL; SQLite quotes a renamed table's name in its CREATE text
        def unquoted(conn: sqlite3.Connection) -> list[tuple]:
            return [(t, n, tb, (sql or "").replace('"', "").replace("'", "")) for t, n, tb, sql in schema(conn)]
        assert unquoted(a) == unquoted(b)
        assert [a.execute(f"PRAGMA table_info({n})").fetchall() for n in THINK_NAMES] == \
               [b.execute(f"PRAGMA table_info({n})").fetchall() for n in THINK_NAMES]  # column order too


# -- a file made before m014 --------------------------------------------------------------------------
def fill_every_table(path: Path) -> None:
    """Rows in every table of a think_nb file, written by think_nb itself: a real turn of `Chat:chat`,
    and each repository's own writes for an agent `Old:old` that no test creates (its stored MCP
    server and extension are never started)."""
    assert chat_class(["The purple elephant sleeps under the red fox tree."])("chat", db=path).run(
        "Where does the purple elephant sleep?").status == "completed"
    store = AgentStore(open_database(path), "Old:old", "Old", "old")
    store.messages.append({"id": "u1", "role": "user", "parts": [{"type": "text", "text": "a quiet walrus"}]}, None)
    store.messages.append({"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "walrus"}]}, "u1")
    store.messages.append({"id": "gone", "role": "user", "parts": [{"type": "text", "text": "deleted"}]}, "a1")
    store.sessions.insert("s2", "second", None, None)
    store.blocks.set("memory", "likes walruses")
    store.search_rows("notes").set("k1", "the tusked walrus naps on ice")
    store.compactions().insert("a summary", "u1", "a1", 12)
    store.approvals.record("call_1", "ap_1", True, None, {"a": 1})
    store.submissions.accept("sub_1", "idem_1", [{"id": "m", "role": "user", "parts": []}], "digest", {"k": 1})
    store.schedules.put({"id": "daily", "source": "runtime", "kind": "interval", "spec": "every 1 d", "timezone": None,
                         "seconds": 86400.0, "task": {"prompt": "hi"}, "task_repr": "'hi'", "metadata": None,
                         "digest": "d", "next_run_at": None, "anchor": 0.0})
    store.workspace.make_dirs(["/docs"])
    store.workspace.put_file("/docs/a.txt", b"hello", 5, None)
    store.mcp_servers.put({"name": "srv", "transport": "stdio", "target": "never-started", "args": [], "env": {},
                           "headers": {}, "approval": {}, "timeout": 5.0})
    store.extensions.put({"name": "ext", "version": "1.0"}, "def f(): pass")
    store.streams.set_status("r_old", False, "completed")
    store.streams.append("r_old", [{"type": "text-delta", "delta": "x"}])
    store.traces.save("r_old", [{"kind": "hook"}], [])
    store.turn_log.start("r_old", "cell", False)
    open_database(path).close()


def as_old_file(src: Path, path: Path) -> sqlite3.Connection:
    """An old-format file (`old_file`) holding `src`'s rows, inserted through the old names as the
    think_nb before m014 wrote them (its triggers index the messages and entries)."""
    conn = old_file(path)
    conn.execute("ATTACH ? AS src", (str(src),))
    tables = [n for (n,) in conn.execute("SELECT name FROM src.sqlite_master WHERE type = 'table' AND name LIKE "
                                         "'think\\_%' ESCAPE '\\' AND sql NOT LIKE 'CREATE VIRTUAL%' AND name NOT LIKE "
                                         "'%\\_fts\\_%' ESCAPE '\\' AND name NOT LIKE 'think\\_messages\\_pairs\\_%' "
                                         "ESCAPE '\\' AND name NOT LIKE 'think\\_messages\\_terms\\_%' ESCAPE '\\'")]
    for table in tables:  # the columns the old file has (later migrations add some: m015's edited_input)
        old = table.removeprefix(PREFIX)
        columns = ", ".join(row[1] for row in conn.execute(f"PRAGMA main.table_info({old})"))
        if not columns:  # a table a later migration makes (m018-m020's tables): the old file has none
            continue
        conn.execute(f"INSERT INTO main.{old} SELECT {columns} FROM src.{table}")
    conn.execute("DETACH src")
    return conn


def test_an_old_file_keeps_every_row_its_counters_and_its_search(tmp_path: Path) -> None:
    src, path = tmp_path / "src.sqlite", tmp_path / "old.sqlite"
    fill_every_table(src)
    old = as_old_file(src, path)
    old.execute("DELETE FROM messages WHERE id = 'gone'")  # the counter stays above every seq left
    (gone_seq,) = old.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
    old.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    old.execute("INSERT INTO notes (body) VALUES ('mine')")
    old.execute("CREATE VIEW my_assistant_messages AS SELECT id FROM messages WHERE role = 'assistant'")
    plain = [n for (n,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
                                       "'CREATE VIRTUAL%' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT IN "
                                       "(?, 'notes') AND name NOT LIKE '%\\_fts\\_%' ESCAPE '\\' AND name NOT LIKE "
                                       "'messages\\_pairs\\_%' ESCAPE '\\' AND name NOT LIKE 'messages\\_terms\\_%' "
                                       "ESCAPE '\\'", (MARKER,))]
    before = {t: old.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in plain}
    columns = {t: ", ".join(r[1] for r in old.execute(f"PRAGMA table_info({t})")) for t in plain}  # later ones add some
    assert len(plain) == 17 and all(before.values()), before  # every table of m001-m013 has rows
    fts_before = {t: old.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid").fetchall()
                  for t in ("messages_fts", "search_entries_fts")}
    old.close()

    db = open_database(path)
    assert {n for (n,) in db.read("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")} == \
           {*THINK_NAMES, "notes", "my_assistant_messages"}
    assert {t: db.read(f"SELECT {columns[t]} FROM think_{t} ORDER BY rowid") for t in plain} == before
    assert {t: db.read(f"SELECT rowid, * FROM think_{t} ORDER BY rowid") for t in fts_before} == fts_before
    assert db.read("SELECT * FROM notes") == [(1, "mine")]
    assert {i for (i,) in db.read("SELECT id FROM my_assistant_messages")} >= {"a1"}  # the view followed the rename

    # search: words, phrases (the pairs index), entries of a searchable block
    assert {h["id"] for h in search_messages(db, ["Old:old"], "walrus")} == {"a1", "u1"}
    assert [h["id"] for h in search_messages(db, ["Old:old"], "a quiet walrus")] == ["u1"]
    store = AgentStore(db, "Old:old", "Old", "old")
    assert store.search_rows("notes").match("tusked", 5) == [("k1", "the tusked walrus naps on ice")]
    store.search_rows("notes").set("k1", "a grey seal")
    assert store.search_rows("notes").match("walrus", 5) == [] and store.search_rows("notes").match("seal", 5)
    store.messages.append({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "a new walrus"}]}, "a1")
    (seq,) = db.read("SELECT seq FROM think_messages WHERE id = 'u2'")[0]
    assert seq > gone_seq  # AUTOINCREMENT's counter was renamed with its table
    assert "u2" in [h["id"] for h in search_messages(db, ["Old:old"], "new walrus")]
    with db.write() as conn:
        for fts in ("think_messages_fts", "think_messages_pairs", "think_search_entries_fts"):
            conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('integrity-check')")
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]

    # the agent of the old file goes on where it was, with a real turn
    chat = chat_class(["Still under the tree."])("chat", db=path)
    assert [m["role"] for m in chat.messages] == ["user", "assistant"]
    assert chat.run("And now?").status == "completed"
    assert [m["parts"][-1]["text"] for m in chat.messages][-2:] == ["And now?", "Still under the tree."]
    assert len(chat.search("purple elephant")) == 2
    assert db.read("SELECT * FROM notes") == [(1, "mine")]


@pytest.mark.parametrize(("statement", "expected"), [
    ("CREATE TABLE think_messages (mine TEXT)", ("holds a table named 'think_messages' that is not think_nb's, and "
                                                 "think_nb needs that name for its own tables (all named think_*); "
                                                 "rename or drop yours and open the file again")),
    ("CREATE TABLE THINK_Agent_State (mine TEXT)", "holds a table named 'THINK_Agent_State' that is not think_nb's"),
    ("CREATE INDEX think_messages_parent ON agent_state (key)", "holds an index named 'think_messages_parent'"),
    ("CREATE VIEW broken AS SELECT * FROM nowhere", ("cannot rename think_nb's tables to think_* (error in view "
                                                     "broken: no such table: main.nowhere); drop or mend that object")),
], ids=["table", "table in other case", "index", "broken view"])
def test_an_old_file_the_rename_cannot_go_through_is_refused_in_one_line_and_kept(
        tmp_path: Path, statement: str, expected: str) -> None:
    """The user's object holds a name m014 needs (SQLite compares names without case), or the user's
    broken view makes SQLite refuse every rename: a one-line UserError, and the file as it was."""
    path = tmp_path / "old.sqlite"
    old = old_file(path)
    old.execute("INSERT INTO agent_state VALUES ('A:a', 'k', '1')")
    old.execute(statement)
    before = schema(old)
    old.close()
    with pytest.raises(UserError) as info:
        open_database(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"db={str(path)!r} {expected}"), message
    with sqlite3.connect(path) as conn:  # rolled back: nothing renamed, no row lost
        assert schema(conn) == before
        assert conn.execute("SELECT * FROM agent_state").fetchall() == [("A:a", "k", "1")]
    conn.close()


# -- the user's tables ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [*PLAIN_NAMES, *COMMON_NAMES])
def test_a_users_table_of_any_name_is_untouched(tmp_path: Path, name: str) -> None:
    """The user's table `name` (each think_nb name without its prefix, and common ones), made while
    think_nb has the file open: think_nb runs a turn, then opens the file again with the table
    already in it (a new session) and runs another; the table and its rows stay as they were."""
    path = tmp_path / "mine.sqlite"
    assert chat_class(["first"])("chat", db=path).run("one").status == "completed"
    mine = user_table(path, name)
    assert chat_class(["second"])("chat", db=path).run("two").status == "completed"
    open_database(path).close()  # the session is over; the next one opens a file that holds the user's table
    agent = chat_class(["third"])("chat", db=path)
    assert agent.run("three").status == "completed"
    assert [m["parts"][-1]["text"] for m in agent.messages] == ["one", "first", "two", "second", "three", "third"]
    assert len(agent.search("second")) == 1
    assert user_rows(path, name) == mine


IDENTIFIER = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,24}", fullmatch=True).filter(
    lambda n: n.lower() not in {t.lower() for t in THINK_NAMES} and not n.lower().startswith("sqlite_"))


@settings(max_examples=12, deadline=None, database=None)
@given(names=st.lists(st.one_of(st.sampled_from([*PLAIN_NAMES, *COMMON_NAMES]).map(str.upper), IDENTIFIER),
                      min_size=1, max_size=4, unique_by=str.lower))
def test_user_tables_of_any_names_and_case_are_untouched(names: list[str]) -> None:
    """Several user tables at once, any identifiers (upper-cased think_nb names among them: SQLite
    compares names without case), in a think_nb file that is opened again and runs a turn."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mine.sqlite"
        open_database(path).close()
        mine = {name: user_table(path, name) for name in names}
        assert chat_class(["ok"])("chat", db=path).run("hi").status == "completed"
        open_database(path).close()
        assert {name: user_rows(path, name) for name in names} == mine
