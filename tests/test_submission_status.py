"""`on_submission_status(inspection)` (issue 30: Think's `onSubmissionStatus`): every status change
of a submission reaches the hook, in order; a raising hook never breaks the drain. Ported from
Think's submissions.test.ts ("awaits submission status hooks before returning acceptance")."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from agents import eventually
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.messages import user_message
from think_nb.testing import ScriptedModel as S

KEYS = {"submission_id", "idempotency_key", "request_id", "status", "error", "metadata", "created_at", "started_at",
        "completed_at"}


def agent_with_log(script: S, tmp_path: Path, hook: Any = None) -> tuple[Think, list[dict]]:
    log: list[dict] = []

    def record(self: Think, inspection: dict) -> None:
        log.append(inspection)

    cls = type("Submitting", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False,
                                        "on_submission_status": hook or record})
    return cls("s", db=tmp_path / "s.sqlite"), log


async def test_every_status_change_reaches_the_hook_in_order(tmp_path: Path) -> None:
    agent, log = agent_with_log(S([[S.text("one")], [S.text("two"), S.error("model down")]]), tmp_path)
    await agent.submit_messages([user_message("1")], submission_id="a", metadata={"job": 1})
    await agent.submit_messages([user_message("2")], submission_id="b")
    assert agent.submissions_task is not None
    await agent.submissions_task
    assert [(i["submission_id"], i["status"]) for i in log] == [
        ("a", "pending"), ("b", "pending"), ("a", "running"), ("a", "completed"), ("b", "running"), ("b", "error")]
    assert all(set(i) == KEYS for i in log)
    final = log[3]
    assert final == agent.inspect_submission("a") and final["metadata"] == {"job": 1} and final["request_id"]
    assert log[-1]["error"] == agent.inspect_submission("b")["error"] and "model down" in log[-1]["error"]


async def test_an_async_hook_is_awaited_before_the_acceptance_returns(tmp_path: Path) -> None:
    """Think: "awaits submission status hooks before returning acceptance"."""
    log: list[str] = []

    async def slow(self: Think, inspection: dict) -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        log.append(inspection["status"])

    agent, _ = agent_with_log(S([[S.text("done")]]), tmp_path, slow)
    accepted = await agent.submit_messages([user_message("hook wait")], submission_id="sub-hook-wait")
    assert accepted["accepted"] is True and log == ["pending"]
    assert agent.submissions_task is not None
    await agent.submissions_task
    assert log == ["pending", "running", "completed"]


async def test_a_raising_hook_is_logged_and_never_breaks_the_drain(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    def broken(self: Think, inspection: dict) -> None:
        raise RuntimeError(f"hook down at {inspection['status']}")

    agent, _ = agent_with_log(S([[S.text("one")], [S.text("two")]]), tmp_path, broken)
    with caplog.at_level(logging.ERROR, logger="think_nb"):
        await agent.submit_messages([user_message("1")], submission_id="a")
        await agent.submit_messages([user_message("2")], submission_id="b")
        assert agent.submissions_task is not None
        await agent.submissions_task
    assert [s["status"] for s in agent.list_submissions()] == ["completed", "completed"]
    raised = [r for r in caplog.records if "on_submission_status raised" in r.getMessage()]
    assert [r.getMessage() for r in raised][:2] == [
        "on_submission_status raised for submission a (pending); the submission goes on",
        "on_submission_status raised for submission b (pending); the submission goes on"]
    assert len(raised) == 6


async def test_cancel_and_clear_are_reported(tmp_path: Path) -> None:
    agent, log = agent_with_log(S([]), tmp_path)
    rows = runtime_of(agent).store.submissions
    rows.accept("p1", None, [user_message("x")], "1", None)  # pending rows no drain has taken yet
    rows.accept("p2", None, [user_message("y")], "2", None)
    assert agent.cancel_submission("p1")["status"] == "aborted"
    agent.clear_messages()
    assert [(i["submission_id"], i["status"]) for i in log] == [("p1", "aborted"), ("p2", "skipped")]


async def test_a_dead_processs_running_rows_are_reported_when_the_agent_is_made_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb.store import owners

    script = S([[S.text("answered")]])
    first, _ = agent_with_log(script, tmp_path)
    rows = runtime_of(first).store.submissions
    applied = user_message("applied")
    rows.accept("applied", None, [applied], "a", None)
    rows.accept("unapplied", None, [user_message("not yet")], "b", None)
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", "dead-process")
        rows.start("applied", "req-1")
        rows.start("unapplied", "req-2")
    runtime_of(first).conversation.append(applied)
    agent, log = agent_with_log(script, tmp_path)
    assert agent.submissions_task is not None
    await agent.submissions_task
    await eventually(lambda: len(log) == 4)
    assert [(i["submission_id"], i["status"]) for i in log] == [
        ("applied", "error"), ("unapplied", "pending"), ("unapplied", "running"), ("unapplied", "completed")]
