"""Observability events (`think_nb.events`, Think's `agents/observability`): one subscription API,
the names emitted where things happen, on real turns of scripted models and real SQLite files."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from dirty_equals import IsFloat, IsInt, IsPartialDict, IsStr

from agents import add, eventually, scripted_agent, warm_litellm
from test_durable import agent_class, left_by_dead_process, partial_chunks, settle_recovery
from test_fetch import server  # noqa: F401 - the local HTTP server fixture
from think_nb import RecoveryDecision, Think, client_tool, events, tool
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.messages import user_message
from think_nb.testing import FakeClock, ScriptedModel
from think_nb.workspace.fetch import fetch_tool

S = ScriptedModel


def names(seen: list[events.Event]) -> list[str]:
    return [e.name for e in seen]


def tool_turn() -> ScriptedModel:
    return S([[S.tool_call("add", {"a": 2, "b": 40}), S.usage(10, 5)], [S.text("42."), S.usage(20, 3)]])


# -- the subscription API ------------------------------------------------------------------------
async def test_a_whole_turn_with_a_tool_emits_its_events_in_order() -> None:
    """Think's `chat:turn:start` / `chat:turn:finish` (run-turn.test.ts: events per mode) around
    think_nb's step and tool events; every event names the agent and the request."""
    agent = scripted_agent(tool_turn(), tools=[add])
    key = runtime_of(agent).key
    seen: list[events.Event] = []
    before = time.time()
    with events.subscribe(seen.append, agent=agent, names="*"):
        result = await agent.send("What is 2 + 40?")
    assert result.status == "completed"
    rid = result.request_id
    turn = {"request_id": rid, "trigger": "send", "admission": "queue", "continuation": False, "generation": 0}
    call = {"tool_call_id": "call_1_0", "tool_name": "add", "step": 0}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "source": "reported"}
    assert [(e.name, e.payload) for e in seen] == [
        ("chat:turn:start", turn),
        ("chat:tool:call", call),
        ("chat:tool:result", {**call, "state": "output-available", "duration_ms": IsFloat(ge=0)}),
        ("chat:step:finish", {"step": 0, "finish_reason": "tool-calls", "tool_calls": ["add"], "usage": usage}),
        ("chat:step:finish", {"step": 1, "finish_reason": "stop", "tool_calls": [],
                              "usage": {**usage, "prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23}}),
        ("chat:turn:finish", {**turn, "status": "completed", "duration_ms": IsFloat(ge=0)}),
    ]
    assert {(e.agent, e.request_id) for e in seen} == {(key, rid)}
    stamps = [e.timestamp for e in seen]
    assert stamps == sorted(stamps) and before <= stamps[0] and stamps[-1] <= time.time()
    assert seen[0].as_dict() == {"name": "chat:turn:start", "agent": key, "request_id": rid,
                                 "timestamp": stamps[0], "payload": turn}


async def test_a_raising_handler_is_logged_once_and_never_breaks_the_turn(caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: events.Event) -> None:
        raise RuntimeError(f"broken on {event.name}")

    plain = scripted_agent(tool_turn(), tools=[add], name="plain")
    await plain.send("What is 2 + 40?")
    agent = scripted_agent(tool_turn(), tools=[add], name="observed")
    caplog.set_level(logging.ERROR, logger="think_nb")
    with events.subscribe(broken, agent=agent, names="*") as sub:
        result = await agent.send("What is 2 + 40?")
    assert result.status == "completed"
    strip = [{k: v for k, v in m.items() if k not in ("id", "metadata")} for m in agent.messages]
    assert strip == [{k: v for k, v in m.items() if k not in ("id", "metadata")} for m in plain.messages]
    failures = [r for r in caplog.records if "event handler" in r.getMessage()]
    assert len(failures) == 1 and "broken on chat:turn:start" in str(failures[0].exc_info[1])
    assert sub.errors == 6  # every event reached it; only the first failure was logged


async def test_an_async_handler_is_scheduled_never_awaited_by_the_turn(caplog: pytest.LogCaptureFixture) -> None:
    gate = asyncio.Event()
    started: list[str] = []
    done: list[str] = []

    async def slow(event: events.Event) -> None:
        started.append(event.name)
        await gate.wait()
        done.append(event.name)

    async def failing(event: events.Event) -> None:
        raise ValueError("async failure")

    agent = scripted_agent(tool_turn(), tools=[add])
    caplog.set_level(logging.ERROR, logger="think_nb")
    with events.subscribe(slow, agent=agent, names="chat:turn:*"), \
            events.subscribe(failing, agent=agent, names="chat:turn:*") as bad:
        result = await agent.send("What is 2 + 40?")
        assert result.status == "completed" and done == []  # the turn ended while its handlers wait
        await eventually(lambda: started == ["chat:turn:start", "chat:turn:finish"])
        gate.set()
        await eventually(lambda: done == ["chat:turn:start", "chat:turn:finish"])
        await eventually(lambda: bad.errors == 2)
    assert len([r for r in caplog.records if "event handler" in r.getMessage()]) == 1


async def test_unsubscribe_stops_delivery_and_is_idempotent() -> None:
    agent = scripted_agent(S([[S.text("one")], [S.text("two")], [S.text("three")]]))
    seen: list[events.Event] = []
    stop = events.subscribe(seen.append, agent=agent, names="chat:turn:start")
    await agent.send("1")
    stop()
    stop()
    assert not stop.active
    await agent.send("2")
    with events.subscribe(seen.append, agent=agent, names="chat:turn:start"):
        await agent.send("3")
    assert names(seen) == ["chat:turn:start", "chat:turn:start"]
    assert [e.payload["request_id"] for e in seen] == [t["request_id"] for t in agent.turns()][0::2]


async def test_glob_patterns_filter_names() -> None:
    agent = scripted_agent(tool_turn(), tools=[add])
    turns: list[events.Event] = []
    tools_and_steps: list[events.Event] = []
    default: list[events.Event] = []
    with events.subscribe(turns.append, agent=agent, names="chat:turn:*"), \
            events.subscribe(tools_and_steps.append, agent=agent, names=["chat:tool:*", "chat:step:*"]), \
            events.subscribe(default.append, agent=agent):  # names="chat:*"
        await agent.send("What is 2 + 40?")
    assert names(turns) == ["chat:turn:start", "chat:turn:finish"]
    assert names(tools_and_steps) == ["chat:tool:call", "chat:tool:result", "chat:step:finish", "chat:step:finish"]
    assert len(default) == 6


async def test_events_are_filtered_by_agent_object_or_key() -> None:
    a = scripted_agent(S([[S.text("from a")]]), name="a")
    b = scripted_agent(S([[S.text("from b")]]), name="b")
    by_object: list[events.Event] = []
    by_key: list[events.Event] = []
    every: list[events.Event] = []
    with events.subscribe(by_object.append, agent=a, names="chat:turn:start"), \
            events.subscribe(by_key.append, agent=runtime_of(b).key, names="chat:turn:start"), \
            events.subscribe(every.append, names="chat:turn:start"):
        ra = await a.send("hi")
        rb = await b.send("hi")
    assert [e.request_id for e in by_object] == [ra.request_id]
    assert [e.request_id for e in by_key] == [rb.request_id]
    assert [(e.agent, e.request_id) for e in every] == [(runtime_of(a).key, ra.request_id),
                                                        (runtime_of(b).key, rb.request_id)]


def test_bad_subscriptions_are_refused_in_one_line() -> None:
    with pytest.raises(UserError, match=r"names='chat:trun:\*'\) matches no event; use a glob"):
        events.subscribe(print, names="chat:trun:*")
    with pytest.raises(UserError, match="handler must be callable"):
        events.subscribe("print")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="pass a Think agent or its storage key"):
        events.subscribe(print, agent=42)
    with pytest.raises(ValueError, match="unknown event 'chat:turn:begin'"):
        events.emit("chat:turn:begin")


def test_every_name_is_documented_in_the_module_docstring() -> None:
    doc = events.__doc__ or ""
    missing = [n for n in events.NAMES if f"`{n}`" not in doc and f"/ `{n.rsplit(':', 1)[1]}`" not in doc]
    assert missing == []


async def test_a_task_that_outlives_its_turn_no_longer_names_it() -> None:
    """The turn's scope fills `agent` and `request_id` only while the turn runs."""
    gate = asyncio.Event()
    later: list[asyncio.Task] = []

    async def after_the_turn() -> None:
        await gate.wait()
        events.emit("chat:context:compacted", {"reason": "proactive", "shortened": False})

    @tool
    async def spawn() -> str:
        """Start background work."""
        events.emit("chat:context:compacted", {"reason": "proactive", "shortened": True})
        later.append(asyncio.get_running_loop().create_task(after_the_turn()))
        return "started"

    agent = scripted_agent(S([[S.tool_call("spawn", {})], [S.text("ok")]]), tools=[spawn])
    seen: list[events.Event] = []
    with events.subscribe(seen.append, names="chat:context:*"):
        result = await agent.send("go")
        gate.set()
        await later[0]
    assert [(e.agent, e.request_id, e.payload["shortened"]) for e in seen] == [
        (runtime_of(agent).key, result.request_id, True), (None, None, False)]


# -- where the events come from ------------------------------------------------------------------
async def test_a_model_failure_emits_request_failed_and_message_error() -> None:
    """Think's think-session.test.ts: `chat:request:failed` for thrown and in-band errors."""
    agent = scripted_agent(S([[S.text("partial "), S.error("provider down")]]))
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="*"):
        result = await agent.send("hi")
    assert result.status == "error"
    assert names(seen) == ["chat:turn:start", "message:error", "chat:request:failed", "chat:turn:finish"]
    assert seen[2].payload == {"request_id": result.request_id, "stage": "stream", "messages_persisted": True,
                               "error": IsStr(regex=r".*provider down.*")}
    assert seen[1].payload == {"error": seen[2].payload["error"]}
    assert seen[3].payload == IsPartialDict(status="error", error=result.error)


async def test_a_failing_hook_fails_the_request_at_stage_turn() -> None:
    def before_turn(self: Think, ctx: Any) -> None:
        raise KeyError("no such config")

    agent = scripted_agent(S([[S.text("never")]]), before_turn=before_turn)
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="*"):
        result = await agent.send("hi")
    assert names(seen) == ["chat:turn:start", "chat:request:failed", "chat:turn:finish"]
    assert seen[1].payload == IsPartialDict(stage="turn", error=result.error)


