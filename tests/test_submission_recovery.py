"""A submission whose turn a dead process left is continued by chat recovery and settled when the
continuation ends (Think's `_recoverSubmissionsOnStart`: recoverable → continued). Ported from
Think's submissions.test.ts ("recovery continuation completes submissions", "... respects
cancel"), think-session.test.ts ("onChatRecovery: chained continuations keep root submission") and
the submission-recovery e2e ("continue in-flight": a real process SIGKILLed mid-turn).

A dead process is simulated as the other recovery tests do (rows owned by another process id,
whose lock nobody holds: `think_nb.store.owners`), or is a real forked child killed with SIGKILL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents import eventually
from test_durable import agent_class, partial_chunks
from think_nb import Think, events
from think_nb.binding import runtime_of
from think_nb.messages import user_message
from think_nb.store import owners
from think_nb.testing import ScriptedModel as S


def submission_left_by_dead_process(agent: Think, monkeypatch: pytest.MonkeyPatch, request_id: str = "req-dead",
                                    owner: str = "dead-process") -> dict:
    """What a process that died in a submission's turn leaves: the ledger row `running` (id `job`),
    its user message applied, the turn-log row `running` and its stream `streaming` with a partial
    reply, all owned by `owner`. Returns the user message."""
    runtime = runtime_of(agent)
    message = user_message("hi")
    runtime.store.submissions.accept("job", None, [message], "digest", None)
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", owner)
        runtime.store.submissions.start("job", request_id)
        runtime.conversation.append(message)
        runtime.store.turn_log.start(request_id, "submission", False)
        runtime.store.streams.set_status(request_id, False, "streaming")
        runtime.store.streams.append(request_id, partial_chunks())
    return message


def recovering_class(script: S, statuses: list[tuple[str, str]] | None = None, **attrs: Any) -> type[Think]:
    def on_submission_status(self: Think, inspection: dict) -> None:
        if statuses is not None:
            statuses.append((inspection["submission_id"], inspection["status"]))

    return agent_class(script, tools=[], include_workspace_tools=False, on_submission_status=on_submission_status,
                       **{"on_chat_recovery": lambda self, ctx: {"continue": True}, **attrs})


def said(agent: Think) -> list[tuple[str, str]]:
    return [(m["role"], "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text")) for m in agent.messages]


async def test_a_recovery_continuation_completes_the_submission(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """submissions.test.ts: "recovery continuation completes submissions"."""
    db, statuses = tmp_path / "s.sqlite", []
    script = S([[S.text("wer.")]])
    cls = recovering_class(script, statuses)
    submission_left_by_dead_process(cls("s", db=db), monkeypatch)
    seen: list[events.Event] = []
    with events.subscribe(seen.append, names="submission:*"):
        agent = cls("s", db=db)
        assert agent.inspect_submission("job")["status"] == "running"  # recoverable: continued, not settled `error`
        assert agent.recovery_task is not None
        (result,) = await agent.recovery_task
    assert result.status == "completed" and result.continuation
    job = agent.inspect_submission("job")
    assert (job["status"], job["error"], job["request_id"]) == ("completed", None, "req-dead")
    assert statuses == [("job", "completed")]
    assert [(e.name, e.payload["status"]) for e in seen] == [("submission:status", "completed")]
    assert said(agent) == [("user", "hi"), ("assistant", "half an ans"), ("assistant", "wer.")]
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("submission", "interrupted"),
                                                                    ("recovery-continue", "completed")]
    assert cls("s", db=db).inspect_submission("job")["status"] == "completed"  # settled once, stored


async def test_a_continuation_that_fails_settles_the_submission_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """submissions.test.ts: "preserves stream error text from recovered continuations"."""
    db = tmp_path / "s.sqlite"
    cls = recovering_class(S([[S.error("recovered in-band failure")]]))
    submission_left_by_dead_process(cls("s", db=db), monkeypatch)
    agent = cls("s", db=db)
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "error"
    job = agent.inspect_submission("job")
    assert job["status"] == "error" and "recovered in-band failure" in job["error"] and job["error"] == result.error


async def test_a_declined_recovery_still_settles_the_submission_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Applied but unrecoverable → `error` (Think), also when an async `on_chat_recovery` declines later."""
    async def decline(self: Think, ctx: object) -> dict:
        return {"continue": False}

    db = tmp_path / "s.sqlite"
    script = S([])
    cls = recovering_class(script, on_chat_recovery=decline)
    submission_left_by_dead_process(cls("s", db=db), monkeypatch)
    agent = cls("s", db=db)
    assert agent.inspect_submission("job")["status"] == "running"  # the hook answers in the recovery task
    assert agent.recovery_task is not None
    await agent.recovery_task
    job = agent.inspect_submission("job")
    assert job["status"] == "error" and "ended before the turn finished" in job["error"]
    assert script.requests == [] and said(agent) == [("user", "hi"), ("assistant", "half an ans")]


