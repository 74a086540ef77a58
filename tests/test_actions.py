"""Actions (issue 30, `think_nb.actions`): `@action` / `get_actions()` with Think's semantics — tool
hooks, merge order, permissions, timeouts, bounded outputs, error envelopes, the durable
idempotency ledger (also across a restart) and reply attachments. Cases ported from Think's
`hooks.test.ts` ("Think — actions compile into guarded tools") and `actions-attach-reply.test.ts`;
approvals and durable pauses are in `test_action_approvals.py`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3
import time
from typing import Any

import pytest
from dirty_equals import IsStr

from agents import scripted_agent
from think_nb import ActionContext, Think, ToolCallDecision, action, tool
from think_nb.actions.context import MAX_REPLY_ATTACHMENTS
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S

PENDING = {"error": {"name": "ActionPendingError", "message": (
    "A prior attempt of this action is in an unknown state; not re-executed. Manual reconciliation may be required.")}}


def echo_action(runs: list, **options: Any) -> Any:
    """Think's test `echo` action: records each run's input and context in `runs`."""

    @action(description="Echo a message.", **options)
    def echo(message: str, ctx: ActionContext) -> str:
        runs.append({"message": message, "request_id": ctx.request_id, "tool_call_id": ctx.tool_call_id,
                     "messages": len(ctx.messages)})
        return f"action echo: {message}"

    return echo


def calls(*inputs: dict, ids: tuple[str, ...] = ()) -> S:
    """A script: step 1 calls `echo` with each input (ids `tc1`, `tc2`, ... unless given), step 2 answers."""
    ids = ids or tuple(f"tc{n + 1}" for n in range(len(inputs)))
    return S([[S.tool_call("echo", i, id=c) for i, c in zip(inputs, ids, strict=True)], [S.text("ok")]])


def acting(script: S, actions: Any, name: str = "act", **attrs: Any) -> Think:
    """An agent on `script` whose `get_actions()` returns `actions` (and no tools)."""
    return scripted_agent(script, tools=[], name=name, get_actions=lambda self: actions, **attrs)


def tool_part(agent: Think, call_id: str = "tc1") -> dict:
    return next(p for m in agent.messages for p in m["parts"] if p.get("toolCallId") == call_id)


def ledger(agent: Think) -> list[dict]:
    return runtime_of(agent).store.actions.ledger()


# -- compiled into the turn's tools ---------------------------------------------------------------
async def test_an_action_runs_through_the_tool_hooks_with_its_context() -> None:
    """Think: "executes an action through the tool-call hooks" (hooks.test.ts)."""
    runs: list = []
    seen: list = []
    agent = acting(calls({"message": "hello"}), [echo_action(runs)],
                   before_tool_call=lambda self, ctx: seen.append(("before", ctx.tool_name, ctx.input)),
                   after_tool_call=lambda self, ctx: seen.append(("after", ctx.tool_name, ctx.success, ctx.output)))
    result = await agent.send("call echo action")
    assert result.status == "completed"
    assert seen == [("before", "echo", {"message": "hello"}), ("after", "echo", True, "action echo: hello")]
    assert runs == [{"message": "hello", "request_id": result.request_id, "tool_call_id": "tc1", "messages": 2}]
    assert agent.messages == [
        {"id": IsStr(), "role": "user", "parts": [{"type": "text", "text": "call echo action"}]},
        {"id": IsStr(), "role": "assistant", "metadata": agent.messages[1]["metadata"], "parts": [
            {"type": "step-start"},
            {"type": "tool-echo", "toolCallId": "tc1", "state": "output-available", "input": {"message": "hello"},
             "output": "action echo: hello"},
            {"type": "step-start"}, {"type": "text", "text": "ok", "state": "done"}]}]


async def test_the_model_is_offered_the_action_without_its_context_parameter_after_get_tools() -> None:
    """Think's merge order: `getTools()` → `getActions()` (a later key wins) → extensions."""

    @tool
    def echo(message: str) -> str:
        """The tool of the same name, which the action replaces."""
        return "the tool ran"

    runs: list = []
    script = calls({"message": "hi"})
    agent = scripted_agent(script, tools=[echo], get_actions=lambda self: [echo_action(runs)])
    await agent.send("go")
    assert script.requests[0]["tools"] == [{"type": "function", "function": {
        "name": "echo", "description": "Echo a message.",
        "parameters": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}}}}]
    assert tool_part(agent)["output"] == "action echo: hi" and len(runs) == 1