async def test_approvals_emit_requested_then_the_decision_then_the_call() -> None:
    ran: list[str] = []

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    agent = scripted_agent(S([[S.tool_call("delete_file", {"path": "a.txt"})], [S.text("done")]]),
                           tools=[delete_file])
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names=["chat:*", "tool:*"]):
        first = await agent.send("delete a.txt")
        task = agent.approve("call_1_0")
        assert task is not None
        second = await task
    assert (first.status, second.status, ran) == ("completed", "completed", ["a.txt"])
    assert [(e.name, e.request_id) for e in seen] == [
        ("chat:turn:start", first.request_id), ("chat:approval:requested", first.request_id),
        ("chat:step:finish", first.request_id), ("chat:turn:finish", first.request_id),
        ("tool:approval", None),
        ("chat:turn:start", second.request_id), ("chat:tool:call", second.request_id),
        ("chat:tool:result", second.request_id), ("chat:step:finish", second.request_id),
        ("chat:turn:finish", second.request_id)]
    approval_id = agent.messages[1]["parts"][1]["approval"]["id"]
    assert seen[1].payload == {"tool_call_id": "call_1_0", "tool_name": "delete_file", "approval_id": approval_id}
    assert seen[4].payload == {"tool_call_id": "call_1_0", "approved": True}
    assert seen[5].payload == IsPartialDict(trigger="continuation", continuation=True)


