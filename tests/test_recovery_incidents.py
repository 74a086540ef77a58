"""A recovery chain's incident record and the budgets that seal a runaway chain
(`think_nb.turns.incidents`; Think's `onChatRecovery` budget cases in think-session.test.ts).

Two entry paths, as in tests/test_durable.py: a turn a dead process left in a real SQLite file
(found when the agent is created again), and a turn the stall watchdog ended in this process
(chained: each recovery turn may stall too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import scripted_agent, warm_litellm
from helpers_comm import custom_msgs, from_js
from test_durable import agent_class, left_by_dead_process, partial_chunks, settle_recovery
from think_nb import RecoveryDecision, Think, events
from think_nb.binding import runtime_of
from think_nb.store import owners
from think_nb.testing import ScriptedModel as S
from think_nb.turns import incidents
from think_nb.turns.recovery import _count, collect


def cut_again(agent: Think, monkeypatch: pytest.MonkeyPatch, chunks: list[dict], *, at: float | None = None) -> None:
    """What an earlier reopen of `agent`'s file left: it handled `req-dead` and started `req-again`
    to continue it, and `req-again` was cut off too (its process died) after recording `chunks`."""
    store = runtime_of(agent).store
    if at is not None:
        monkeypatch.setattr(incidents, "clock", lambda: at)
    collect(store)
    incidents.observe(store, "req-dead", 0, max_attempts=3, max_work=1000, no_progress_s=None)
    _count(store, "req-dead", "req-again")
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", "dead-process")
        store.turn_log.start("req-again", "recovery-continue", True)
        store.streams.set_status("req-again", True, "streaming")
        store.streams.append("req-again", chunks)


NO_PROGRESS = [{"type": "start", "messageId": "m-again"}, {"type": "start-step"}]


def continuing(seen: list, **attrs: Any) -> type[Think]:
    def on_chat_recovery(self: Think, ctx: Any) -> object:
        seen.append(ctx)
        return {"continue": True}
    return agent_class(S([[S.text(" done.")]]), on_chat_recovery=on_chat_recovery, **attrs)


# -- progress resets the attempts ------------------------------------------------------------------
async def test_an_attempt_that_recorded_parts_resets_the_attempt_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With one attempt allowed, a second one is allowed when the first recorded new parts (Think:
    `maxAttempts` resets on progress); it is read from the attempt's own stream, not the stored
    history (which compaction rewrites)."""
    seen: list = []
    cls = continuing(seen, chat_recovery_max_attempts=1)
    first = cls("r", db=tmp_path / "a.sqlite")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    cut_again(first, monkeypatch, partial_chunks("m-again", "more"))
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert [(c.request_id, c.incident_id, c.attempt, c.exhausted, c.work) for c in seen] == [
        ("req-again", "req-dead", 1, False, 1)]  # work 1: its text part (step-start is no progress)
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed"
    assert [(t["request_id"] if t["request_id"].startswith("req-") else "new", t["status"]) for t in agent.turns()] \
        == [("req-dead", "interrupted"), ("req-again", "interrupted"), ("new", "completed")]


async def test_attempts_without_progress_still_exhaust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []
    cls = continuing(seen, chat_recovery_max_attempts=1)
    first = cls("r", db=tmp_path / "a.sqlite")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    cut_again(first, monkeypatch, NO_PROGRESS)
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert [(c.attempt, c.exhausted_reason) for c in seen] == [(2, "max_attempts_exceeded")]
    assert agent.recovery_task is None


async def test_a_stalled_chain_that_keeps_progressing_keeps_recovering() -> None:
    await warm_litellm()
    seen: list = []

    def decide(self: Think, ctx: Any) -> RecoveryDecision:
        seen.append(ctx)
        return RecoveryDecision(continue_=True)

    script = S([[S.text(f"part {n} "), S.stall()] for n in range(4)] + [[S.text("the end.")]])
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2, chat_recovery_max_attempts=1,
                           on_chat_recovery=decide)
    await agent.send("go")
    await settle_recovery(agent)
    assert [(c.attempt, c.exhausted, c.work) for c in seen] == [(1, False, 0), (1, False, 1), (1, False, 2),
                                                                 (1, False, 3)]
    assert [t["status"] for t in agent.turns()] == ["aborted"] * 4 + ["completed"]
    assert incidents.records(runtime_of(agent).store) == {}  # the chain completed: its record is deleted


