"""Best-effort start-up steps (`think_nb.startup`; Think's `getOnStartDegradations()`,
cloudflare/agents#1710). Ported from Think's onstart-degraded.test.ts: an agent whose start-up step
fails is created anyway, lists the failure, emits `chat:onstart:degraded`, still chats, and a later
sync recovers the transcript. Real SQLite files; the failures are real (user code raising, rows
SQLite holds but think_nb cannot read back)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from test_durable import agent_class, left_by_dead_process, partial_chunks
from think_nb import Think, events
from think_nb.binding import runtime_of
from think_nb.startup import DegradedStartWarning
from think_nb.testing import ScriptedModel as S


def failing_schedules_class(script: S) -> type[Think]:
    def get_scheduled_tasks(self: Think) -> dict:
        raise RuntimeError("simulated get_scheduled_tasks failure")

    return type("ReconcileFails", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False,
                                             "get_scheduled_tasks": get_scheduled_tasks})


async def test_an_agent_whose_get_scheduled_tasks_raises_is_created_and_chats(tmp_path: Path) -> None:
    """onstart-degraded.test.ts: "agent starts and serves despite getScheduledTasks() throwing",
    "chat still works on the degraded agent"."""
    script = S([[S.text("hello back")]])
    with pytest.warns(DegradedStartWarning, match=r"'scheduled-task-reconcile' failed .*simulated get_scheduled_tasks "
                                                  r"failure.*fix get_scheduled_tasks\(\)"):
        agent = failing_schedules_class(script)("r", db=tmp_path / "a.sqlite")
    listed = agent.get_on_start_degradations()
    (degradation,) = listed
    assert degradation["step"] == "scheduled-task-reconcile"
    assert "simulated get_scheduled_tasks failure" in degradation["error"]
    listed.clear()
    degradation["step"] = "changed by the caller"
    assert agent.get_on_start_degradations() == [  # hydration-budget.test.ts: "degradations accessor" (a copy)
        {"step": "scheduled-task-reconcile", "error": "HookError: ReconcileFails.get_scheduled_tasks() raised "
                                                      "RuntimeError: simulated get_scheduled_tasks failure"}]
    result = await agent.send("hello")
    assert result.status == "completed" and result.error is None
    assert [(m["role"], m["parts"][-1]["text"]) for m in agent.messages] == [("user", "hello"),
                                                                          ("assistant", "hello back")]


async def test_a_failed_start_up_step_emits_chat_onstart_degraded_once(tmp_path: Path) -> None:
    """onstart-degraded.test.ts: "emits a chat:onstart:degraded observability event"."""
    seen: list[events.Event] = []
    with events.subscribe(seen.append, names="chat:onstart:*"), pytest.warns(DegradedStartWarning):
        agent = failing_schedules_class(S([]))("r", db=tmp_path / "a.sqlite")
    (event,) = seen
    assert (event.name, event.agent, event.payload["step"]) == ("chat:onstart:degraded", "ReconcileFails:r",
                                                                "scheduled-task-reconcile")
    assert event.payload["error"] == agent.get_on_start_degradations()[0]["error"]


def break_message(db: Path, message_id: str) -> str:
    """Overwrite a stored message with JSON SQLite accepts and think_nb cannot read back (a lone
    surrogate escape, as a foreign writer may leave; its triggers parse the row, so it must be JSON);
    returns what was there."""
    with sqlite3.connect(db) as conn:
        (content,) = conn.execute("SELECT content FROM think_messages WHERE id = ?", (message_id,)).fetchone()
        broken = json.dumps({"id": message_id, "role": "user", "parts": [{"type": "text", "text": "?"}]})
        broken = broken.replace('"?"', '"\\ud800"')
        conn.execute("UPDATE think_messages SET content = ? WHERE id = ?", (broken, message_id))
    return str(content)


def mend_message(db: Path, message_id: str, content: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE think_messages SET content = ? WHERE id = ?", (content, message_id))


async def test_an_unreadable_transcript_starts_empty_and_the_next_turn_reads_it_again(tmp_path: Path) -> None:
    """onstart-degraded.test.ts: "agent starts with an empty in-memory view instead of bricking",
    "persistence keeps working and a later sync recovers the history"."""
    db = tmp_path / "a.sqlite"
    script = S([[S.text("first answer")], [S.text("still here")]])
    cls = agent_class(script, tools=[], include_workspace_tools=False)
    first = cls("h", db=db)
    assert (await first.send("remember this")).status == "completed"
    before = first.messages
    saved = break_message(db, before[0]["id"])
    seen: list[events.Event] = []
    agent = cls("h", db=db)  # hydration is lazy: the degradations accessor reads the branch first
    with events.subscribe(seen.append, names="chat:onstart:degraded"), pytest.warns(
            DegradedStartWarning, match=r"'transcript-hydration' failed .*next turn reads it again"):
        degradations = agent.get_on_start_degradations()
    (degradation,) = degradations
    assert degradation["step"] == "transcript-hydration" and degradation["error"].startswith("JSONDecodeError")
    assert [e.payload for e in seen] == [degradation]
    assert agent.messages == []  # an empty view, not an exception; storage untouched
    mend_message(db, before[0]["id"], saved)
    result = await agent.send("are you alive?")
    assert result.status == "completed"
    assert agent.get_on_start_degradations() == []  # the turn's sync read the branch: recovered
    assert [(m["role"], m["parts"][-1]["text"]) for m in agent.messages] == [
        ("user", "remember this"), ("assistant", "first answer"), ("user", "are you alive?"),
        ("assistant", "still here")]
    assert cls("h", db=db).messages == agent.messages  # what is stored: one branch, nothing forked
    sent = script.requests[1]["messages"]  # the model saw the history the degraded view did not show
    assert "remember this" in str(sent) and "first answer" in str(sent)


async def test_a_failing_recovery_of_a_dead_processs_turn_degrades_and_is_retried_on_the_next_creation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Think's `durable-work-recovery` step: a dead process's turn whose recorded stream cannot be
    read back does not stop the agent; created again once the row reads, it is recovered."""
    db = tmp_path / "a.sqlite"
    cls = agent_class(S([[S.text("fresh answer")]]), tools=[], include_workspace_tools=False)
    left_by_dead_process(cls("d", db=db), monkeypatch, "req-dead", partial_chunks())
    with sqlite3.connect(db) as conn:
        (chunks,) = conn.execute("SELECT chunks FROM think_stream_chunks WHERE request_id = 'req-dead'").fetchone()
        conn.execute("UPDATE think_stream_chunks SET chunks = '[{\"type\": ' WHERE request_id = 'req-dead'")
    with pytest.warns(DegradedStartWarning, match=r"'durable-work-recovery' failed"):
        agent = cls("d", db=db)
    assert [d["step"] for d in agent.get_on_start_degradations()] == ["durable-work-recovery"]
    assert agent.recovery_task is None
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE think_stream_chunks SET chunks = ? WHERE request_id = 'req-dead'", (chunks,))
    again = cls("d", db=db)
    assert again.get_on_start_degradations() == []
    assert [(m["role"], m["parts"][-1]["text"]) for m in again.messages] == [("user", "hi"),
                                                                          ("assistant", "half an ans")]
    assert [(t["request_id"], t["status"]) for t in again.turns()] == [("req-dead", "interrupted")]
    assert runtime_of(again).store.streams.meta("req-dead") == (False, "interrupted")

