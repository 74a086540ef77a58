"""Retries of failed scheduled runs (issue 30: Think's `RetryOptions` on schedule / scheduleEvery /
a declared task; `think_nb.schedules.retry`), on a FakeClock: time moves only when a test says so,
nothing sleeps. Ported from Think's scheduled-tasks.test.ts ("retries scheduled task handlers
before recording failure")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents import eventually
from think_nb import ScheduledTask, Think
from think_nb.errors import UserError
from think_nb.schedules import retry as retries
from think_nb.schedules.table import schedules_frame
from think_nb.testing import FakeClock
from think_nb.testing import ScriptedModel as S

T0 = 1_767_225_600.0
RETRY = {"max_attempts": 3, "base_delay_ms": 1000, "max_delay_ms": 1000}  # each backoff below 1 s


def agent_on(clock: FakeClock, db: Path, calls: list, fail: int, tasks: dict | None = None) -> Think:
    """An agent whose method `flaky(ctx)` records `ctx` and raises for its first `fail` calls."""
    def flaky(self: Think, ctx: Any) -> None:
        calls.append(ctx)
        if len(calls) <= fail:
            raise RuntimeError(f"the feed is down ({len(calls)})")

    cls = type("Retrying", (Think,), {"get_model": lambda self: S([]).model, "schedule_clock": clock,
                                      "flaky": flaky, "get_scheduled_tasks": lambda self: tasks or {}})
    return cls("s", db=db)


async def stop(*agents: Think) -> None:
    for agent in agents:
        if agent.schedules_task is not None:
            agent.schedules_task.cancel()
            await asyncio.gather(agent.schedules_task, return_exceptions=True)


def status(agent: Think, task_id: str, expected: str, attempt: int) -> bool:
    row = agent.get_schedule(task_id)
    return row is not None and row["last_status"] == expected and row["attempt"] == attempt


async def test_a_failed_run_is_retried_with_backoff_then_succeeds(tmp_path: Path) -> None:
    clock, calls = FakeClock(T0), []
    agent = agent_on(clock, tmp_path / "a.sqlite", calls, fail=2)
    agent.schedule_every(60, agent.flaky, id="feed", retry=RETRY)
    clock.advance(60)
    await eventually(lambda: status(agent, "feed", "retrying", 1))
    row = agent.get_schedule("feed")
    assert (row["retry"], row["retry_for"], row["last_error"], row["next_run_at"]) == (
        RETRY, T0 + 60, "RuntimeError: the feed is down (1)", T0 + 120)
    assert T0 + 60 <= row["retry_at"] < T0 + 61  # full jitter below min(2 * 1000, 1000) ms
    clock.advance(1)
    await eventually(lambda: status(agent, "feed", "retrying", 2))
    clock.advance(1)
    await eventually(lambda: status(agent, "feed", "completed", 3))
    row = agent.get_schedule("feed")
    assert (row["retry_at"], row["retry_for"], row["last_error"], row["runs"], row["next_run_at"]) == (
        None, None, None, 3, T0 + 120)
    assert [c.attempt for c in calls] == [1, 2, 3]
    assert {(c.scheduled_for, c.occurrence_key, c.idempotency_key) for c in calls} == {
        (T0 + 60, f"feed:{round((T0 + 60) * 1000)}", calls[0].idempotency_key)}  # one occurrence, three attempts
    await stop(agent)


async def test_the_last_attempt_records_the_error_and_the_next_occurrence_runs(tmp_path: Path) -> None:
    clock, calls = FakeClock(T0), []
    agent = agent_on(clock, tmp_path / "a.sqlite", calls, fail=2)
    agent.schedule_every(60, agent.flaky, id="feed", retry={**RETRY, "max_attempts": 2})
    clock.advance(60)
    await eventually(lambda: status(agent, "feed", "retrying", 1))
    clock.advance(1)
    await eventually(lambda: status(agent, "feed", "error", 2))
    row = agent.get_schedule("feed")
    assert (row["last_error"], row["retry_at"], row["next_run_at"]) == (
        "RuntimeError: the feed is down (2)", None, T0 + 120)
    clock.advance(59)
    await eventually(lambda: status(agent, "feed", "completed", 1))
    assert [(c.scheduled_for, c.attempt) for c in calls] == [(T0 + 60, 1), (T0 + 60, 2), (T0 + 120, 1)]
    await stop(agent)


async def test_a_pending_retry_survives_a_restart(tmp_path: Path) -> None:
    clock, calls = FakeClock(T0), []
    first = agent_on(clock, tmp_path / "a.sqlite", calls, fail=1)
    first.schedule_every(3600, first.flaky, id="feed", retry=RETRY)
    clock.advance(3600)
    await eventually(lambda: status(first, "feed", "retrying", 1))
    await stop(first)  # the kernel goes down before the retry
    again = agent_on(clock, tmp_path / "a.sqlite", calls, fail=1)
    clock.advance(1)
    await eventually(lambda: status(again, "feed", "completed", 2))
    assert [(c.scheduled_for, c.attempt, c.agent is again) for c in calls] == [(T0 + 3600, 1, False),
                                                                               (T0 + 3600, 2, True)]
    await stop(again)


async def test_a_one_shot_task_is_kept_until_its_retries_settle(tmp_path: Path) -> None:
    clock, calls = FakeClock(T0), []
    agent = agent_on(clock, tmp_path / "a.sqlite", calls, fail=1)
    agent.schedule(30, agent.flaky, id="once", retry=True)
    clock.advance(30)
    await eventually(lambda: status(agent, "once", "retrying", 1))
    row = agent.get_schedule("once")
    assert row["next_run_at"] is None
    assert agent.get_schedules().to_dict("records")[0]["last_status"] == "retrying"
    assert schedules_frame([row])["next_run"].notna().all()  # the pending retry is when it runs next
    clock.advance(retries.upper_s(1, retries.DEFAULTS))
    await eventually(lambda: agent.get_schedule("once") is None)
    assert [c.attempt for c in calls] == [1, 2]
    await stop(agent)


async def test_a_declared_task_retries_before_recording_failure(tmp_path: Path) -> None:
    """Think: "retries scheduled task handlers before recording failure" (maxAttempts 2, a handler
    that throws once: two handler events, the next occurrence still armed)."""
    clock, calls = FakeClock(T0), []

    def throw_once(ctx: Any) -> None:
        calls.append(ctx)
        if len(calls) == 1:
            raise RuntimeError("throw once")

    tasks = {"workflow": ScheduledTask("every day at 09:00 in UTC", handler=throw_once,
                                       retry={"max_attempts": 2, "base_delay_ms": 1, "max_delay_ms": 1})}
    agent = agent_on(clock, tmp_path / "a.sqlite", [], fail=0, tasks=tasks)
    first = agent.get_schedule("workflow")["next_run_at"]
    clock.advance(first - T0)
    await eventually(lambda: status(agent, "workflow", "retrying", 1))
    clock.advance(0.001)
    await eventually(lambda: status(agent, "workflow", "completed", 2))
    assert [(c.kind, c.timezone, c.scheduled_for, c.attempt) for c in calls] == [("cron", "UTC", first, 1),
                                                                                 ("cron", "UTC", first, 2)]
    assert agent.get_schedule("workflow")["next_run_at"] == first + 86400
    await stop(agent)


@pytest.mark.parametrize(("retry", "needle"), [
    ({"maxAttempts": 2}, r"unknown key\(s\) \['maxAttempts'\]; .*max_attempts"),
    ({"max_attempts": 0}, "max_attempts = 0"),
    ({"base_delay_ms": -5}, "base_delay_ms = -5; give milliseconds > 0"),
    ({"base_delay_ms": 5000}, r"base_delay_ms \(5000\) is above max_delay_ms \(3000\)"),
    ("3", "retry is a dict"),
])
def test_bad_retry_options_are_one_line(tmp_path: Path, retry: Any, needle: str) -> None:
    agent = agent_on(FakeClock(T0), tmp_path / "a.sqlite", [], fail=0)
    with pytest.raises(UserError, match=needle) as info:
        agent.schedule_every(60, agent.flaky, id="x", retry=retry)
    assert "\n" not in str(info.value) and agent.get_schedule("x") is None


def test_the_backoff_is_full_jitter_below_the_capped_exponential() -> None:
    options = {"max_attempts": 5, "base_delay_ms": 100, "max_delay_ms": 3000}
    assert [retries.upper_s(n, options) for n in (1, 2, 3, 4, 5)] == [0.2, 0.4, 0.8, 1.6, 3.0]
    assert retries.delay_s(3, options, rand=lambda: 0.5) == 0.4
    assert retries.delay_s(5, options, rand=lambda: 0.0) == 0.0