async def test_get_actions_as_a_dict_names_an_action_made_without_a_name() -> None:
    runs: list = []
    script = S([[S.tool_call("shout", {"message": "x"}, id="tc1")], [S.text("ok")]])
    agent = acting(script, {"shout": echo_action(runs)})
    await agent.send("go")
    assert tool_part(agent)["type"] == "tool-shout" and tool_part(agent)["output"] == "action echo: x"


def test_bad_definitions_are_refused_in_one_line() -> None:
    """Think's `action()` validation (durable-pause with approval off) and think_nb's own checks."""
    with pytest.raises(UserError, match="approval_when=False must be a function"):
        action(approval="durable-pause", approval_when=False)(lambda message: message)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="risk='severe'"):
        action(risk="severe")(lambda message: message)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="idempotency_key='order' names no input field"):
        @action(idempotency_key="order")
        def refund(order_id: str) -> str:
            return order_id
    with pytest.raises(UserError, match="approval='later'"):
        action(approval="later")(lambda message: message)
    with pytest.raises(UserError, match="an action returns one result"):
        @action
        async def stream(n: int) -> Any:
            yield n
    with pytest.raises(UserError, match="write `ctx: ActionContext`"):
        @action
        def untyped(n: int, ctx) -> int:  # type: ignore[no-untyped-def]
            return n
    with pytest.raises(UserError, match=r"^action 'nohint': parameter 'n' has no type hint"):
        @action
        def nohint(n) -> int:  # type: ignore[no-untyped-def]
            return 1


async def test_an_entry_that_is_not_an_action_fails_the_turn_naming_the_fix() -> None:
    def plain(message: str) -> str:
        return message

    agent = acting(calls({"message": "x"}), [plain])
    result = await agent.send("go")
    assert result.status == "error" and "decorate it with @action" in (result.error or "")


# -- permissions -----------------------------------------------------------------------------------
async def test_permissioned_actions_are_allowed_by_default() -> None:
    """Think: "allows permissioned actions by default"."""
    runs: list = []
    agent = acting(calls({"message": "hello"}), [echo_action(runs, permissions=["echo:run"])])
    await agent.send("go")
    assert len(runs) == 1 and tool_part(agent)["output"] == "action echo: hello"


async def test_a_permission_the_turn_did_not_grant_refuses_the_call_before_it_runs() -> None:
    """Think: "denies permissioned actions before execute"."""
    runs: list = []
    after: list = []
    script = calls({"message": "hello"})
    agent = acting(script, [echo_action(runs, permissions=["echo:run"])],
                   authorize_turn=lambda self, ctx: {"allowed": True, "granted_permissions": []},
                   after_tool_call=lambda self, ctx: after.append((ctx.success, ctx.output)))
    result = await agent.send("go")
    refused = {"error": {"name": "ActionAuthorizationError", "message": "Missing required permission: echo:run",
                         "permissions": ["echo:run"]}}
    assert result.status == "completed" and runs == [] and after == [(True, refused)]
    assert tool_part(agent) == {"type": "tool-echo", "toolCallId": "tc1", "state": "output-available",
                                "input": {"message": "hello"}, "output": refused}
    assert "Missing required permission: echo:run" in str(script.requests[-1]["messages"][-1])  # the model reads it


async def test_authorize_turn_sees_the_final_context_and_its_refusal_reason_reaches_the_model() -> None:
    seen: list = []
    runs: list = []

    def authorize_turn(self: Think, ctx: Any) -> Any:
        seen.append((sorted(ctx.tools), ctx.request_id != ""))
        return False

    agent = acting(calls({"message": "hello"}), [echo_action(runs)], authorize_turn=authorize_turn)
    await agent.send("go")
    assert seen == [(["echo"], True)] and runs == []
    assert tool_part(agent)["output"] == {"error": {"name": "ActionAuthorizationError",
                                                    "message": "Action is not authorized", "permissions": []}}