# -- what seals a chain ----------------------------------------------------------------------------
async def test_a_work_budget_seals_a_runaway_chain() -> None:
    await warm_litellm()
    seen: list = []
    sealed: list = []

    def decide(self: Think, ctx: Any) -> RecoveryDecision:
        seen.append(ctx)
        return RecoveryDecision(continue_=True)

    script = S([[S.text(f"part {n} "), S.stall()] for n in range(6)])
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2, chat_recovery_max_attempts=1,
                           chat_recovery_max_recovery_work=2, on_chat_recovery=decide,
                           on_exhausted=lambda self, ctx: sealed.append(ctx))
    recorded: list = []
    with events.subscribe(recorded.append, names="chat:recovery:exhausted"):
        await agent.send("go")
        await settle_recovery(agent)
    assert [(c.work, c.exhausted_reason) for c in seen] == [(0, None), (1, None), (2, None),
                                                            (3, "work_budget_exceeded")]
    assert [t["status"] for t in agent.turns()] == ["aborted"] * 4  # nothing ran after the seal
    assert [c.request_id for c in sealed] == [seen[-1].request_id]
    assert [e.payload["reason"] for e in recorded] == ["work_budget_exceeded"]
    assert incidents.records(runtime_of(agent).store) == {}


async def test_should_keep_recovering_false_seals_the_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list = []
    seen: list = []
    sealed: list = []

    def should_keep_recovering(self: Think, ctx: Any) -> bool:
        asked.append((ctx.incident_id, ctx.request_id, ctx.attempt, ctx.max_attempts, ctx.work, ctx.age_ms))
        return False

    cls = continuing(seen, should_keep_recovering=should_keep_recovering,
                     on_exhausted=lambda self, ctx: sealed.append(ctx.exhausted_reason))
    monkeypatch.setattr(incidents, "clock", lambda: 1000.0)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert asked == [("req-dead", "req-dead", 1, 3, 0, 0)]
    assert [(c.exhausted, c.exhausted_reason) for c in seen] == [(True, "recovery_aborted")]
    assert sealed == ["recovery_aborted"]
    assert agent.recovery_task is None
    assert [t["status"] for t in agent.turns()] == ["interrupted"]


@pytest.mark.parametrize(("quiet_s", "reason"), [(301.0, "no_progress_timeout"), (299.0, None)])
async def test_a_chain_without_progress_for_the_window_is_sealed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet_s: float, reason: str | None) -> None:
    seen: list = []
    cls = continuing(seen, chat_recovery_no_progress_timeout=300.0)
    first = cls("r", db=tmp_path / "a.sqlite")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    cut_again(first, monkeypatch, NO_PROGRESS, at=1000.0)
    monkeypatch.setattr(incidents, "clock", lambda: 1000.0 + quiet_s)
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert [(c.attempt, c.exhausted_reason, c.age_ms) for c in seen] == [(2, reason, int(quiet_s * 1000))]
    assert (agent.recovery_task is None) == (reason is not None)
    if agent.recovery_task is not None:
        (result,) = await agent.recovery_task
        assert result.status == "completed"


# -- the incident record ---------------------------------------------------------------------------
async def test_the_incident_record_is_deleted_when_the_chain_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []
    cls = continuing(seen)
    monkeypatch.setattr(incidents, "clock", lambda: 1000.0)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    store = runtime_of(agent).store
    assert incidents.records(store) == {"req-dead": {"attempts": 0, "work": 0, "created_at": 1000.0,
                                                     "progress_at": 1000.0}}
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed"
    assert incidents.records(store) == {} and store.state.get(incidents.RECORDS_KEY) is None


async def test_a_declined_recovery_deletes_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = agent_class(S([]))  # the default on_chat_recovery: persist, do not continue
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert incidents.records(runtime_of(agent).store) == {}


