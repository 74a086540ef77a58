"""Scheduled tasks (issue 12 item 6; Think's getScheduledTasks / schedule / scheduleEvery), on a
FakeClock: time moves only when a test says so; nothing sleeps."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agents import eventually
from think_nb import ScheduledTask, Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.schedules import spec as specs
from think_nb.testing import FakeClock
from think_nb.testing import ScriptedModel as S

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a Thursday


@pytest.mark.parametrize(("when", "kind", "text", "first"), [
    (90, "delay", "in 90 s", T0 + 90),
    ("every 5 minutes", "interval", "every 300 seconds", T0 + 300),
    ("Every  1   HOUR", "interval", "every 3600 seconds", T0 + 3600),
    ("every 2 seconds", "interval", "every 2 seconds", T0 + 2),
    ("every day at 09:30 in UTC", "cron", "30 9 * * *", T0 + 9.5 * 3600),
    ("every weekday at 08:00 in UTC", "cron", "0 8 * * 1-5", T0 + 8 * 3600),
    ("every week on mon,sat at 17:00 in UTC", "cron", "0 17 * * 1,6", T0 + 2 * 86400 + 17 * 3600),
    ("every day at 09:00 in europe/paris", "cron", "0 9 * * *", T0 + 8 * 3600),
    ("*/15 * * * *", "cron", "*/15 * * * *", T0 + 900),
])
def test_when_forms_parse_to_a_spec_and_first_occurrence(when: object, kind: str, text: str, first: float) -> None:
    spec = specs.parse(when, "UTC" if kind == "cron" and "in " not in str(when) else None)
    assert (spec.kind, spec.text) == (kind, text)
    assert spec.first(T0) == first


@pytest.mark.parametrize(("when", "needle"), [
    ("sometimes", "neither a known form nor a cron expression"),
    ("every day at 25:00", "not a time of day"),
    ("every week on mon,monday at 10:00", "names a day twice"),
    ("every week on funday at 10:00", "not a day"),
    ("every 5 minutes in Europe/Paris", "an interval takes no timezone"),
    ("every day at 09:00 in Mars/Olympus", "not an IANA time zone"),
    (-1, "a delay is a number of seconds"),
    (True, "is not a time"),
    ("", "is not a time"),
])
def test_bad_when_is_one_line_naming_the_forms(when: object, needle: str) -> None:
    with pytest.raises(UserError, match=needle) as info:
        specs.parse(when)
    assert "\n" not in str(info.value)


def agent_on(clock: FakeClock, db: Path, script: S | None = None, tasks: dict | None = None,
             **attrs: object) -> Think:
    script = script or S([[S.text(f"reply {n}")] for n in range(20)])
    cls = type("Scheduled", (Think,), {"get_model": lambda self: script.model, "schedule_clock": clock,
                                       "get_scheduled_tasks": lambda self: tasks or {}, **attrs})
    return cls("s", db=db)


def user_texts(agent: Think) -> list[str]:
    return [m["parts"][-1]["text"] for m in agent.messages if m["role"] == "user"]


async def stop(*agents: Think) -> None:
    for agent in agents:
        if agent.schedules_task is not None:
            agent.schedules_task.cancel()
            await asyncio.gather(agent.schedules_task, return_exceptions=True)


async def test_a_declared_prompt_task_runs_each_occurrence_as_a_scheduled_submission(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    agent = agent_on(clock, tmp_path / "a.sqlite", tasks={"digest": ScheduledTask("every 5 minutes", prompt="Digest")})
    assert agent.get_schedule("digest")["next_run_at"] == T0 + 300
    clock.advance(299)
    await asyncio.sleep(0)
    assert agent.list_submissions() == []
    clock.advance(1)
    await eventually(lambda: [t["status"] for t in agent.turns()] == ["completed"])
    clock.advance(300)
    await eventually(lambda: [t["status"] for t in agent.turns()] == ["completed", "completed"])
    assert [t["trigger"] for t in agent.turns()] == ["scheduled", "scheduled"]
    assert user_texts(agent) == ["Digest", "Digest"]
    subs = agent.list_submissions()
    key = runtime_of(agent).key
    assert [s["idempotency_key"] for s in subs] == [f"think-schedule:{key}:digest:{round((T0 + n * 300) * 1000)}"
                                                    for n in (1, 2)]
    assert subs[0]["metadata"]["source"] == "scheduled-task" and subs[0]["metadata"]["task_id"] == "digest"
    # `submitted` while the turn runs, then the submission's outcome
    await eventually(lambda: agent.get_schedule("digest")["last_status"] == "completed")
    row = agent.get_schedule("digest")
    assert (row["runs"], row["last_status"], row["next_run_at"]) == (2, "completed", T0 + 900)
    await stop(agent)


async def test_a_missed_occurrence_runs_once_without_backfill_when_the_agent_is_created_again(
        tmp_path: Path) -> None:
    clock = FakeClock(T0)
    tasks = {"tick": {"schedule": "every 1 minute", "prompt": "tick"}}
    first = agent_on(clock, tmp_path / "a.sqlite", tasks=tasks)
    await stop(first)  # the kernel goes down for ten and a half minutes
    clock.advance(630)
    again = agent_on(clock, tmp_path / "a.sqlite", tasks=tasks)
    await eventually(lambda: [t["status"] for t in again.turns()] == ["completed"])
    clock.advance(0)
    assert len(again.list_submissions()) == 1  # one run for the ten missed
    assert again.get_schedule("tick")["next_run_at"] == T0 + 660  # the phase is kept
    await stop(again)


async def test_a_failing_handler_is_recorded_and_the_next_occurrence_still_runs(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    calls: list = []

    def flaky(self: Think, ctx: object) -> None:
        calls.append(ctx)
        if len(calls) == 1:
            raise RuntimeError("the feed is down")

    agent = agent_on(clock, tmp_path / "a.sqlite", flaky=flaky)
    task_id = agent.schedule_every(60, agent.flaky, id="feed", metadata={"team": "x"})
    clock.advance(60)
    await eventually(lambda: agent.get_schedule("feed")["last_status"] == "error")
    row = agent.get_schedule("feed")
    assert row["last_error"] == "RuntimeError: the feed is down" and row["next_run_at"] == T0 + 120
    clock.advance(60)
    await eventually(lambda: agent.get_schedule("feed")["last_status"] == "completed")
    assert task_id == "feed" and len(calls) == 2
    ctx = calls[1]
    assert (ctx.task_id, ctx.scheduled_for, ctx.kind, ctx.schedule, ctx.metadata) == (
        "feed", T0 + 120, "interval", "every 60 seconds", {"team": "x"})
    assert ctx.occurrence_key == f"feed:{round((T0 + 120) * 1000)}" and ctx.agent is agent
    await stop(agent)


async def test_handlers_are_restored_by_reference_and_a_lambda_is_reported_lost(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    ran: list = []
    agent = agent_on(clock, tmp_path / "a.sqlite", ping=lambda self, ctx: ran.append(ctx.task_id))
    agent.schedule(120, agent.ping, id="method")
    agent.schedule("every 2 minutes", lambda ctx: ran.append("lambda"), id="closure")
    await stop(agent)
    again = agent_on(clock, tmp_path / "a.sqlite", ping=lambda self, ctx: ran.append(ctx.task_id))
    clock.advance(120)
    await eventually(lambda: again.get_schedule("method") is None  # a one-shot is deleted after its run
                     and again.get_schedule("closure")["last_status"] == "lost")
    assert ran == ["method"]
    lost = again.get_schedule("closure")
    assert lost["next_run_at"] is None and "lambda" in lost["task_repr"] and "cancel_schedule" in lost["last_error"]
    frame = again.get_schedules()
    assert list(frame.columns) == ["id", "kind", "schedule", "timezone", "task", "next_run", "last_run",
                                   "last_status", "last_error", "runs", "source"]
    assert frame.to_dict("records")[0]["id"] == "closure"
    assert again.cancel_schedule("closure") is True and again.cancel_schedule("closure") is False
    assert again.get_schedules().empty
    await stop(again)


async def test_two_agents_on_one_file_run_an_occurrence_once(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    seen: list = []
    tasks = {"once-each": ScheduledTask(schedule="every 30 seconds", handler=lambda ctx: seen.append(ctx.agent))}
    a = agent_on(clock, tmp_path / "a.sqlite", tasks=tasks)
    b = agent_on(clock, tmp_path / "a.sqlite", tasks=tasks)
    for _ in range(3):
        clock.advance(30)
        await eventually(lambda: a.get_schedule("once-each")["last_status"] == "completed"
                         and a.get_schedule("once-each")["last_run_at"] == clock.now())
    assert len(seen) == 3 and a.get_schedule("once-each")["runs"] == 3
    await stop(a, b)


async def test_declarations_are_reconciled_and_runtime_tasks_kept(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    first = agent_on(clock, tmp_path / "a.sqlite", tasks={"a": ScheduledTask("every 1 hour", prompt="A"),
                                                          "b": ScheduledTask("every 1 hour", prompt="B")})
    first.schedule(3600, "later", id="mine")
    await stop(first)
    clock.advance(60)
    second = agent_on(clock, tmp_path / "a.sqlite", tasks={"a": ScheduledTask("every 1 hour", prompt="A"),
                                                           "b": ScheduledTask("every 2 hours", prompt="B")})
    rows = {r["id"]: r for r in runtime_of(second).store.schedules.all()}
    assert set(rows) == {"a", "b", "mine"}
    assert rows["a"]["next_run_at"] == T0 + 3600  # unchanged declaration: keeps its occurrence
    assert rows["b"]["next_run_at"] == T0 + 60 + 7200  # changed: re-armed from now
    third = agent_on(clock, tmp_path / "a.sqlite", tasks={})
    assert {r["id"] for r in runtime_of(third).store.schedules.all()} == {"mine"}
    with pytest.raises(UserError, match="exactly one of prompt= or handler="):
        agent_on(clock, tmp_path / "b.sqlite", tasks={"x": ScheduledTask("every 1 hour")})
    with pytest.raises(UserError, match="keys are schedule"):
        agent_on(clock, tmp_path / "c.sqlite", tasks={"x": {"when": "every 1 hour", "prompt": "x"}})
    with pytest.raises(UserError, match="task is a prompt"):
        third.schedule(5, 42)
    await stop(second, third)


async def test_a_prompt_function_is_called_at_each_run(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    counter = iter(range(10))
    agent = agent_on(clock, tmp_path / "a.sqlite",
                     tasks={"n": ScheduledTask("every 10 seconds", prompt=lambda: f"count {next(counter)}")})
    clock.advance(10)
    await eventually(lambda: len(agent.turns()) == 1 and agent.turns()[0]["status"] == "completed")
    clock.advance(10)
    await eventually(lambda: len(agent.turns()) == 2 and agent.turns()[1]["status"] == "completed")
    assert user_texts(agent) == ["count 0", "count 1"]
    await stop(agent)


def test_schedules_magic_lists_them(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from IPython.testing.globalipapp import get_ipython

    ip = get_ipython()
    ip.run_line_magic("load_ext", "think_nb")
    ip.user_ns["Digest"] = type("Digest", (Think,), {
        "get_scheduled_tasks": lambda self: {"d": ScheduledTask("every day at 07:00 in UTC", prompt="news")}})
    ip.user_ns["Empty"] = type("Empty", (Think,), {})
    frame = ip.run_line_magic("think", "schedules Digest")
    assert frame[["id", "kind", "schedule", "task", "source"]].to_dict("records") == [
        {"id": "d", "kind": "cron", "schedule": "0 7 * * *", "task": "news", "source": "declared"}]
    assert ip.run_line_magic("think", "schedules Empty") is None
    assert "'default' has no scheduled tasks" in capsys.readouterr().out
    assert ip.run_line_magic("think", "schedules Empty --name weekly") is None  # not stored: refused, not created
    assert "think: No Empty agent named 'weekly'" in capsys.readouterr().out
    ip.user_ns["Empty"]("weekly")
    assert ip.run_line_magic("think", "schedules Empty --name weekly") is None  # a named agent of a class
    assert "'weekly' has no scheduled tasks" in capsys.readouterr().out
    ip.run_line_magic("think", "schedules Empty --name")
    assert "--name needs a value" in capsys.readouterr().out
    ip.run_line_magic("think", "schedules --help")
    assert "see `%think --help`" in capsys.readouterr().out


def test_the_schedules_frame_shows_a_missing_error_as_none() -> None:
    """pandas 3 reads a column of strings and None as its string dtype, which prints NaN."""
    from think_nb.schedules.table import schedules_frame

    row = {"id": "a", "kind": "cron", "spec": "0 7 * * *", "timezone": "UTC", "task_repr": "news", "next_run_at": None,
           "last_run_at": 0.0, "last_status": "error", "last_error": "ValueError: boom", "runs": 1, "source": "api"}
    frame = schedules_frame([row, {**row, "id": "b", "last_status": "completed", "last_error": None}])
    assert frame["last_error"].tolist() == ["ValueError: boom", None]
