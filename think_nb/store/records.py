"""Stored turn records (table `think_turn_records`): what a turn's hook sites saw, one row per turn.

What a record holds is `think_nb.turns.turn_record`'s business; this module stores it. Rows are
kept as long as the turn's messages: never trimmed with the traces' window, deleted with their
conversation (`MessageStore.clear` deletes them with its messages). A long system prompt, the same
turn after turn, is stored once (`think_record_texts`) and referred to by its hash.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from think_nb import jsonsafe
from think_nb.store.db import Database

SHARED_CHARS = 64
"""A system prompt longer than this is stored once per distinct text and referred to by hash."""


@dataclass
class RecordRow:
    """One stored record: the turn, where it sits in its conversation, and the record itself."""

    request_id: str
    conversation_key: str
    parent_id: str | None
    message_id: str | None
    class_version: str
    record: dict[str, Any]


class TurnRecords:
    """The turn records of one agent."""

    def __init__(self, db: Database, agent_key: str) -> None:
        self.db, self.agent_key = db, agent_key

    def save(self, row: RecordRow) -> None:
        """Store (or replace) a turn's record; its system prompt, when long, once per distinct text
        (`think_record_texts`, by hash)."""
        record = dict(row.record)
        system = record.get("system")
        if isinstance(system, str) and len(system) > SHARED_CHARS:
            sha = hashlib.sha256(system.encode("utf-8", "surrogatepass")).hexdigest()[:32]
            self.db.execute("INSERT OR IGNORE INTO think_record_texts (sha, text) VALUES (?, ?)", (sha, system))
            record["system"] = {"sha": sha}
        self.db.execute("INSERT OR REPLACE INTO think_turn_records (agent_key, request_id, conversation_key, "
                        "parent_id, message_id, class_version, record, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (self.agent_key, row.request_id, row.conversation_key, row.parent_id, row.message_id,
                         row.class_version, jsonsafe.dumps_plain(record, jsonsafe.STORED_DEPTH), time.time()))

    def load(self, request_id: str) -> RecordRow | None:
        """The record of turn `request_id`, or None."""
        found = self.db.read("SELECT request_id, conversation_key, parent_id, message_id, class_version, record "
                             "FROM think_turn_records WHERE agent_key = ? AND request_id = ?",
                             (self.agent_key, request_id))
        if not found:
            return None
        rid, key, parent, message, version, text = found[0]
        record = jsonsafe.loads_stored(text)
        system = record.get("system")
        if isinstance(system, dict) and "sha" in system:
            shared = self.db.read("SELECT text FROM think_record_texts WHERE sha = ?", (system["sha"],))
            record["system"] = shared[0][0] if shared else None
        return RecordRow(rid, key, parent, message, version, record)

    def request_ids(self) -> list[str]:
        """Request ids of the recorded turns, oldest first."""
        return [r for (r,) in self.db.read("SELECT request_id FROM think_turn_records WHERE agent_key = ? "
                                           "ORDER BY created_at, rowid", (self.agent_key,))]

    def size(self, request_id: str) -> int:
        """Bytes the row's values take in SQLite (the sum of its columns' lengths), 0 when absent."""
        found = self.db.read("SELECT length(agent_key) + length(request_id) + length(conversation_key) + "
                             "coalesce(length(parent_id), 0) + coalesce(length(message_id), 0) + "
                             "length(class_version) + length(record) + 8 FROM think_turn_records "
                             "WHERE agent_key = ? AND request_id = ?", (self.agent_key, request_id))
        return int(found[0][0]) if found else 0
