"""`think_nb.store.presence`: one query says which subsystems of an agent have rows; each answer
is checked against rows written the way the subsystem writes them, and a new agent reads as `NEW`."""

from __future__ import annotations

import time
from pathlib import Path

from think_nb.store import AgentStore, open_database
from think_nb.store.presence import NEW, Presence, presence


def test_each_subsystem_is_seen_alone_and_a_new_agent_has_nothing(tmp_path: Path) -> None:
    db = open_database(tmp_path / "p.sqlite")
    assert presence(db, "A:new") == NEW
    AgentStore(db, "A:a", "A", "a")  # registered with the next write
    assert presence(db, "A:a") == NEW
    old = time.time() - 400 * 24 * 3600
    writes = {
        "state": "INSERT INTO think_agent_state VALUES (?, 'leaf_id', '\"m\"')",
        "interrupted": "INSERT INTO think_turns (agent_key, request_id, trigger, status, started_at, owner) "
                       "VALUES (?, 'r', 'send', 'running', 0, 'dead-process')",
        "child_runs": "INSERT INTO think_child_runs (agent_key, run_id, child_key, child_class, child_name, status, "
                      "owner, started_at) VALUES (?, 'run', 'c', 'C', 'c', 'running', 'dead-process', 0)",
        "expired_actions": "INSERT INTO think_action_pending_approvals VALUES (?, 'e', 'act', 'call', NULL, '{}', "
                           f"NULL, {old})",
        "submissions": "INSERT INTO think_submissions (agent_key, id, status, messages, digest, created_at) "
                       "VALUES (?, 's', 'pending', '[]', '', 0)",
        "mcp_servers": "INSERT INTO think_mcp_servers VALUES (?, 'm', 'stdio', 'x', '[]', '{}', '{}', 'false', 1, 0)",
        "extensions": "INSERT INTO think_extensions VALUES (?, 'e', '1', '{}', '', 0)",
        "schedules": "INSERT INTO think_schedules (agent_key, id, source, kind, spec, task, task_repr, digest, anchor, "
                     "created_at, updated_at) VALUES (?, 't', 'runtime', 'once', 'x', '{}', 'x', 'd', 0, 0, 0)",
    }
    for n, (field, sql) in enumerate(writes.items()):
        key = f"A:{n}"
        AgentStore(db, key, "A", str(n))
        db.execute(sql, (key,))  # the write registers the agent in the same transaction
        assert presence(db, key) == Presence(registered=True, **{f: f == field for f in writes}), field
    assert presence(db, "A:a") == Presence(True, *(False,) * 8)  # registered by the writes, nothing stored


def test_rows_a_live_process_owns_or_not_expired_do_not_count(tmp_path: Path) -> None:
    from think_nb.store import owners

    db = open_database(tmp_path / "p.sqlite")
    AgentStore(db, "A:a", "A", "a")
    db.execute("INSERT INTO think_turns (agent_key, request_id, trigger, status, started_at, owner) "
               "VALUES ('A:a', 'r', 'send', 'running', 0, ?)", (owners.PROCESS,))
    db.execute("INSERT INTO think_action_pending_approvals VALUES ('A:a', 'e', 'act', 'call', NULL, '{}', NULL, ?)",
               (time.time(),))
    assert presence(db, "A:a") == Presence(True, *(False,) * 8)


def test_each_lookup_by_status_searches_an_index_not_all_the_agents_rows(tmp_path: Path) -> None:
    """A reopened agent's start-up must not read its whole turn log (one row per turn it ever ran):
    every lookup that filters by status finds the rows by `(agent_key, status)` (m024 for turns,
    streams and agent-tool runs)."""
    from think_nb.store.presence import _SQL

    db = open_database(tmp_path / "p.sqlite")
    plan = [row[3] for row in db.read("EXPLAIN QUERY PLAN " + _SQL, ("A:a", "me", 0.0, 0.0, 0.0))]
    searched = {line.split()[1]: line for line in plan if line.startswith("SEARCH")}
    for table in ("think_turns", "think_stream_metadata", "think_child_runs", "think_submissions",
                  "think_action_ledger"):
        assert "(agent_key=? AND status=?" in searched[table], searched[table]


