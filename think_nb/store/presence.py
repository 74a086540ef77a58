"""`Presence`: which of an agent's subsystems have rows to act on, in one query.

Creating an agent must not cost a query per subsystem (issue 29 §4: 100 agents in one kernel,
a class's sub-agents or `agent.map` rows, are a real case). `presence(db, agent_key)` answers,
in one statement of primary-key lookups, what the runtime's start-up would otherwise ask each
table in turn; a subsystem whose answer is False is not read (nor made) until it is used:

    registered       the agent has a `think_agents` row (else it is registered, batched, later)
    state            it has any `think_agent_state` row (no row: the default session, no leaf)
    interrupted      a stream row still `streaming` or a turn still `running` that another
                     process owned (recovery, `think_nb.turns.recovery`)
    child_runs       an agent-tool run still `running` that another process owned
                     (re-attached, `think_nb.agent_tools.Reattach`)
    expired_actions  an action ledger row or parked call past its time to live (swept)
    submissions      a submission `pending` or `running` (recovered and drained)
    mcp_servers, extensions, schedules: stored rows to reconnect, load, re-arm.

Each answer is a superset of what the subsystem acts on (a row another *live* process owns
still answers True; the subsystem's own query tells it apart), never a subset.
"""

from __future__ import annotations

import re
import time
from typing import NamedTuple

from think_nb.store import owners
from think_nb.store.actions import PAUSED_TTL_S, PENDING_TTL_S, SETTLED_TTL_S
from think_nb.store.db import Database

# Each subsystem's answer is an OR of terms, one per table: (bit, table, condition on the agent's rows).
# ?1 agent key, ?2 this process (owners.PROCESS), ?3 / ?4 / ?5 the settled / pending / paused cut-offs.
_TERMS = (
    (0, "think_agent_state", "agent_key = ?1"),
    (1, "think_stream_metadata", "agent_key = ?1 AND status = 'streaming' AND owner != ?2"),
    (1, "think_turns", "agent_key = ?1 AND status = 'running' AND (owner IS NULL OR owner != ?2)"),
    (2, "think_child_runs", "agent_key = ?1 AND status = 'running' AND (owner IS NULL OR owner != ?2)"),
    (3, "think_action_ledger", "agent_key = ?1 AND status = 'settled' AND updated_at < ?3"),
    (3, "think_action_ledger", "agent_key = ?1 AND status = 'pending' AND updated_at < ?4"),
    (3, "think_action_pending_approvals", "agent_key = ?1 AND created_at < ?5"),
    (4, "think_submissions", "agent_key = ?1 AND status IN ('pending', 'running')"),
    (5, "think_mcp_servers", "agent_key = ?1"),
    (6, "think_extensions", "agent_key = ?1"),
    (7, "think_schedules", "agent_key = ?1"),
)
_TABLES = ("think_agents", *dict.fromkeys(table for _, table, _ in _TERMS))

# Opening a cursor on a table costs SQLite about as much as a lookup in it, and most files hold no rows
# at all in most of these tables (no MCP server, no schedule...): the statement asks only the tables
# that hold rows. Which ones do is read once (`_OCCUPIED`) and kept while neither this connection began
# a transaction (`Database.writes`) nor another connection committed (the file's `data_version`, read
# by the same statement: when it moved, the agent is asked again over all tables). (Reading the
# wal-index header from the `-shm` file would be cheaper, but closing any descriptor of that file drops
# SQLite's POSIX locks on it.) An agent not in `think_agents` has no rows at all (every write registers
# the agents made before it, in its own transaction: `Database.register_agent`), so the other tables
# are read only for a registered agent (SQLite evaluates a CASE branch only when taken); their answers
# come back as bits.
_VERSION = "(SELECT data_version FROM pragma_data_version)"
_OCCUPIED = f"SELECT {_VERSION}, " + ", ".join(f"EXISTS (SELECT 1 FROM {t})" for t in _TABLES)


def _statement(occupied: frozenset[str]) -> str:
    """The presence query over the `occupied` tables (every table: `_TABLES`), with the file's
    data_version."""
    if "think_agents" not in occupied:
        return f"SELECT 0, 0, {_VERSION}"  # no agent registered
    ors: dict[int, list[str]] = {}  # a subsystem's terms are OR-ed, never added (2 + 2 would be bit 2)
    for bit, table, where in _TERMS:
        if table in occupied:
            ors.setdefault(bit, []).append(f"EXISTS (SELECT 1 FROM {table} WHERE {where})")
    terms = " + ".join(f"{1 << bit} * ({' OR '.join(found)})" for bit, found in ors.items()) or "0"
    return f"""SELECT registered, CASE WHEN registered THEN {terms} ELSE 0 END, {_VERSION}
FROM (SELECT EXISTS (SELECT 1 FROM think_agents WHERE key = ?1) AS registered)"""


def _bound(statement: str) -> int:
    """How many parameters `statement` binds: up to the highest it names (?1 ... ?5)."""
    return max((int(n) for n in re.findall(r"\?(\d)", statement)), default=0)


_SQL = _statement(frozenset(_TABLES))
"""The presence query over every table."""

class Presence(NamedTuple):
    """What `presence()` found (see the module docstring); every field a bool."""

    registered: bool
    state: bool
    interrupted: bool
    child_runs: bool
    expired_actions: bool
    submissions: bool
    mcp_servers: bool
    extensions: bool
    schedules: bool


def presence(db: Database, agent_key: str) -> Presence:
    """One query: which subsystems of agent `agent_key` have rows to act on at its creation.

    What this connection knows of the file's tables (`db.memo["presence"]`: its `writes`, the file's
    data_version, the statement over the tables holding rows then, how many parameters it binds)
    is used while neither moved; else the statement over every table runs, and what is known is
    read again (outside a transaction: rows this connection has not committed are not known)."""
    now = time.time()
    params = (agent_key, owners.PROCESS, now - SETTLED_TTL_S, now - PENDING_TTL_S, now - PAUSED_TTL_S)
    with db.lock:  # no write of this process's other threads between what is known and the query
        known = db.memo.get("presence")
        if known is not None and known[0] == db.writes and not db.in_transaction:
            registered, bits, version = db.read(known[2], params[:known[3]])[0]
            if version == known[1]:  # no other connection committed since
                return _FOUND[bits] if registered else NEW
        registered, bits, _ = db.read(_SQL, params)[0]
        if not db.in_transaction:
            version, *rows = db.read(_OCCUPIED)[0]
            statement = _statement(frozenset(t for t, held in zip(_TABLES, rows, strict=True) if held))
            db.memo["presence"] = (db.writes, version, statement, _bound(statement))
    return _FOUND[bits] if registered else NEW


NEW = Presence(*(False,) * 9)
"""An agent never registered: nothing stored."""

_FOUND = tuple(Presence(True, *(bool(bits >> n & 1) for n in range(8))) for bits in range(256))
"""A registered agent's `Presence` by the statement's bits."""
