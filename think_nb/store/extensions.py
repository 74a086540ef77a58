"""The run-time extensions of one agent (table `think_extensions`; Think keeps them under `ext:<name>`).

A row is what `load_extension` needs to load it again: the manifest (JSON) and the source. Load
state, tools and errors live in memory (`think_nb.extensions.manager`).
"""

from __future__ import annotations

import time

from think_nb import jsonsafe
from think_nb.store.db import Database


class ExtensionRows:
    """The stored extensions of one agent, in load order."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def put(self, manifest: dict, source: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO think_extensions VALUES (?, ?, ?, ?, ?, ?)",
                        (self.agent_key, manifest["name"], manifest["version"], jsonsafe.dumps_stored(manifest),
                         source, time.time()))

    def all(self) -> list[dict]:
        """`[{manifest, source}]`, oldest first."""
        rows = self.db.read("SELECT manifest, source FROM think_extensions WHERE agent_key = ? ORDER BY created_at",
                            (self.agent_key,))
        return [{"manifest": jsonsafe.loads_stored(m), "source": s} for m, s in rows]

    def delete(self, name: str) -> bool:
        return self.db.execute("DELETE FROM think_extensions WHERE agent_key = ? AND name = ?",
                               (self.agent_key, name)).rowcount == 1