async def test_an_abandoned_incident_record_is_swept_after_its_ttl(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []
    cls = continuing(seen)
    first = cls("r", db=tmp_path / "a.sqlite")
    store = runtime_of(first).store
    monkeypatch.setattr(incidents, "clock", lambda: 1000.0)
    incidents.observe(store, "req-old", 0, max_attempts=3, max_work=1000, no_progress_s=None)
    _count(store, "req-old", "req-old-2")  # a chain whose recovery turn never ended anywhere
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    monkeypatch.setattr(incidents, "clock", lambda: 1000.0 + incidents.INCIDENT_TTL_S - 1)
    cls("r", db=tmp_path / "b.sqlite")  # another file: nothing of this one is read
    assert set(incidents.records(store)) == {"req-old"}
    monkeypatch.setattr(incidents, "clock", lambda: 1000.0 + incidents.INCIDENT_TTL_S + 1)
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert set(incidents.records(runtime_of(agent).store)) == {"req-dead"}
    assert "req-old-2" not in runtime_of(agent).store.state.get(incidents.RECORDS_KEY)["roots"]
    assert agent.recovery_task is not None
    await agent.recovery_task


# -- on_exhausted ----------------------------------------------------------------------------------
async def test_an_on_exhausted_that_raises_still_delivers_the_terminal_state(
        recording_comm: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb.panel import protocol
    from think_nb.panel.widget import INTERRUPTED_TEXT, ChatPanel

    calls: list = []

    def on_exhausted(self: Think, ctx: Any) -> None:
        calls.append((ctx.request_id, ctx.exhausted_reason, ctx.partial_text))
        raise RuntimeError("on_exhausted broke")

    seen: list = []
    cls = continuing(seen, chat_recovery_max_attempts=0, on_exhausted=on_exhausted)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    recorded: list = []
    with events.subscribe(recorded.append, names="chat:recovery:*"):
        agent = cls("r", db=tmp_path / "a.sqlite")
    assert calls == [("req-dead", "max_attempts_exceeded", "half an ans")]
    assert [e.name for e in recorded] == ["chat:recovery:detected", "chat:recovery:exhausted"]
    assert agent.recovery_task is None
    assert [(t["request_id"], t["status"]) for t in agent.turns()] == [("req-dead", "interrupted")]
    assert agent.messages[-1]["metadata"]["interrupted"] is True
    assert incidents.records(runtime_of(agent).store) == {}
    view = ChatPanel(agent)  # a view that opens now is told the turn ended interrupted
    before = len(custom_msgs(view))
    from_js(view, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    assert custom_msgs(view)[before:] == [protocol.stream_resuming("req-dead", "p")]
    before = len(custom_msgs(view))
    from_js(view, {"type": protocol.STREAM_RESUME_ACK, "id": "req-dead", "probeId": "p"})
    (frame,) = custom_msgs(view)[before:]
    assert frame["replay"] and frame["done"] and frame["error"]
    assert frame["chunks"][-1] == {"type": "error", "errorText": INTERRUPTED_TEXT}


@pytest.mark.parametrize(("forwarded", "attempt"), [({"text": "child says", "tools": ["add"]}, 1),
                                                    ({"text": "", "tools": []}, 2)])
async def test_a_sub_agents_forwarded_progress_credits_the_parents_chain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forwarded: dict, attempt: int) -> None:
    """The parent's attempt recorded nothing of its own but the `data-subagent` part its delegated
    child's progress is forwarded into: that progress resets the parent's attempts (Think's
    sub-agent forwarding credit); an empty forward is no progress."""
    seen: list = []
    cls = continuing(seen, chat_recovery_max_attempts=1)
    first = cls("r", db=tmp_path / "a.sqlite")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    cut_again(first, monkeypatch, [*NO_PROGRESS, {"type": "data-subagent", "id": "req-child", "data": {
        "agent": "r/Child:c", "label": "Child · c", "request_id": "req-child", "status": "streaming", **forwarded}}])
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert [(c.attempt, c.work, c.exhausted) for c in seen] == [(attempt, 2 if attempt == 1 else 0, attempt > 1)]
    if agent.recovery_task is not None:
        (result,) = await agent.recovery_task
        assert result.status == "completed"


async def test_progress_counts_when_the_history_was_compacted_between_attempts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress is read from the attempt's own stream: compacting the history between two
    attempts (Think's compaction-proof progress) does not hide it, and the attempts reset."""
    from think_nb.session import create_compact_function

    seen: list = []
    script = S([])

    def on_chat_recovery(self: Think, ctx: Any) -> object:
        seen.append((ctx.attempt, ctx.exhausted, ctx.work))
        return {"continue": True}

    cls = type("Compacted", (Think,), {
        "get_model": lambda self: script.model, "include_workspace_tools": False,
        "configure_session": lambda self, s: s.on_compaction(create_compact_function(tail_token_budget=30)),
        "on_chat_recovery": on_chat_recovery, "chat_recovery_max_attempts": 1})
    first = cls("r", db=tmp_path / "a.sqlite")
    for n in range(6):
        script.steps.append([S.text(f"Answer {n}: details on topic {n}.")])
        await first.send(f"Question {n} about topic {n}")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    cut_again(first, monkeypatch, partial_chunks("m-again", "more"))
    script.steps.append([S.text("## Topic\nTopics 0-3.")])
    assert await first.compact() is not None
    script.steps.append([S.text(" done.")])
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert seen == [(1, False, 1)]
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed"


async def test_an_async_on_exhausted_is_awaited_and_its_raise_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    told = asyncio.Event()

    async def on_exhausted(self: Think, ctx: Any) -> None:
        await asyncio.sleep(0)
        told.set()
        raise RuntimeError("on_exhausted broke")

    cls = continuing([], chat_recovery_max_attempts=0, on_exhausted=on_exhausted)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    await asyncio.wait_for(told.wait(), 60)
    assert agent.recovery_task is None
    assert [(t["request_id"], t["status"]) for t in agent.turns()] == [("req-dead", "interrupted")]
    assert runtime_of(agent).last_terminal() == ("req-dead", "interrupted")
