"""Recovering a turn a dead kernel left mid-stream (Think's orphaned-stream persistence).

A turn persists its message at step boundaries; between them, what streamed lives only in the
SQLite stream buffer (`stream_buffer.py`). When an agent is created and finds buffer rows still
`streaming` that another process wrote (the kernel that wrote them died), it rebuilds the
assistant message from the buffered chunks, stores it (replacing the shorter step-boundary copy)
with `metadata.interrupted = True`, and marks the rows `interrupted`. Nothing streamed is lost.
"""

from __future__ import annotations

import json
import time
from typing import Any

from think_nb.messages.accumulator import MessageAccumulator


def recover_interrupted_streams(agent: Any) -> int:
    """Store the partial messages of streams a dead process left; returns how many were recovered."""
    from think_nb.stream_buffer import _PROCESS

    db, key = agent._store.db, agent._store.agent_key
    rows = db.read("SELECT request_id FROM stream_metadata WHERE agent_key = ? AND status = 'streaming' "
                   "AND owner != ?", (key, _PROCESS))
    recovered = 0
    for (request_id,) in rows:
        chunks = [c for (segment,) in db.read("SELECT chunks FROM stream_chunks WHERE agent_key = ? AND "
                                              "request_id = ? ORDER BY seq", (key, request_id))
                  for c in json.loads(segment)]
        start = next((c for c in chunks if c.get("type") == "start" and c.get("messageId")), None)
        if start is not None and _store(agent, start["messageId"], chunks):
            recovered += 1
        db.execute("UPDATE stream_metadata SET status = 'interrupted', updated_at = ? WHERE agent_key = ? AND "
                   "request_id = ?", (time.time(), key, request_id))
    if recovered:
        agent._messages = agent._store.branch(limit=agent._hydration_limit())
    return recovered


def _store(agent: Any, message_id: str, chunks: list[dict]) -> bool:
    acc = MessageAccumulator(message_id)
    for chunk in chunks:
        acc.apply(chunk)
    for part in acc.parts:
        if part.get("state") == "streaming":
            part["state"] = "done"
    stored = agent._store.get(message_id)
    if stored is not None and len(stored.get("parts", [])) >= len(acc.parts) and stored == {**stored, **acc.message}:
        return False
    acc.message.setdefault("metadata", {})["interrupted"] = True
    if stored is not None:
        agent._store.update(acc.message)
    else:
        agent._store.append(acc.message, agent._store.leaf_id)
    return True