async def test_a_client_tool_result_emits_tool_result() -> None:
    tz = client_tool("time_zone", "The user's time zone.", js="return 'UTC';")
    agent = scripted_agent(S([[S.tool_call("time_zone", {})], [S.text("UTC it is.")]]), tools=[tz])
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="tool:*"):
        await agent.send("where am I?")
        task = agent.add_tool_output("call_1_0", "UTC")
        assert task is not None and (await task).status == "completed"
    assert [(e.name, e.payload) for e in seen] == [("tool:result", {"tool_call_id": "call_1_0",
                                                                    "tool_name": "time_zone"})]


async def test_a_repaired_transcript_emits_transcript_repaired() -> None:
    agent = scripted_agent(S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")], [S.text("next")]]),
                           tools=[add])
    await agent.send("1 + 2?")
    reply = agent.messages[1]
    open_call = {k: v for k, v in reply["parts"][1].items() if k != "output"} | {"state": "input-available"}
    runtime_of(agent).conversation.replace({**reply, "parts": [reply["parts"][0], open_call, *reply["parts"][2:]]})
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="chat:transcript:*"):
        result = await agent.send("next")
    assert [(e.name, e.request_id, e.payload) for e in seen] == [
        ("chat:transcript:repaired", result.request_id,
         {"removed_tool_calls": 1, "normalized_inputs": 0, "tool_call_ids": ["call_1_0"]})]