def test_rows_another_connection_commits_to_a_table_that_held_none_are_seen(tmp_path: Path) -> None:
    """The statement asks only the tables that held rows when last looked (`_OCCUPIED`): a commit of
    another connection (another kernel on the file) to a table that held none, and this connection's
    own writes, committed or still in a transaction, are seen at the next creation."""
    import sqlite3

    path = tmp_path / "p.sqlite"
    db = open_database(path)
    AgentStore(db, "A:a", "A", "a")
    db.flush_agents()
    assert presence(db, "A:a") == presence(db, "A:a") == Presence(True, *(False,) * 8)  # known from here
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("INSERT INTO think_extensions VALUES ('A:a', 'e', '1', '{}', '', 0)")
    assert presence(db, "A:a").extensions
    other.execute("INSERT INTO think_schedules (agent_key, id, source, kind, spec, task, task_repr, digest, anchor, "
                  "created_at, updated_at) VALUES ('A:a', 't', 'runtime', 'once', 'x', '{}', 'x', 'd', 0, 0, 0)")
    assert presence(db, "A:a").schedules
    other.close()
    with db.write() as conn:
        conn.execute("INSERT INTO think_agent_state VALUES ('A:a', 'leaf_id', '\"m\"')")
        assert presence(db, "A:a").state  # its own write, not committed yet
    db.execute("INSERT INTO think_submissions (agent_key, id, status, messages, digest, created_at) "
               "VALUES ('A:a', 's', 'pending', '[]', '', 0)")
    assert presence(db, "A:a") == Presence(True, True, False, False, False, True, False, True, True)


# One row per term of the statement (think_nb.store.presence._TERMS, in order): the subsystem it counts
# for, and a write that makes it true for agent ?.
_OLD = time.time() - 400 * 24 * 3600
_ROWS = (
    ("state", "INSERT INTO think_agent_state VALUES (?, 'leaf_id', '\"m\"')"),
    ("interrupted", "INSERT INTO think_stream_metadata VALUES (?, 'r', 0, 'streaming', 'dead-process', 0, 0)"),
    ("interrupted", ("INSERT INTO think_turns (agent_key, request_id, trigger, status, started_at, owner) "
                    "VALUES (?, 'r', 'send', 'running', 0, 'dead-process')")),
    ("child_runs", ("INSERT INTO think_child_runs (agent_key, run_id, child_key, child_class, child_name, status, "
                   "owner, started_at) VALUES (?, 'run', 'c', 'C', 'c', 'running', 'dead-process', 0)")),
    ("expired_actions", ("INSERT INTO think_action_ledger VALUES (?, 'k1', 'act', NULL, NULL, 'h', 'settled', NULL, "
                        f"0, {_OLD})")),
    ("expired_actions", ("INSERT INTO think_action_ledger VALUES (?, 'k2', 'act', NULL, NULL, 'h', 'pending', NULL, "
                        f"0, {_OLD})")),
    ("expired_actions", (f"INSERT INTO think_action_pending_approvals VALUES (?, 'e', 'act', 'call', NULL, '{{}}', "
                        f"NULL, {_OLD})")),
    ("submissions", ("INSERT INTO think_submissions (agent_key, id, status, messages, digest, created_at) "
                    "VALUES (?, 's', 'pending', '[]', '', 0)")),
    ("mcp_servers", "INSERT INTO think_mcp_servers VALUES (?, 'm', 'stdio', 'x', '[]', '{}', '{}', 'false', 1, 0)"),
    ("extensions", "INSERT INTO think_extensions VALUES (?, 'e', '1', '{}', '', 0)"),
    ("schedules", ("INSERT INTO think_schedules (agent_key, id, source, kind, spec, task, task_repr, digest, anchor, "
                  "created_at, updated_at) VALUES (?, 't', 'runtime', 'once', 'x', '{}', 'x', 'd', 0, 0, 0)")),
)


def test_any_two_terms_read_as_the_union_of_their_subsystems(tmp_path: Path) -> None:
    """Every term of the statement alone and with every other (two of one subsystem included: a
    subsystem's terms are OR-ed: added, a stream row and a turn row of one interrupted turn would read
    as `child_runs`), asked twice: the second answer comes from the statement over the tables known to
    hold rows, after another agent's creation read them."""
    import itertools

    from think_nb.store.presence import _TERMS

    assert [table for _, table, _ in _TERMS] == [sql.split()[2] for _, sql in _ROWS]  # one row per term
    fields = Presence._fields[1:]
    for n, picked in enumerate(itertools.chain(((i,) for i in range(len(_ROWS))),
                                               itertools.combinations(range(len(_ROWS)), 2))):
        db = open_database(tmp_path / f"{n}.sqlite")
        AgentStore(db, "A:a", "A", "a")
        with db.write() as conn:
            for i in picked:
                conn.execute(_ROWS[i][1], ("A:a",))
        want = Presence(True, **{f: any(_ROWS[i][0] == f for i in picked) for f in fields})
        assert presence(db, "A:a") == want, [_ROWS[i][1] for i in picked]
        assert presence(db, "A:other") == NEW  # the tables holding rows are known from here
        assert presence(db, "A:a") == want, [_ROWS[i][1] for i in picked]
        db.close()