async def test_authorize_action_decides_each_call_with_its_input_and_function_valued_permissions() -> None:
    """Think: "supports function-valued approval and permission policies" (the permission half)."""
    seen: list = []
    runs: list = []

    def authorize_action(self: Think, ctx: Any) -> Any:
        seen.append((ctx.action, ctx.kind, ctx.input, ctx.required_permissions, ctx.tool_call_id))
        return ctx.input["message"] != "no" or {"allowed": False, "reason": "not that one"}

    echo = echo_action(runs, permissions=lambda value: [f"echo:{value['message']}"])
    agent = acting(calls({"message": "yes"}, {"message": "no"}), [echo], authorize_action=authorize_action)
    await agent.send("go")
    assert seen == [("echo", "server", {"message": "yes"}, ["echo:yes"], "tc1"),
                    ("echo", "server", {"message": "no"}, ["echo:no"], "tc2")]
    assert [r["message"] for r in runs] == ["yes"]
    assert tool_part(agent, "tc2")["output"] == {"error": {"name": "ActionAuthorizationError",
                                                           "message": "not that one", "permissions": ["echo:no"]}}


async def test_an_authorize_action_that_returns_nonsense_fails_that_call_only() -> None:
    runs: list = []
    agent = acting(calls({"message": "x"}), [echo_action(runs)], authorize_action=lambda self, ctx: "yes")
    result = await agent.send("go")
    output = tool_part(agent)["output"]
    assert result.status == "completed" and runs == []
    assert output["error"]["name"] == "HookError" and "return True, False or" in output["error"]["message"]


# -- outputs ---------------------------------------------------------------------------------------
async def test_a_raised_error_becomes_a_structured_output() -> None:
    """Think: "maps thrown action errors to structured tool output"."""

    @action
    def echo(message: str) -> str:
        """Fail."""
        raise ValueError("action failed")

    agent = acting(calls({"message": "x"}), [echo])
    await agent.send("go")
    assert tool_part(agent)["output"] == {"error": {"name": "ValueError", "message": "action failed"}}
    assert ledger(agent) == []  # released: a later attempt may run


async def test_a_call_past_its_timeout_is_a_timeout_output_and_its_signal_is_aborted() -> None:
    """Think: "times out actions with a structured tool output" (default 30 s, here 0.2 s)."""
    seen: list = []

    @action(timeout=0.2)
    async def echo(message: str, ctx: ActionContext) -> str:
        """Hang."""
        try:
            await asyncio.Event().wait()
        finally:
            seen.append((ctx.signal.aborted, ctx.signal.reason))
        return "never"

    agent = acting(calls({"message": "x"}), [echo])
    await agent.send("go")
    assert tool_part(agent)["output"] == {"error": {"name": "TimeoutError",
                                                    "message": "Action timed out after 0.2 s"}}
    assert seen == [(True, "timed out")]
    assert echo_action([]).timeout == 30.0  # Think's default


async def test_a_long_string_output_is_cut_at_20000_characters() -> None:
    """Think: "truncates oversized action outputs before model consumption"."""

    @action
    def echo(message: str) -> str:
        """Long."""
        return "x" * 25_000

    agent = acting(calls({"message": "x"}), [echo])
    await agent.send("go")
    assert tool_part(agent)["output"] == "x" * 20_000 + "\n\n[truncated 5000 chars]"


async def test_a_long_object_output_becomes_a_truncated_preview() -> None:
    @action
    def echo(message: str) -> dict:
        """Long."""
        return {"rows": ["y" * 100] * 300}

    agent = acting(calls({"message": "x"}), [echo])
    await agent.send("go")
    text = '{"rows":[' + ",".join(['"' + "y" * 100 + '"'] * 300) + "]}"
    assert tool_part(agent)["output"] == {"truncated": True, "chars": len(text),
                                          "preview": text[:20_000] + f"\n\n[truncated {len(text) - 20_000} chars]"}


