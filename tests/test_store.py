"""SQLite storage: location, WAL, migrations, the message tree (think_nb.store)."""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from store_files import old_file
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.store import MessageStore, default_db_path, open_database
from think_nb.store.migrations import MIGRATIONS


def msg(id: str, role: str = "user", text: str = "") -> dict:
    return {"id": id, "role": role, "parts": [{"type": "text", "text": text or id}]}


def test_default_path_is_beside_the_notebook(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("THINK_NB_DIR", str(tmp_path))
    monkeypatch.setenv("JPY_SESSION_NAME", "/somewhere/lessons/demo.ipynb")
    assert default_db_path() == tmp_path / ".think" / "demo.sqlite"
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert default_db_path() == tmp_path / ".think" / "think_nb.sqlite"
    monkeypatch.setenv("THINK_NB_DB", str(tmp_path / "x.sqlite"))
    assert default_db_path() == tmp_path / "x.sqlite"


def test_file_is_wal_and_migrations_are_recorded_once(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    open_database(path).close()
    open_database(path).close()  # re-open applies nothing new
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert [r[0] for r in conn.execute("SELECT name FROM _think_nb_migrations")] == [m.__name__ for m in MIGRATIONS]
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_tree_branch_and_sibling(tmp_path: Path) -> None:
    store = MessageStore(open_database(tmp_path / "t.sqlite"), "A:x")
    store.append(msg("u1"), None)
    store.append(msg("a1", "assistant"), "u1")
    store.append(msg("a1b", "assistant"), "u1")  # regenerate: sibling of a1
    assert [m["id"] for m in store.branch()] == ["u1", "a1b"]
    store.set_leaf("a1")
    assert [m["id"] for m in store.branch()] == ["u1", "a1"]
    assert store.get("a1b") == msg("a1b", "assistant")
    assert store.update(msg("a1", "assistant", "edited")) and store.branch()[-1]["parts"][0]["text"] == "edited"
    assert not store.update(msg("missing"))
    store.clear()
    assert store.branch() == [] and store.get("u1") is None


def test_agents_are_keyed_by_class_and_name(tmp_path: Path) -> None:
    class A(Think):
        pass

    class B(Think):
        pass

    db = tmp_path / "k.sqlite"
    runtime_of(A("x", db=db)).store.messages.append(msg("u1"), None)
    assert [m["id"] for m in A("x", db=db).messages] == ["u1"]
    assert A("y", db=db).messages == [] and B("x", db=db).messages == []


def test_transcript_survives_a_new_process(tmp_path: Path) -> None:
    db = tmp_path / "restart.sqlite"
    code = (
        "from think_nb import Think\n"
        "from think_nb.testing import ScriptedModel as S\n"
        "s = S([[S.text('persisted reply')]])\n"
        "class Calc(Think):\n"
        "    def get_model(self): return s.model\n"
        f"print(Calc('calc', db={str(db)!r}).run('hello').status)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "completed"

    class Calc(Think):
        pass

    assert [(m["role"], m["parts"][-1]["text"]) for m in Calc("calc", db=db).messages] == [
        ("user", "hello"), ("assistant", "persisted reply")]


def test_only_a_window_of_a_long_history_is_loaded(tmp_path: Path) -> None:
    class Long(Think):
        hydration_limit = 50

    agent = Long("long", db=tmp_path / "long.sqlite")
    parent = None
    for n in range(300):
        runtime_of(agent).store.messages.append(msg(f"m{n}", "user" if n % 2 == 0 else "assistant"), parent)
        parent = f"m{n}"
    reopened = Long("long", db=tmp_path / "long.sqlite")
    assert [m["id"] for m in reopened.messages] == [f"m{n}" for n in range(250, 300)]
    assert runtime_of(reopened).store.messages.count() == 300  # storage untouched
    Long.hydration_limit = 1
    assert len(Long("long", db=tmp_path / "long.sqlite").messages) == 4  # never fewer than 4


def test_processes_opening_a_new_file_at_once_apply_each_migration_once(tmp_path: Path) -> None:
    """Six kernels opening the same new SQLite file at once: one applies each migration, the
    others see it applied (read again under the write lock), none fails with "table already exists"."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(6) as pool:
        for round_ in range(5):  # the race is rare ("database is locked" switching to WAL: ~1 in 20 under load)
            path = tmp_path / f"fresh{round_}.sqlite"
            barrier = manager.Barrier(6)
            results = pool.starmap(_open_after_barrier, [(str(path), barrier)] * 6)
            assert all(r == "ok" for r in results), results
            with sqlite3.connect(path) as conn:
                names = [r[0] for r in conn.execute("SELECT name FROM _think_nb_migrations")]
            assert len(names) == len(set(names)) == len(MIGRATIONS)


def _open_after_barrier(path: str, barrier: Any) -> str:
    barrier.wait()
    try:
        open_database(Path(path))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_phrase_index_is_built_for_an_old_file_and_follows_its_messages(tmp_path: Path) -> None:
    """A file made before m013_message_pairs: opening it indexes the stored messages' adjacent term
    pairs (the backfill), phrase search then ranks as FTS5's phrase query on messages_fts, and
    updating or deleting those messages un-indexes exactly what was indexed (the pairs table is
    contentless: a delete that gave other tokens would leave some behind)."""
    from think_nb.session.search import search_messages

    path = tmp_path / "old.sqlite"
    old = old_file(path, before="m013")
    texts = ["The red fox is a small canid. Red foxes hunt rodents.", "Tell me about the red fox",
             "red fox red fox", "", "Arctic foxes: the red fox's cousins", "Ünïcode_test 中文 red fox"]
    old.executemany("INSERT INTO messages (agent_key, id, parent_id, role, content, created_at, updated_at) "
                    "VALUES ('A:x', ?, NULL, 'user', ?, 0, 0)",
                    [(f"m{i}", json.dumps(msg(f"m{i}", text=t))) for i, t in enumerate(texts) if t] + [("e", "{}")])
    assert "messages_pairs" not in {r[0] for r in old.execute("SELECT name FROM sqlite_master")}
    old.close()

    db = open_database(path)
    assert db.read("SELECT name FROM _think_nb_migrations WHERE name = 'm013_message_pairs'")
    for phrase in ["red fox", "red foxes red", "fox s cousins", "unicode test 中文 red"]:
        expected = db.read("SELECT m.id, f.rank FROM think_messages_fts f JOIN think_messages m ON m.seq = f.rowid "
                           "WHERE think_messages_fts MATCH ? ORDER BY f.rank", (f'"{phrase}"',))
        assert expected and [(h["id"], h["rank"]) for h in search_messages(db, ["A:x"], phrase)] == expected
    store = MessageStore(db, "A:x")
    store.append(msg("new", text="a red fox, newly"), None)
    assert store.update(msg("m1", text="tell me about the grey wolf"))
    assert store.update({**msg("m2", text="red fox red fox"), "metadata": {"seen": True}})  # the same text
    assert "m2" in [h["id"] for h in search_messages(db, ["A:x"], "fox red fox")]
    assert [h["id"] for h in search_messages(db, ["A:x"], "grey wolf")] == ["m1"]
    assert "m1" not in [h["id"] for h in search_messages(db, ["A:x"], "red fox")]
    with db.write() as conn:
        conn.execute("CREATE VIRTUAL TABLE temp.pair_terms USING fts5vocab(main, think_messages_pairs, row)")
        assert conn.execute("SELECT count(*) FROM temp.pair_terms").fetchone()[0] > 0
        conn.execute("INSERT INTO think_messages_pairs (think_messages_pairs) VALUES ('integrity-check')")
        conn.execute("DELETE FROM think_messages")
        assert conn.execute("SELECT count(*) FROM temp.pair_terms").fetchall() == [(0,)]
        conn.execute("INSERT INTO think_messages_pairs (think_messages_pairs) VALUES ('integrity-check')")
        conn.execute("DROP TABLE temp.pair_terms")
    assert search_messages(db, ["A:x"], "red fox") == []


def test_traces_keep_the_newest_turns_of_each_agent(tmp_path: Path) -> None:
    from think_nb.store.traces import KEEP_TURNS, TRIM_EVERY, TraceStore

    db = open_database(tmp_path / "traces.sqlite")
    mine, other = TraceStore(db, "A:a"), TraceStore(db, "A:b")
    other.save("b0", [{"kind": "hook"}], [])
    for n in range(KEEP_TURNS + 5):
        mine.save(f"r{n}", [{"kind": "hook", "n": n}], [])
        mine.save(f"r{n}", [{"kind": "hook", "n": n, "again": True}], [])  # replaced, not added
        kept = [r for (r,) in db.read("SELECT request_id FROM think_turn_traces WHERE agent_key = 'A:a' ORDER BY seq")]
        newest = [f"r{k}" for k in range(max(0, n + 1 - KEEP_TURNS), n + 1)]
        assert kept[-len(newest):] == newest and len(kept) < KEEP_TURNS + TRIM_EVERY  # older ones trimmed now and then
        assert kept == [f"r{k}" for k in range(n + 1 - len(kept), n + 1)]
    assert mine.load()[0] == f"r{KEEP_TURNS + 4}" and mine.load("r0") is None
    assert other.load() is not None  # another agent's traces are its own
    later = TraceStore(db, "A:a")  # a new process trims at its first save
    later.save("x", [], [])
    assert len(db.read("SELECT 1 FROM think_turn_traces WHERE agent_key = 'A:a'")) == KEEP_TURNS
