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

import time
from typing import NamedTuple

from think_nb.store import owners
from think_nb.store.actions import PAUSED_TTL_S, PENDING_TTL_S, SETTLED_TTL_S
from think_nb.store.db import Database

# One statement: an agent not in `think_agents` has no rows at all (every write registers the agents made
# before it, in its own transaction: `Database.register_agent`), so the other tables are read only for a
# registered agent (SQLite evaluates a CASE branch only when taken); their answers come back as bits.
_SQL = """SELECT registered, CASE WHEN registered THEN
   EXISTS (SELECT 1 FROM think_agent_state WHERE agent_key = ?1)
 + 2 * (EXISTS (SELECT 1 FROM think_stream_metadata WHERE agent_key = ?1 AND status = 'streaming' AND owner != ?2)
        OR EXISTS (SELECT 1 FROM think_turns WHERE agent_key = ?1 AND status = 'running'
                   AND (owner IS NULL OR owner != ?2)))
 + 4 * EXISTS (SELECT 1 FROM think_child_runs WHERE agent_key = ?1 AND status = 'running'
               AND (owner IS NULL OR owner != ?2))
 + 8 * (EXISTS (SELECT 1 FROM think_action_ledger WHERE agent_key = ?1 AND status = 'settled'
                AND updated_at < ?3)
        OR EXISTS (SELECT 1 FROM think_action_ledger WHERE agent_key = ?1 AND status = 'pending'
                   AND updated_at < ?4)
        OR EXISTS (SELECT 1 FROM think_action_pending_approvals WHERE agent_key = ?1 AND created_at < ?5))
 + 16 * EXISTS (SELECT 1 FROM think_submissions WHERE agent_key = ?1 AND status IN ('pending', 'running'))
 + 32 * EXISTS (SELECT 1 FROM think_mcp_servers WHERE agent_key = ?1)
 + 64 * EXISTS (SELECT 1 FROM think_extensions WHERE agent_key = ?1)
 + 128 * EXISTS (SELECT 1 FROM think_schedules WHERE agent_key = ?1)
 ELSE 0 END
FROM (SELECT EXISTS (SELECT 1 FROM think_agents WHERE key = ?1) AS registered)"""


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
    """One query: which subsystems of agent `agent_key` have rows to act on at its creation."""
    now = time.time()
    registered, bits = db.read(_SQL, (agent_key, owners.PROCESS, now - SETTLED_TTL_S, now - PENDING_TTL_S,
                                      now - PAUSED_TTL_S))[0]
    if not registered:
        return NEW
    return Presence(True, *(bool(bits >> n & 1) for n in range(8)))


NEW = Presence(*(False,) * 9)
"""An agent never registered: nothing stored."""
