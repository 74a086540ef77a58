"""A new file starts from the schema snapshot (think_nb.store.schema, issue 29 §3): the file it makes is
the file the migrations make one by one (objects, columns, rows, search), a snapshot behind the
migrations is followed by the later ones, and one that does not match them is not used. Real SQLite
files, a real turn (scripted model)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from think_nb import Think
from think_nb.session.search import search_messages
from think_nb.store import open_database, schema, schema_snapshot
from think_nb.store.migrations import MIGRATIONS, PREFIX, migrate
from think_nb.testing import ScriptedModel as S

ALL = [step.__name__ for step in MIGRATIONS]


def contents(conn: sqlite3.Connection) -> dict:
    """Every object's SQL, every table's columns and rows (the migration record's names, not its times)."""
    objects = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    tables = [name for kind, name, _, sql in objects if kind == "table" and not sql.startswith("CREATE VIRTUAL")]
    return {"objects": objects,
            "columns": {t: conn.execute(f'PRAGMA table_info("{t}")').fetchall() for t in tables},
            "rows": {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
                     for t in tables if t != "_think_nb_migrations"},
            "record": [n for (n,) in conn.execute("SELECT name FROM _think_nb_migrations ORDER BY rowid")]}


def one_by_one(path: Path) -> dict:
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, snapshot=False) == ALL
    made = contents(conn)
    conn.close()
    return made


def from_snapshot(path: Path) -> dict:
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn) == ALL
    made = contents(conn)
    conn.close()
    return made


def test_a_new_file_from_the_snapshot_is_the_file_the_migrations_make(tmp_path: Path) -> None:
    assert list(schema_snapshot.MIGRATIONS) == ALL, "a migration was added: run python -m think_nb.store.snapshot"
    assert from_snapshot(tmp_path / "snapshot.sqlite") == one_by_one(tmp_path / "steps.sqlite")
    assert migrate(sqlite3.connect(tmp_path / "snapshot.sqlite", isolation_level=None)) == []  # nothing left to do

    script = S([[S.text("The purple elephant sleeps under the red fox tree.")]])

    class Chat(Think):
        def get_model(self) -> str:
            return script.model

    path = tmp_path / "turn.sqlite"  # a file open_database makes: a turn's rows, and the triggers index them
    assert Chat("chat", db=path).run("Where does the purple elephant sleep?").status == "completed"
    hits = search_messages(open_database(path), ["Chat:chat"], "elephant")
    assert sorted(h["role"] for h in hits) == ["assistant", "user"]


def partial_snapshot(count: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The snapshot a think_nb of the first `count` migrations would have written."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for step in MIGRATIONS[:count]:
        step(conn, PREFIX)
    statements = tuple(schema.dump(conn))
    conn.close()
    return tuple(ALL[:count]), statements


def test_a_snapshot_behind_the_migrations_is_followed_by_the_later_ones(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    names, statements = partial_snapshot(len(ALL) - 4)
    monkeypatch.setattr(schema_snapshot, "MIGRATIONS", names)
    monkeypatch.setattr(schema_snapshot, "STATEMENTS", statements)
    assert from_snapshot(tmp_path / "behind.sqlite") == one_by_one(tmp_path / "steps.sqlite")


def test_a_snapshot_that_does_not_match_the_migrations_is_not_used(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_snapshot, "MIGRATIONS", ("m001_initial", "m002_other"))
    monkeypatch.setattr(schema_snapshot, "STATEMENTS", ("CREATE TABLE think_not_the_schema (x)",))
    made = from_snapshot(tmp_path / "mismatch.sqlite")
    assert "think_not_the_schema" not in {name for _, name, _, _ in made["objects"]}
    assert made == one_by_one(tmp_path / "steps.sqlite")