async def test_automatic_compaction_emits_context_compacted() -> None:
    from test_session_memory import PAIRS, converse, make
    from think_nb.session import create_compact_function

    async def summarize(prompt: str) -> str:
        return "auto summary"

    script = S([])
    agent = make(script, lambda self, s: s.compact_after(60).on_compaction(
        create_compact_function(summarize, tail_token_budget=20)))
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="chat:context:*"):
        await converse(agent, script, PAIRS[:4])
    turns = [t["request_id"] for t in agent.turns()]
    # the third turn passes the threshold with too little to summarise (a no-op), the fourth compacts
    assert [(e.request_id, e.payload) for e in seen] == [
        (turns[2], {"reason": "proactive", "shortened": False, "request_id": turns[2]}),
        (turns[3], {"reason": "proactive", "shortened": True, "request_id": turns[3]})]
    assert agent.session.overlays()[-1].summary == "auto summary"


async def test_submission_status_changes_are_events_and_its_turn_runs_on_drain() -> None:
    """Think's run-turn.test.ts `submit ≡ submitMessages, events on drain not accept` and
    submissions.test.ts status hooks: every status change is a `submission:status`."""
    agent = scripted_agent(S([[S.text("done")]]))
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names=["submission:*", "chat:turn:*"]):
        accepted = await agent.submit_messages([user_message("hi")], submission_id="job-1", idempotency_key="k1")
        assert accepted["accepted"] and names(seen) == ["submission:create", "submission:status"]
        await agent.submissions_task
    rid = agent.inspect_submission("job-1")["request_id"]
    assert [(e.name, e.payload.get("status"), e.request_id) for e in seen] == [
        ("submission:create", None, None), ("submission:status", "pending", None),
        ("submission:status", "running", rid), ("chat:turn:start", None, rid), ("chat:turn:finish", "completed", rid),
        ("submission:status", "completed", rid)]
    assert seen[0].payload == {"submission_id": "job-1", "request_id": None, "idempotency_key": "k1"}
    assert seen[3].payload == IsPartialDict(trigger="submission", admission="execute-submission")


async def test_cancelled_and_cleared_submissions_are_status_events() -> None:
    gate = asyncio.Event()
    agent = scripted_agent(S([[S.text("slow "), S.wait(gate), S.text("end")]]))
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="submission:status"):
        for n in "abc":
            await agent.submit_messages([user_message(n)], submission_id=n)
        await eventually(lambda: (agent.inspect_submission("a") or {}).get("status") == "running")
        agent.cancel_submission("b")
        agent.clear_messages()
        gate.set()
        await agent.submissions_task
    by_id: dict[str, list[str]] = {}
    for e in seen:
        by_id.setdefault(e.payload["submission_id"], []).append(e.payload["status"])
    assert by_id == {"a": ["pending", "running", "aborted"], "b": ["pending", "aborted"], "c": ["pending", "skipped"]}


async def test_submission_recovery_after_a_dead_process_is_a_status_event(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb.store import owners

    cls = agent_class(S([[S.text("again")]]))
    first = cls("r", db=tmp_path / "a.sqlite")
    rows = runtime_of(first).store.submissions
    rows.accept("lost", None, [user_message("hi")], "d", None)
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", "dead-process")
        rows.start("lost", "req-dead")
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=runtime_of(first).key, names="submission:*"):
        again = cls("r", db=tmp_path / "a.sqlite")
        await again.submissions_task
    assert [e.payload["status"] for e in seen] == ["pending", "running", "completed"]


