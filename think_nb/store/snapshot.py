"""Regenerates `schema_snapshot.py`, the schema a new file starts from (`think_nb.store.schema`):
`python -m think_nb.store.snapshot` after adding a migration. It migrates a new in-memory file one
migration at a time and writes what `schema.dump` reads from it."""

from __future__ import annotations

import sqlite3

from think_nb.store import schema
from think_nb.store.migrations import MIGRATIONS, migrate


def write() -> None:
    memory = sqlite3.connect(":memory:", isolation_level=None)
    migrate(memory, snapshot=False)
    schema.SNAPSHOT.write_text(schema.render([step.__name__ for step in MIGRATIONS], schema.dump(memory)))
    memory.close()


if __name__ == "__main__":
    write()
    print(f"wrote {schema.SNAPSHOT}")