async def test_outputs_that_are_not_json_are_normalized() -> None:
    """Think: "normalizes non-JSON-safe action outputs" (bigint and cycles there; Python's here)."""

    @action
    def echo(message: str) -> dict:
        """Odd values."""
        loop: list = []
        loop.append(loop)
        return {"when": dt.datetime(2026, 1, 2, 3, 4, 5), "tags": {"b", "a"}, "nan": float("nan"), "loop": loop}

    agent = acting(calls({"message": "x"}), [echo])
    await agent.send("go")
    assert tool_part(agent)["output"] == {"when": "2026-01-02T03:04:05", "tags": ["a", "b"], "nan": None,
                                          "loop": [IsStr(regex=r".*(cycle|circular|recursion).*")]}


# -- the ledger --------------------------------------------------------------------------------------
async def test_a_settled_result_is_replayed_never_rerun_also_after_a_restart() -> None:
    """Think: "records and replays settled action ledger rows"; a new agent object on the file is a restart."""
    runs: list = []
    echo = echo_action(runs, idempotency_key="message")
    script = S([[S.tool_call("echo", {"message": "hello"}, id=f"tc{n}")] if n % 2 else [S.text("ok")]
                for n in range(1, 7)])
    agent = acting(script, [echo])
    await agent.send("one")
    assert ledger(agent) == [{"key": "action:echo:hello", "action_name": "echo", "request_id": IsStr(),
                              "tool_call_id": "tc1", "input_hash": IsStr(), "status": "settled",
                              "result": '{"valuePresent":true,"value":"action echo: hello"}',
                              "created_at": pytest.approx(time.time(), abs=60), "updated_at": pytest.approx(
                                  time.time(), abs=60)}]
    await agent.send("two")
    restarted = type(agent)("act")
    await restarted.send("three")
    assert len(runs) == 1
    assert [tool_part(restarted, c)["output"] for c in ("tc1", "tc3", "tc5")] == ["action echo: hello"] * 3


async def test_the_same_key_with_another_input_is_a_conflict_and_does_not_run() -> None:
    """Think: "returns a programming error for action ledger key/input conflicts" — for a call running
    at the same time (tc2) and for a settled key (tc3)."""
    runs: list = []
    script = S([[S.tool_call("echo", {"message": "hello"}, id="tc1"), S.tool_call("echo", {"message": "x"}, id="tc2")],
                [S.text("ok")], [S.tool_call("echo", {"message": "other"}, id="tc3")], [S.text("ok")]])
    agent = acting(script, [echo_action(runs, idempotency_key=lambda value: "conflict-key")])
    await agent.send("one")
    await agent.send("two")
    assert [r["message"] for r in runs] == ["hello"]
    conflict = {"error": {"name": "ActionKeyConflict", "message": (
        'Idempotency key "action:echo:conflict-key" for action "echo" was reused with different input. This is a '
        "programming error; do not retry.")}}
    assert [tool_part(agent, c)["output"] for c in ("tc1", "tc2", "tc3")] == ["action echo: hello", conflict, conflict]


def pending_row(agent: Think, key: str, age_s: float = 0.0) -> None:
    """A `pending` ledger row for `key`, `age_s` seconds old (a process that died while the call ran)."""
    from think_nb.actions.ledger import input_hash

    rows = runtime_of(agent).store.actions
    assert rows.claim(key, "echo", "req-dead", "tc-dead", input_hash({"message": "hello"}),
                      reclaim_after=None)[0] == "claimed"
    with sqlite3.connect(agent.db_path) as db:
        db.execute("UPDATE think_action_ledger SET updated_at = updated_at - ? WHERE agent_key = ? AND key = ?",
                   (age_s, rows.agent_key, key))


async def test_an_unknown_pending_row_blocks_the_call() -> None:
    """Think: "does not execute when the action ledger has an unknown pending row"."""
    runs: list = []
    agent = acting(calls({"message": "hello"}), [echo_action(runs, idempotency_key="message")])
    pending_row(agent, "action:echo:hello")
    await agent.send("go")
    assert runs == [] and tool_part(agent)["output"] == PENDING