async def test_every_fetch_is_an_event_refused_ones_included(server: str) -> None:  # noqa: F811
    """Think's fetch-tools.test.ts `events`: `tool:fetch` on every call, blocked attempts too."""
    fetch = fetch_tool(allowed_hosts=["127.0.0.1"], allow_private=["127.0.0.1"])
    seen: list[events.Event] = []
    with events.subscribe(seen.append, names="tool:fetch"):
        await fetch.invoke({"url": f"{server}/json"})
        await fetch.invoke({"url": f"{server}/missing"})
        await fetch.invoke({"url": "http://example.com/x"})
    assert [(e.agent, e.request_id, e.payload) for e in seen] == [
        (None, None, {"tool": "fetch", "ok": True, "requested_url": f"{server}/json", "final_url": f"{server}/json",
                      "status": 200, "bytes": 8, "truncated": False}),
        (None, None, {"tool": "fetch", "ok": False, "requested_url": f"{server}/missing", "final_url": None,
                      "status": 404, "bytes": None, "truncated": False, "code": "http_error"}),
        (None, None, {"tool": "fetch", "ok": False, "requested_url": "http://example.com/x", "final_url": None,
                      "status": None, "bytes": None, "truncated": False, "code": "not_allowed"})]


async def test_a_fetch_inside_a_turn_names_the_agent_and_request(server: str) -> None:  # noqa: F811
    fetch = fetch_tool(allowed_hosts=["127.0.0.1"], allow_private=["127.0.0.1"])
    agent = scripted_agent(S([[S.tool_call("fetch", {"url": f"{server}/json"})], [S.text("got it")]]), tools=[fetch])
    seen: list[events.Event] = []
    with events.subscribe(seen.append, names=["tool:fetch", "chat:tool:*"]):
        result = await agent.send("read it")
    assert [(e.name, e.agent, e.request_id) for e in seen] == [
        (name, runtime_of(agent).key, result.request_id)
        for name in ("chat:tool:call", "tool:fetch", "chat:tool:result")]
    assert seen[1].payload == IsPartialDict(ok=True, status=200, bytes=8)


async def test_a_stall_routed_into_recovery_emits_stalled_and_the_recovery_events() -> None:
    await warm_litellm()
    script = S([[S.text("partial "), S.stall()], [S.text("and the rest.")]])
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2,
                           on_chat_recovery=lambda self, ctx: RecoveryDecision(continue_=True))
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names=["chat:stream:*", "chat:recovery:*", "chat:turn:*"]):
        result = await agent.send("go")
        await settle_recovery(agent)
    rid = result.request_id
    assert [(e.name, e.request_id) for e in seen][:3] == [
        ("chat:turn:start", rid), ("chat:stream:stalled", rid), ("chat:turn:finish", rid)]
    assert seen[1].payload == {"request_id": rid, "timeout_ms": 200.0}
    recovery = {"incident_id": rid, "request_id": rid, "attempt": 1, "max_attempts": IsInt(),
                "recovery_kind": "continue"}
    assert [(e.name, e.payload) for e in seen[3:] if e.name.startswith("chat:recovery:")] == [
        ("chat:recovery:detected", recovery), ("chat:recovery:scheduled", recovery),
        ("chat:recovery:attempt", recovery), ("chat:recovery:completed", recovery)]
    second = [e for e in seen if e.name == "chat:turn:start"][1]
    assert second.payload == IsPartialDict(trigger="recovery-continue", continuation=True)


async def test_exhausted_recovery_is_an_event() -> None:
    await warm_litellm()
    script = S([[S.text("try 0 "), S.stall()], [S.stall()], [S.stall()]])  # the retry makes no progress
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2, chat_recovery_max_attempts=1,
                           on_chat_recovery=lambda self, ctx: RecoveryDecision(continue_=True))
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="chat:recovery:*"):
        first = await agent.send("go")
        await settle_recovery(agent)
    # the continuation stalls too: attempt 1 fails, and its own incident (attempt 2) finds no attempt left
    by_attempt = {n: [(e.name, e.payload.get("reason")) for e in seen if e.payload["attempt"] == n] for n in (1, 2)}
    assert by_attempt == {
        1: [("chat:recovery:detected", None), ("chat:recovery:scheduled", None), ("chat:recovery:attempt", None),
            ("chat:recovery:failed", "aborted")],
        2: [("chat:recovery:detected", None), ("chat:recovery:exhausted", "max_attempts_exceeded")]}
    assert len(seen) == 6
    assert {e.payload["incident_id"] for e in seen} == {first.request_id}  # one chain


