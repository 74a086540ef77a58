"""Search marks each hit `on_branch` without walking the branch (issue 29 §1): the depth and jump
pointer of every message (`think_nb.store.ancestry`) answer "is it on the current branch" in
O(log depth) lookups. The answers are the branch's own, over any tree, any leaf, a file made
before migration m016, and rows written by an older think_nb into a migrated file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from store_files import old_file
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.store import AgentStore, MessageStore, open_database
from think_nb.testing import ScriptedModel as S

KEY = "A:a"


def _message(message_id: str, text: str = "") -> dict:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text or message_id}]}


def _truth(store: MessageStore, ids: list[str]) -> set[str]:
    return {m["id"] for m in store.branch()} & set(ids)


def _true_ages(store: MessageStore, ids: list[str]) -> dict[str, int]:
    branch = [m["id"] for m in store.branch()]
    return {i: len(branch) - 1 - n for n, i in enumerate(branch) if i in set(ids)}


# An operation: ("append", parent index), ("extend", parent index, length), ("leaf", index);
# an index picks among the messages stored so far (modulo their count; -1: the current leaf).
OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(-1, 400)),
    st.tuples(st.just("extend"), st.integers(-1, 400), st.integers(1, 6)),
    st.tuples(st.just("leaf"), st.integers(0, 400)),
), min_size=1, max_size=60)


@settings(max_examples=120, deadline=None, database=None)
@given(OPERATIONS)
def test_on_branch_is_the_branch_for_any_tree_and_leaf(tmp_path_factory, operations) -> None:  # type: ignore[no-untyped-def]
    store = AgentStore(open_database(tmp_path_factory.mktemp("t") / "t.sqlite"), KEY, "A", "a").messages
    ids: list[str] = []
    for n, op in enumerate(operations):
        parent = (store.leaf_id if op[1] == -1 or not ids else ids[op[1] % len(ids)]) if op[0] != "leaf" else None
        if op[0] == "append":
            store.append(_message(f"m{n}"), parent)
            ids.append(f"m{n}")
        elif op[0] == "extend":
            chain = [_message(f"m{n}_{k}") for k in range(op[2])]
            store.extend(chain, parent)
            ids += [m["id"] for m in chain]
        elif ids:
            store.set_leaf(ids[op[1] % len(ids)])
        assert store.on_branch(ids) == _truth(store, ids)
        assert store.ages(ids) == _true_ages(store, ids)
    assert store.on_branch([*ids, "missing"]) == _truth(store, ids)  # an unknown id is not on it


def test_a_file_made_before_m016_is_filled_and_answers_the_same(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = old_file(path, before="m016")
    rows, parent = [], None  # a chain of 300, a regenerated reply at 150 with 40 below it
    for i in range(300):
        rows.append((KEY, f"m{i}", parent, "user", f'{{"id": "m{i}", "role": "user", "parts": []}}', 0, 0))
        parent = f"m{i}"
    parent = "m149"
    for i in range(40):
        rows.append((KEY, f"r{i}", parent, "user", f'{{"id": "r{i}", "role": "user", "parts": []}}', 0, 0))
        parent = f"r{i}"
    conn.executemany("INSERT INTO think_messages (agent_key, id, parent_id, role, content, created_at, updated_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    conn.execute("INSERT INTO think_agent_state VALUES (?, 'leaf_id', '\"r39\"')", (KEY,))
    conn.close()

    store = AgentStore(open_database(path), KEY, "A", "a").messages  # migrates: m016 fills the rows
    filled = sqlite3.connect(path).execute("SELECT count(*) FROM think_messages WHERE depth IS NULL").fetchone()[0]
    assert filled == 0
    ids = [r[1] for r in rows]
    assert store.on_branch(ids) == _truth(store, ids) == {f"m{i}" for i in range(150)} | {f"r{i}" for i in range(40)}
    assert store.ages(ids) == _true_ages(store, ids)
    store.set_leaf("m299")
    assert store.on_branch(ids) == {f"m{i}" for i in range(300)}


def test_rows_an_older_think_nb_writes_into_a_migrated_file_still_answer_right(tmp_path: Path) -> None:
    path = tmp_path / "mixed.sqlite"
    store = AgentStore(open_database(path), KEY, "A", "a").messages
    store.extend([_message(f"m{i}") for i in range(20)], None)
    conn = sqlite3.connect(path, isolation_level=None)  # an older version: no depth, no jump
    conn.execute("INSERT INTO think_messages (agent_key, id, parent_id, role, content, created_at, updated_at) "
                 "VALUES (?, 'old', 'm19', 'user', ?, 0, 0)", (KEY, '{"id": "old", "role": "user", "parts": []}'))
    conn.execute("UPDATE think_agent_state SET value = '\"old\"' WHERE agent_key = ? AND key = 'leaf_id'", (KEY,))
    store.append(_message("new"), "old")  # below a row of unknown depth: unknown too
    store.extend([_message("n1"), _message("n2")], "new")
    ids = [f"m{i}" for i in range(20)] + ["old", "new", "n1", "n2"]
    assert store.on_branch(ids) == _truth(store, ids) == set(ids)
    assert store.ages(ids) == _true_ages(store, ids)
    store.set_leaf("m5")
    assert store.on_branch(ids) == {f"m{i}" for i in range(6)}


async def test_search_flags_hits_of_a_regenerated_reply_in_the_default_and_a_named_session(tmp_path: Path) -> None:
    script = S([[S.text("the zebra answer")], [S.text("another zebra answer")],
                [S.text("a zebra in session two")], [S.text("regenerated zebra two")]])

    class Z(Think):
        include_workspace_tools = False

        def get_model(self):  # type: ignore[no-untyped-def]
            return script.model

    agent = Z("z", db=tmp_path / "z.sqlite")
    await agent.send("tell me about the zebra")
    first = agent.messages[-1]["id"]
    await agent.regenerate()
    hits = {h["id"]: h["on_branch"] for h in agent.session.search("zebra")}
    assert hits[first] is False and hits[agent.messages[-1]["id"]] is True and len(hits) == 3
    two = agent.create_session("two")  # and switches to it
    await agent.send("zebra please")
    old = agent.messages[-1]["id"]
    await agent.regenerate()
    mine = {h["id"]: h["on_branch"] for h in agent.session.search("zebra")}
    assert mine[old] is False and mine[agent.messages[-1]["id"]] is True
    assert runtime_of(agent).store.messages.session_id == two and len(mine) == 3
    # the versions of a reply are the named session's own (they were read under the default's key)
    assert [m["id"] for m in agent.get_branches(agent.messages[-1]["id"])] == [old, agent.messages[-1]["id"]]
    agent.switch_branch(old)
    assert agent.messages[-1]["id"] == old
    assert {h["id"]: h["on_branch"] for h in agent.session.search("zebra")}[old] is True
    await agent.shutdown()


def test_a_named_sessions_store_reads_its_own_rows(tmp_path: Path) -> None:
    """Versions of a reply, the newest leaf under a message and an update in place read the
    session's own rows (they read the default session's key: [] and wrong parents)."""
    store = MessageStore(open_database(tmp_path / "s.sqlite"), KEY, "two")
    store.extend([_message("u"), _message("a1")], None)
    store.append(_message("a2"), "u")
    store.append(_message("a2b"), "a2")
    assert [m["id"] for m in store.siblings("a1")] == ["a1", "a2"]
    assert store.newest_leaf_under("u") == "a2b"
    store.set_leaf("a1")
    assert store.append_to_leaf(_message("a2", "edited")) == "u"  # updated in place, under its parent
    assert store.get("a2")["parts"][0]["text"] == "edited"