async def test_a_stale_pending_row_of_an_explicit_key_is_reclaimed_after_the_lease() -> None:
    """Think: "reclaims a stale explicit-key pending row and settles it" (lease 300 s, Think's 5 minutes)."""
    runs: list = []
    agent = acting(calls({"message": "hello"}), [echo_action(runs, idempotency_key="message")])
    pending_row(agent, "action:echo:hello", age_s=301)
    await agent.send("go")
    assert len(runs) == 1 and tool_part(agent)["output"] == "action echo: hello"
    assert [(r["status"], r["tool_call_id"]) for r in ledger(agent)] == [("settled", "tc1")]
    assert ledger(agent)[0]["updated_at"] == pytest.approx(time.time(), abs=60)  # the lease was refreshed


async def test_a_pending_row_within_the_lease_a_fallback_key_or_a_disabled_lease_is_not_reclaimed() -> None:
    """Think: "does not reclaim a stale fallback-key pending row" / "... when the lease is disabled"."""
    runs: list = []
    fresh = acting(calls({"message": "hello"}), [echo_action(runs, idempotency_key="message")], name="fresh")
    pending_row(fresh, "action:echo:hello", age_s=200)
    fallback = acting(calls({"message": "hello"}), [echo_action(runs)], name="fallback")
    pending_row(fallback, "tool:tc1", age_s=10_000)
    disabled = acting(calls({"message": "hello"}), [echo_action(runs, idempotency_key="message")], name="off",
                      action_ledger_pending_retry_lease=False)
    pending_row(disabled, "action:echo:hello", age_s=10_000)
    for agent in (fresh, fallback, disabled):
        await agent.send("go")
        assert tool_part(agent)["output"] == PENDING
    assert runs == []


async def test_a_failed_run_releases_its_key_so_a_later_attempt_runs_again() -> None:
    """Think: "releases action ledger keys after execution failure"."""
    tries: list = []

    @action(idempotency_key="message")
    def echo(message: str) -> str:
        """Fail."""
        tries.append(message)
        raise RuntimeError("ledger action failed")

    script = S([[S.tool_call("echo", {"message": "m"}, id="tc1")], [S.text("ok")],
                [S.tool_call("echo", {"message": "m"}, id="tc2")], [S.text("ok")]])
    agent = acting(script, [echo])
    await agent.send("one")
    await agent.send("two")
    assert tries == ["m", "m"] and ledger(agent) == []
    assert tool_part(agent, "tc2")["output"] == {"error": {"name": "RuntimeError", "message": "ledger action failed"}}


async def test_two_calls_of_one_key_at_once_run_once() -> None:
    """Think: "coalesces same-isolate duplicate action ledger executions"."""
    runs: list = []
    started = asyncio.Event()

    @action(idempotency_key="message")
    async def echo(message: str) -> str:
        """Slow."""
        runs.append(message)
        started.set()
        await asyncio.sleep(0)
        return f"action echo: {message}"

    agent = acting(calls({"message": "hello"}, {"message": "hello"}), [echo])
    await agent.send("go")
    assert runs == ["hello"]
    assert [tool_part(agent, c)["output"] for c in ("tc1", "tc2")] == ["action echo: hello"] * 2
    assert [r["status"] for r in ledger(agent)] == ["settled"]


async def test_without_a_key_the_ledger_keys_the_call_id_and_clear_forgets_it() -> None:
    runs: list = []
    script = S([[S.tool_call("echo", {"message": "a"}, id="tc1")], [S.text("ok")]] * 2)
    agent = acting(script, [echo_action(runs)])
    await agent.send("go")
    assert [r["key"] for r in ledger(agent)] == ["tool:tc1"]
    agent.clear_messages()
    assert ledger(agent) == []
    await agent.send("again")  # the same call id, a new conversation: it runs
    assert len(runs) == 2


