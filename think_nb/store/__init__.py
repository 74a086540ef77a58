"""Storage: one SQLite file per notebook (WAL, busy timeout, named append-only migrations).

- `location.py`: where the file lives (`.think/<notebook-stem>.sqlite` beside the notebook).
- `db.py`: the shared connection per file, opened and migrated once per process.
- `migrations.py`: the schema, as named migrations recorded in `_think_nb_migrations`.
- `messages.py`: an agent's UIMessages as a tree (parent id), its current branch, its state.
"""

from think_nb.store.db import Database, open_database
from think_nb.store.location import default_db_path
from think_nb.store.messages import MessageStore

__all__ = ["Database", "MessageStore", "default_db_path", "open_database"]
