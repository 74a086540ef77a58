"""Storage: one SQLite file per notebook (WAL, busy timeout, named append-only migrations).

Every table is owned here; no SQL lives outside this package.

- `location.py`: where the file lives (`.think/<notebook-stem>.sqlite` beside the notebook).
- `db.py`: the shared connection per file, opened and migrated once per process.
- `migrations.py`: the schema, as named migrations recorded in `_think_nb_migrations`; every table,
  index and trigger is named `think_*`, so a user's own tables in the file never collide with them.
- `schema.py`: the schema a new file gets in one step (`schema_snapshot.py`, written by `snapshot.py`).
- `agent.py`: `AgentStore`, the repositories of one agent: `messages.py` (UIMessages as a tree),
  `fts.py` (full-text queries), `state.py` (key/value state), `turn_log.py`, `traces.py` (hook
  traces), `streams.py` (the resumable stream), `sessions.py`, `blocks.py` (context blocks and
  searchable entries), `compactions.py`, `approvals.py` (the approvals ledger), `submissions.py`
  (the durable ledger), `schedules.py`, `workspace.py` (workspace files), `mcp_servers.py`,
  `extensions.py`.
- `owners.py`: which process owns a running turn (an OS file lock per process).
- Agent-independent lookups of a file: `agent.stored_agent_names`, `agent.stored_sub_agent_keys`.
"""

from think_nb.store.agent import AgentStore
from think_nb.store.db import Database, open_database
from think_nb.store.location import default_db_path
from think_nb.store.messages import MessageStore

__all__ = ["AgentStore", "Database", "MessageStore", "default_db_path", "open_database"]