# -- reply attachments --------------------------------------------------------------------------------
async def test_attachments_land_in_the_reply_metadata_normalized_and_capped() -> None:
    """Think (actions-attach-reply.test.ts): "attachments on ChatResponseResult", "invalid ignored",
    "normalized", "capped"."""

    @action
    def echo(message: str, ctx: ActionContext) -> str:
        """Attach."""
        ctx.attach_reply({"type": "card", "payload": {"at": dt.date(2026, 1, 2)}})
        for bad in ("text", {"kind": "no type"}, {"type": 3}, ["type"]):
            ctx.attach_reply(bad)  # type: ignore[arg-type]
        for n in range(40):
            ctx.attach_reply({"type": "voice_note", "n": n})
        return "ok"

    responses: list = []
    agent = acting(calls({"message": "x"}), [echo], on_chat_response=lambda self, result: responses.append(result))
    result = await agent.send("go")
    expected = [{"type": "card", "payload": {"at": "2026-01-02"}}] + [
        {"type": "voice_note", "n": n} for n in range(MAX_REPLY_ATTACHMENTS - 1)]
    assert result.message is not None and result.message["metadata"]["attachments"] == expected
    assert agent.messages[-1]["metadata"]["attachments"] == expected and result.attachments == expected
    assert responses[0].attachments == expected


async def test_attachments_reset_per_turn_are_dropped_on_failure_and_not_replayed() -> None:
    """Think: "per-turn reset", "discarded on failure", "no replay on ledger hit", "no-op from policy callbacks"."""

    @action(idempotency_key=lambda value, ctx: ctx.attach_reply({"type": "from-key"}) or value["message"])
    def echo(message: str, ctx: ActionContext) -> str:
        """Attach, then fail on 'boom'."""
        ctx.attach_reply({"type": "card", "message": message})
        if message == "boom":
            raise ValueError("boom")
        return "ok"

    script = S([[S.tool_call("echo", {"message": "a"}, id="tc1"), S.tool_call("echo", {"message": "boom"}, id="tc2")],
                [S.text("ok")], [S.tool_call("echo", {"message": "a"}, id="tc3")], [S.text("ok")]])
    agent = acting(script, [echo])
    first = await agent.send("one")
    second = await agent.send("two")  # "a" again: replayed from the ledger, nothing attached
    assert first.attachments == [{"type": "card", "message": "a"}]
    assert second.attachments == [] and "attachments" not in agent.messages[-1]["metadata"]


async def test_before_tool_call_still_decides_before_an_action_runs() -> None:
    """Think: actions "run through hooks"; a block or substitute means the action never runs."""
    runs: list = []
    agent = acting(calls({"message": "a"}, {"message": "b"}), [echo_action(runs)],
                   before_tool_call=lambda self, ctx: ToolCallDecision.block("no") if ctx.input["message"] == "a"
                   else ToolCallDecision.substitute("instead"))
    await agent.send("go")
    assert runs == [] and ledger(agent) == []
    assert [tool_part(agent, c)["output"] for c in ("tc1", "tc2")] == ["no", "instead"]


async def test_expired_rows_are_swept_when_the_agent_is_created_and_fresh_ones_kept() -> None:
    """Think: "sweeps expired action ledger rows without deleting fresh rows" (settled 30 days, pending
    90 days) and actions-durable-pause's "TTL sweep" (parked calls 30 days)."""
    agent = acting(calls({"message": "x"}), [echo_action([])])
    rows = runtime_of(agent).store.actions
    day = 24 * 3600
    for key, status in (("old-settled", "settled"), ("old-pending", "pending"), ("fresh-settled", "settled"),
                        ("aging-pending", "pending")):
        rows.claim(key, "echo", "r", "c", "h", reclaim_after=None)
        if status == "settled":
            rows.settle(key, '{"valuePresent":true,"value":1}')
    rows.park("actpause_old", "echo", "c1", "r", {"message": "x"}, {"kind": "durable-pause"})
    rows.park("actpause_fresh", "echo", "c2", "r", {"message": "x"}, {"kind": "durable-pause"})
    with sqlite3.connect(agent.db_path) as db:
        for key, age in (("old-settled", 31), ("old-pending", 91), ("aging-pending", 60)):
            db.execute("UPDATE think_action_ledger SET updated_at = updated_at - ? WHERE key = ?", (age * day, key))
        db.execute("UPDATE think_action_pending_approvals SET created_at = created_at - ? WHERE execution_id = ?",
                   (31 * day, "actpause_old"))
    restarted = type(agent)("act")
    assert sorted(r["key"] for r in ledger(restarted)) == ["aging-pending", "fresh-settled"]
    assert [r["execution_id"] for r in restarted.pending_executions()] == ["actpause_fresh"]