async def test_a_recovery_continuation_respects_cancel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """submissions.test.ts: "recovery continuation respects cancel" ("does not let recovered
    continuation overwrite a cancelled submission", "aborts an active recovered continuation
    without a late overwrite")."""
    db = tmp_path / "s.sqlite"
    script = S([])
    cls = recovering_class(script)
    submission_left_by_dead_process(cls("s", db=db), monkeypatch)
    skipped: list[events.Event] = []
    with events.subscribe(skipped.append, names="chat:recovery:skipped"):
        agent = cls("s", db=db)
        assert agent.cancel_submission("job")["status"] == "aborted"  # before the continuation starts
        assert agent.recovery_task is not None
        assert await agent.recovery_task == [None]
    assert agent.inspect_submission("job")["status"] == "aborted"
    assert script.requests == []  # not continued
    assert [e.payload["reason"] for e in skipped] == ["submission-cancelled"]
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("submission", "interrupted")]

    # cancelled while its continuation streams: the continuation is aborted, the cancel kept
    db2 = tmp_path / "t.sqlite"
    release = asyncio.Event()
    slow = recovering_class(S([[S.text("a long continuation"), S.wait(release), S.text(" never said")]]))
    submission_left_by_dead_process(slow("s", db=db2), monkeypatch)
    agent = slow("s", db=db2)
    assert agent.recovery_task is not None
    await _continuation_streaming(agent, "a long continuation")
    assert agent.cancel_submission("job")["status"] == "aborted"
    (result,) = await agent.recovery_task
    assert result.status == "aborted"
    assert agent.inspect_submission("job")["status"] == "aborted"  # no late overwrite
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("submission", "interrupted"),
                                                                    ("recovery-continue", "aborted")]


async def test_chained_continuations_keep_the_root_submission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """think-session.test.ts: "onChatRecovery: chained continuations keep root submission". Process
    A dies in the submission's turn; process B continues it and dies in the continuation; process C
    continues that: the submission A's turn ran is settled by C's continuation."""
    db = tmp_path / "s.sqlite"
    submission_left_by_dead_process(recovering_class(S([]))("s", db=db), monkeypatch, "req-a", owner="dead-a")
    never = asyncio.Event()
    with monkeypatch.context() as m:  # process B: everything it writes is owned by dead-b
        m.setattr(owners, "PROCESS", "dead-b")
        b = recovering_class(S([[S.text("more of it"), S.wait(never)]]))("s", db=db)
        assert b.inspect_submission("job")["status"] == "running"
        req_b = await _continuation_streaming(b, "more of it")
    seen: list[Any] = []

    def on_chat_recovery(self: Think, ctx: Any) -> dict:
        seen.append(ctx)
        return {"continue": True}

    script = S([[S.text(" and the end.")]])
    c = recovering_class(script, on_chat_recovery=on_chat_recovery)("s", db=db)  # process C
    (ctx,) = seen
    assert (ctx.request_id, ctx.incident_id, ctx.trigger) == (req_b, "req-a", "recovery-continue")
    assert c.inspect_submission("job")["status"] == "running"
    assert c.recovery_task is not None
    (result,) = await c.recovery_task
    assert result.status == "completed"
    job = c.inspect_submission("job")
    assert (job["status"], job["request_id"]) == ("completed", "req-a")  # the root submission, settled once
    assert said(c) == [("user", "hi"), ("assistant", "half an ans"), ("assistant", "more of it"),
                       ("assistant", " and the end.")]
    assert [(t["trigger"], t["status"]) for t in c.turns()] == [
        ("submission", "interrupted"), ("recovery-continue", "interrupted"), ("recovery-continue", "completed")]
    b.abort_all_requests()  # process B's hung turn, ended for the test's sake: it changes nothing
    assert b.recovery_task is not None
    await b.recovery_task
    assert c.inspect_submission("job")["status"] == "completed"


async def _continuation_streaming(agent: Think, text: str) -> str:
    """Wait until `agent`'s recovery continuation has recorded `text` in SQLite; its request id."""
    store = runtime_of(agent).store

    def recorded() -> bool:
        turns = agent.turns()
        return len(turns) > 1 and any(text in str(c) for seg in store.streams.segments(turns[-1]["request_id"])
                                      for c in seg)

    await eventually(recorded, what=f"{text!r} recorded")
    return str(agent.turns()[-1]["request_id"])


async def test_sigkill_in_a_submissions_turn_is_continued_and_completes_the_submission(tmp_path: Path) -> None:
    """submission-recovery e2e: "continue in-flight". A real child process runs a submission's turn
    and is SIGKILLed inside its second tool call (held there), after its first settled; the agent
    created again here continues the turn (no tool runs again) and the submission completes."""
    from test_sigkill import fork_server, kill, marker
    from think_nb import tool

    db, side = tmp_path / "d.sqlite", tmp_path / "side"
    async with fork_server() as server:
        pid = await server.start_turn(db, side, True, submit=True, hold_tool=2)
        await eventually(lambda: marker(2)(db, side), what="the child in tool 2, tool 1 settled")
        await kill(pid)
    runs: list[int] = []

    @tool
    def work(n: int) -> int:
        """Do some work."""
        runs.append(n)
        return n * 10

    script = S([[S.text("Finished.")]])

    class Durable(Think):  # the child's class and name: the same storage key
        def get_model(self) -> str:
            return script.model

        def get_tools(self) -> list:
            return [work]

        def on_chat_recovery(self, ctx: Any) -> dict:
            return {"continue": True}

    agent = Durable("d", db=db)
    assert agent.inspect_submission("job")["status"] == "running"
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed"
    assert agent.inspect_submission("job")["status"] == "completed"
    assert runs == []  # tool 1 (settled) was not run again, nor tool 2 (cut: repaired as interrupted)
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("submission", "interrupted"),
                                                                    ("recovery-continue", "completed")]
    assert said(agent)[-1] == ("assistant", "Finished.")
    cut = agent.messages[1]  # the child's partial reply: tool 1 settled, tool 2 repaired before the continuation
    assert [(p["type"], p["state"]) for p in cut["parts"] if p["type"] == "tool-work"] == [
        ("tool-work", "output-available"), ("tool-work", "output-error")]
    sent = script.requests[0]["messages"]
    assert any(m["role"] == "tool" and m["content"] == "10" for m in sent)  # tool 1's result, from the child