async def test_a_dead_process_turn_is_detected_and_by_default_not_continued(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = agent_class(S([]))
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent="Recovering:r", names="chat:recovery:*"):
        cls("r", db=tmp_path / "a.sqlite")
    assert [(e.name, e.request_id, e.payload.get("reason")) for e in seen] == [
        ("chat:recovery:detected", "req-dead", None), ("chat:recovery:skipped", "req-dead", "declined")]


async def test_schedules_emit_create_execute_error_and_cancel(tmp_path: Path) -> None:
    clock = FakeClock(1_767_225_600.0)
    calls: list[Any] = []

    def flaky(self: Think, ctx: Any) -> None:
        calls.append(ctx)
        raise RuntimeError("the feed is down")

    cls = type("Scheduled", (Think,), {"get_model": lambda self: S([]).model, "schedule_clock": clock,
                                       "flaky": flaky})
    agent = cls("s", db=tmp_path / "a.sqlite")
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="schedule:*"):
        agent.schedule_every(60, agent.flaky, id="feed")
        clock.advance(60)
        await eventually(lambda: len(calls) == 1 and any(e.name == "schedule:error" for e in seen))
        agent.cancel_schedule("feed")
    fields = {"callback": IsStr(regex=r".*\bflaky\(ctx\)"), "id": "feed"}
    assert [(e.name, e.payload) for e in seen] == [
        ("schedule:create", fields), ("schedule:execute", fields),
        ("schedule:error", {**fields, "error": "RuntimeError: the feed is down", "attempts": 1}),
        ("schedule:cancel", fields)]
    if agent.schedules_task is not None:
        agent.schedules_task.cancel()
        await asyncio.gather(agent.schedules_task, return_exceptions=True)


async def test_a_sub_agent_has_its_own_key_and_the_parent_filter_leaves_it_out() -> None:
    parent = scripted_agent(S([[S.text("parent")]]), name="p")
    child = parent.sub_agent(type(scripted_agent(S([[S.text("child")]]), name="proto")), "c")
    mine: list[events.Event] = []
    every: list[events.Event] = []
    with events.subscribe(mine.append, agent=parent, names="chat:turn:start"), \
            events.subscribe(every.append, names="chat:turn:start"):
        await child.send("hi")
        await parent.send("hi")
    assert [e.agent for e in every] == [runtime_of(child).key, runtime_of(parent).key]
    assert runtime_of(child).key.startswith(runtime_of(parent).key + "/")
    assert [e.agent for e in mine] == [runtime_of(parent).key]


# -- actions and notices (wired after their branches landed) -------------------------------------
async def test_an_actions_ledger_and_a_notice_emit_their_events() -> None:
    """Think's `action:ledger:settled` / `action:ledger:replayed` (a settled result replayed, never
    re-run) and `notice:delivered`, with the agent they belong to."""
    from think_nb import action

    @action(description="Echo a message.", idempotency_key="message")
    def echo(message: str) -> str:
        return f"echo: {message}"

    script = S([[S.tool_call("echo", {"message": "hi"}, id="tc1")], [S.text("ok")],
                [S.tool_call("echo", {"message": "hi"}, id="tc2")], [S.text("ok")]])
    agent = scripted_agent(script, tools=[], get_actions=lambda self: [echo])
    key = runtime_of(agent).key
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names=["action:*", "notice:*"]):
        await agent.send("one")
        await agent.send("two")
        await agent.deliver_notice("The build finished.")
    ledger = {"action": "echo", "key": "action:echo:hi", "input_hash": IsStr()}
    assert [(e.name, e.payload) for e in seen] == [
        ("action:ledger:settled", ledger), ("action:ledger:replayed", ledger),
        ("notice:delivered", {"channel": "web", "kind": "notice", "inform_model": False})]
    assert {e.agent for e in seen} == {key}
