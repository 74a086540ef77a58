"""Recovering a turn a dead kernel left mid-stream (Think's orphaned-stream persistence).

A turn persists its message at step boundaries; between them, what streamed lives only in the
stream tables (`think_nb.store.streams`, written by the engine's `StreamRecorder` for every
turn, panel or not). When an agent is created and finds rows still `streaming` that another
process wrote (the kernel that wrote them died), it rebuilds the assistant message from the
recorded chunks, stores it (replacing the shorter step-boundary copy) with
`metadata.interrupted = True`, and marks the rows `interrupted`. Nothing recorded is lost.
"""

from __future__ import annotations

from think_nb.messages.accumulator import MessageAccumulator
from think_nb.store.agent import AgentStore


def recover_interrupted_streams(store: AgentStore) -> int:
    """Store the partial messages of streams a dead process left; returns how many were recovered
    (the caller reloads its branch when > 0)."""
    recovered = 0
    for request_id in store.streams.orphaned():
        chunks = [c for segment in store.streams.segments(request_id) for c in segment]
        start = next((c for c in chunks if c.get("type") == "start" and c.get("messageId")), None)
        if start is not None and _store(store, start["messageId"], chunks):
            recovered += 1
        store.streams.mark(request_id, "interrupted")
    return recovered


def _store(store: AgentStore, message_id: str, chunks: list[dict]) -> bool:
    acc = MessageAccumulator(message_id)
    for chunk in chunks:
        acc.apply(chunk)
    for part in acc.parts:
        if part.get("state") == "streaming":
            part["state"] = "done"
    stored = store.messages.get(message_id)
    if stored is not None and len(stored.get("parts", [])) >= len(acc.parts) and stored == {**stored, **acc.message}:
        return False
    acc.message.setdefault("metadata", {})["interrupted"] = True
    if stored is not None:
        store.messages.update(acc.message)
    else:
        store.messages.append(acc.message, store.messages.leaf_id)
    return True
