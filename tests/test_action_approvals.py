"""Approval of actions (issue 30, `think_nb.actions`): `approval-gated` through think_nb's approval
gate with Think's approval descriptor, and `durable-pause` parked in SQLite, decided by
`approve_execution` / `reject_execution` (also after a restart). Cases ported from Think's
`hooks.test.ts` (the approval half of "Think — actions compile into guarded tools") and
`actions-durable-pause.test.ts`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from dirty_equals import IsStr

from agents import scripted_agent
from think_nb import ActionContext, Think, ToolCallDecision, action
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S


def echo_action(runs: list, **options: Any) -> Any:
    """Think's test `echo` action (`approvalSummary` "Approve echo action", risk low)."""
    options.setdefault("approval", "approval-gated")
    options.setdefault("summary", "Approve echo action")
    options.setdefault("risk", "low")

    @action(description="Echo a message.", **options)
    def echo(message: str) -> str:
        runs.append(message)
        return f"action echo: {message}"

    return echo


def script(message: str = "hello", answers: int = 3) -> S:
    """Step 1 calls `echo` (id `tc1`); then plain answers."""
    answer = [[S.text(f"answer {n}")] for n in range(answers)]
    return S([[S.tool_call("echo", {"message": message}, id="tc1")], *answer])


def acting(model: S, actions: list, name: str = "act", **attrs: Any) -> Think:
    return scripted_agent(model, tools=[], name=name, get_actions=lambda self: actions, **attrs)


def part(agent: Think, call_id: str = "tc1") -> dict:
    return next(p for m in agent.messages for p in m["parts"] if p.get("toolCallId") == call_id)


def granted(permissions: list[str]) -> Any:
    """An `authorize_turn` granting `permissions` (the list is read at each turn: it may change)."""
    return lambda self, ctx: {"allowed": True, "granted_permissions": list(permissions)}


# -- approval-gated --------------------------------------------------------------------------------
async def test_the_approval_request_carries_the_action_descriptor_and_the_part_keeps_it() -> None:
    """Think: "emits an approval request with a stable action descriptor"."""
    runs: list = []
    chunks: list = []
    agent = acting(script(), [echo_action(runs, permissions=["echo:run"])], authorize_turn=granted(["echo:run"]),
                   on_chunk=lambda self, chunk: chunks.append(chunk))
    result = await agent.send("call echo action")
    descriptor = {"requestId": result.request_id, "toolCallId": "tc1", "action": "echo",
                  "summary": "Approve echo action", "input": {"message": "hello"}, "permissions": ["echo:run"],
                  "risk": "low", "kind": "approval-gated"}
    assert [c for c in chunks if c["type"] == "tool-approval-request"] == [
        {"type": "tool-approval-request", "approvalId": IsStr(), "toolCallId": "tc1", "approvalDescriptor": descriptor}]
    assert part(agent) == {"type": "tool-echo", "toolCallId": "tc1", "state": "approval-requested",
                           "input": {"message": "hello"}, "approval": {"id": IsStr(), "descriptor": descriptor}}
    assert runs == [] and result.waiting == ("tc1",)


async def test_function_valued_approval_and_permissions() -> None:
    """Think: "supports function-valued approval and permission policies"."""
    runs: list = []
    echo = echo_action(runs, permissions=lambda value: [f"echo:{value['message']}"],
                       approval_when=lambda value, ctx: value["message"] == "hello" and ctx.tool_call_id == "tc1")
    model = S([[S.tool_call("echo", {"message": "hello"}, id="tc1"), S.tool_call("echo", {"message": "hi"}, id="tc2")],
               [S.text("ok")]])
    agent = acting(model, [echo], authorize_turn=granted(["echo:hello", "echo:hi"]))
    await agent.send("go")
    assert part(agent)["approval"]["descriptor"]["permissions"] == ["echo:hello"]
    assert part(agent, "tc2")["output"] == "action echo: hi" and runs == ["hi"]  # approval_when false: inline


async def test_a_refused_gated_action_is_never_asked_about_and_never_runs() -> None:
    """Think: "denies approval-gated actions before prompting"."""
    runs: list = []
    chunks: list = []
    agent = acting(script(), [echo_action(runs, permissions=["echo:run"])], authorize_turn=granted([]),
                   on_chunk=lambda self, chunk: chunks.append(chunk["type"]))
    await agent.send("go")
    assert "tool-approval-request" not in chunks and runs == []
    assert part(agent) == {"type": "tool-echo", "toolCallId": "tc1", "state": "output-available",
                           "input": {"message": "hello"}, "output": {"error": {
                               "name": "ActionAuthorizationError", "message": "Missing required permission: echo:run",
                               "permissions": ["echo:run"]}}}
    assert runtime_of(agent).store.actions.ledger() == []


async def test_an_approved_call_runs_once_and_is_ledgered_only_after_approval() -> None:
    """Think: "resumes and executes an approved action", "records approval-gated actions only after approval"."""
    runs: list = []
    agent = acting(script(), [echo_action(runs, idempotency_key="message")])
    await agent.send("go")
    assert runtime_of(agent).store.actions.ledger() == []
    task = agent.approve("tc1")
    assert task is not None and (await task).status == "completed"
    assert runs == ["hello"]
    assert part(agent) == {"type": "tool-echo", "toolCallId": "tc1", "state": "output-available",
                           "input": {"message": "hello"}, "output": "action echo: hello",
                           "approval": {"id": IsStr(), "approved": True, "descriptor": part(agent)["approval"][
                               "descriptor"]}}
    assert part(agent)["approval"]["descriptor"]["action"] == "echo"
    assert [(r["key"], r["status"]) for r in runtime_of(agent).store.actions.ledger()] == [
        ("action:echo:hello", "settled")]


async def test_authorization_is_checked_again_when_the_approved_call_runs() -> None:
    """Think: "rechecks authorization after approval before execute"."""
    runs: list = []
    grants = ["echo:run"]
    agent = acting(script(), [echo_action(runs, permissions=["echo:run"])], authorize_turn=granted(grants))
    await agent.send("go")
    grants.clear()  # the grant changed before the continuation turn
    await agent.approve("tc1")  # type: ignore[misc]
    assert runs == []
    assert part(agent)["output"] == {"error": {"name": "ActionAuthorizationError",
                                               "message": "Missing required permission: echo:run",
                                               "permissions": ["echo:run"]}}


async def test_an_approved_call_whose_input_before_tool_call_rewrote_does_not_run() -> None:
    """Think: "does not execute an approved action with rewritten input"."""
    runs: list = []
    after: list = []
    agent = acting(script(), [echo_action(runs)], after_tool_call=lambda self, ctx: after.append(ctx.output))
    await agent.send("go")
    agent.before_tool_call = lambda ctx: ToolCallDecision.allow({"message": "rewritten"})
    await agent.approve("tc1")  # type: ignore[misc]
    assert runs == []
    assert after == [{"error": {"name": "ActionApprovalInputError",
                                "message": "Approved action input cannot be changed by before_tool_call"}}]


async def test_a_denied_call_does_not_run() -> None:
    """Think: "does not execute a rejected action"."""
    runs: list = []
    agent = acting(script(), [echo_action(runs)])
    await agent.send("go")
    await agent.deny("tc1", "no")  # type: ignore[misc]
    assert runs == [] and runtime_of(agent).store.actions.ledger() == []
    assert part(agent)["state"] == "output-denied" and part(agent)["approval"]["approved"] is False
    assert part(agent)["approval"]["descriptor"]["action"] == "echo"


async def test_before_tool_call_stays_the_outer_gate_after_approval() -> None:
    """Think: "keeps beforeToolCall as the outer gate after approval"."""
    runs: list = []
    agent = acting(script(), [echo_action(runs)])
    await agent.send("go")
    agent.before_tool_call = lambda ctx: ToolCallDecision.block("blocked by hook")
    await agent.approve("tc1")  # type: ignore[misc]
    assert runs == [] and part(agent)["output"] == "blocked by hook"


async def test_an_edited_input_is_refused_for_an_action() -> None:
    runs: list = []
    agent = acting(script(), [echo_action(runs)])
    await agent.send("go")
    with pytest.raises(UserError, match="cannot be edited"):
        agent.approve("tc1", input={"message": "other"})
    assert part(agent)["state"] == "approval-requested"


# -- durable-pause ------------------------------------------------------------------------------------
def pause_action(runs: list, **options: Any) -> Any:
    """Think's `pauseAction` (summary "Approve pause action", risk high, permission pause:run)."""
    options.setdefault("approval", "durable-pause")

    @action(description="Pause, then echo.", summary="Approve pause action", risk="high", permissions=["pause:run"],
            **options)
    def pauseAction(message: str, ctx: ActionContext) -> str:  # Think's test name
        runs.append((message, ctx.request_id, ctx.tool_call_id))
        ctx.attach_reply({"type": "card"})  # a no-op for an approved durable call (its reply is a later turn's)
        return f"paused-exec: {message}"

    return pauseAction


def pause_script(message: str = "hello", answers: int = 4) -> S:
    return S([[S.tool_call("pauseAction", {"message": message}, id="dp1"), S.text("Asking. ")]]
             + [[S.text(f"answer {n}")] for n in range(answers)])


async def parked(agent: Think) -> str:
    """Send a message; the model's call parks; returns the execution id."""
    result = await agent.send("call pauseAction")
    assert result.status == "completed"
    (row,) = agent.pending_executions()
    return str(row["execution_id"])


async def test_a_durable_pause_parks_without_running_and_the_turn_ends() -> None:
    """Think: "parks for approval without running the side effect", "lists the parked action ... with its
    descriptor"; the turn ends after the step (the model is not called again)."""
    runs: list = []
    model = pause_script()
    agent = acting(model, [pause_action(runs)])
    result = await agent.send("call pauseAction")
    assert runs == [] and model.calls == 1
    (row,) = agent.pending_executions()
    assert row == {"execution_id": IsStr(regex=r"^actpause_[0-9a-f]{32}$"), "source": "action",
                   "action": "pauseAction", "tool_call_id": "dp1", "request_id": result.request_id,
                   "input": {"message": "hello"}, "created_at": row["created_at"], "descriptor": {
                       "requestId": result.request_id, "toolCallId": "dp1", "action": "pauseAction",
                       "summary": "Approve pause action", "input": {"message": "hello"}, "permissions": ["pause:run"],
                       "risk": "high", "kind": "durable-pause"}}
    assert part(agent, "dp1")["output"] == {  # the descriptor stays in the row, not in what the model reads
        "status": "paused", "executionId": row["execution_id"], "action": "pauseAction",
        "message": "This action is awaiting human approval. Stop and wait for the approval result before proceeding."}


async def test_approve_runs_it_once_replaces_the_paused_output_and_continues() -> None:
    """Think: "runs the action exactly once on approve and clears the pending row", "attaches the descriptor
    ... and continues with no open connection on approve", "no-op for durable-pause resume" (attachments)."""
    runs: list = []
    agent = acting(pause_script(), [pause_action(runs)])
    execution_id = await parked(agent)
    request_id = agent.messages[-1]["metadata"]["requestId"]
    assert await agent.approve_execution(execution_id) == "paused-exec: hello"
    assert runs == [("hello", request_id, "dp1")] and agent.pending_executions() == []
    assert part(agent, "dp1")["output"] == "paused-exec: hello"
    assert await agent.wait_until_stable(timeout=60)
    last = agent.messages[-1]
    assert last["metadata"]["continuation"] is True and last["parts"][-1]["text"] == "answer 0"
    assert "attachments" not in last["metadata"]


async def test_a_second_approve_or_an_approve_after_reject_never_runs_it_again() -> None:
    """Think: "errors on a second approve and never double-executes (claim-by-delete)", "errors on
    approve-after-reject"."""
    runs: list = []
    agent = acting(pause_script(), [pause_action(runs)])
    execution_id = await parked(agent)
    assert await agent.approve_execution(execution_id) == "paused-exec: hello"
    again = await agent.approve_execution(execution_id)
    assert again == {"status": "error", "executionId": execution_id,
                     "error": f'Execution "{execution_id}" is no longer pending — it was approved or rejected '
                              "elsewhere."}
    assert await agent.reject_execution(execution_id) == again
    assert len(runs) == 1
    await agent.wait_until_stable(timeout=60)


async def test_concurrent_approves_have_one_winner() -> None:
    """Think: "picks a single winner under concurrent approves"."""
    runs: list = []
    agent = acting(pause_script(), [pause_action(runs)])
    execution_id = await parked(agent)
    outcomes = await asyncio.gather(agent.approve_execution(execution_id), agent.approve_execution(execution_id))
    assert sorted(map(str, outcomes)) == sorted([
        "paused-exec: hello", str({"status": "error", "executionId": execution_id, "error": (
            f'Execution "{execution_id}" is no longer pending — it was approved or rejected elsewhere.')})])
    assert len(runs) == 1
    await agent.wait_until_stable(timeout=60)


async def test_reject_drops_it_without_running_and_the_model_reads_why() -> None:
    """Think: "rejects without running the action and clears the pending row"."""
    runs: list = []
    model = pause_script()
    agent = acting(model, [pause_action(runs)])
    execution_id = await parked(agent)
    rejected = {"status": "rejected", "executionId": execution_id, "action": "pauseAction", "reason": "not now"}
    assert await agent.reject_execution(execution_id, "not now") == rejected
    assert runs == [] and agent.pending_executions() == [] and part(agent, "dp1")["output"] == rejected
    assert await agent.wait_until_stable(timeout=60)
    assert "not now" in str(model.requests[-1]["messages"]) and agent.messages[-1]["parts"][-1]["text"] == "answer 0"


async def test_a_parked_call_survives_a_restart_and_is_approved_by_a_new_agent_object() -> None:
    """Think's `action-pause-recovery.test.ts`: the row, not the process, holds the pause."""
    runs: list = []
    agent = acting(pause_script(), [pause_action(runs)])
    execution_id = await parked(agent)
    restarted = type(agent)("act")
    assert [r["execution_id"] for r in restarted.pending_executions()] == [execution_id]
    assert await restarted.approve_execution(execution_id) == "paused-exec: hello"
    assert part(restarted, "dp1")["output"] == "paused-exec: hello" and len(runs) == 1
    assert await restarted.wait_until_stable(timeout=60)
    assert restarted.messages[-1]["parts"][-1]["text"] == "answer 0"


async def test_a_parked_call_is_rejected_by_a_new_agent_object_after_a_restart() -> None:
    runs: list = []
    agent = acting(pause_script(), [pause_action(runs)])
    execution_id = await parked(agent)
    restarted = type(agent)("act")
    rejected = await restarted.reject_execution(execution_id)
    assert rejected == {"status": "rejected", "executionId": execution_id, "action": "pauseAction",
                        "reason": "Rejected by user"}
    assert part(restarted, "dp1")["output"] == rejected and runs == [] and restarted.pending_executions() == []
    assert await restarted.wait_until_stable(timeout=60)


async def test_approval_when_false_runs_it_inline_and_true_parks_it() -> None:
    """Think: "runs inline (no park) when the approval predicate returns false", "parks when ... true"."""
    runs: list = []
    model = S([[S.tool_call("pauseAction", {"message": "other"}, id="dp1"),
                S.tool_call("pauseAction", {"message": "hello"}, id="dp2")], [S.text("ok")]])
    agent = acting(model, [pause_action(runs, approval_when=lambda value: value["message"] == "hello")])
    await agent.send("go")
    assert part(agent, "dp1")["output"] == "paused-exec: other" and [r[0] for r in runs] == ["other"]
    assert [r["tool_call_id"] for r in agent.pending_executions()] == ["dp2"]


async def test_an_action_removed_before_approve_is_a_structured_error_and_consumes_the_approval() -> None:
    """Think: "returns a structured error when the action was removed before approve"."""
    runs: list = []
    offered = [pause_action(runs)]
    agent = acting(pause_script(), offered)
    execution_id = await parked(agent)
    offered.clear()
    result = await agent.approve_execution(execution_id)
    assert result == {"status": "error", "executionId": execution_id, "action": "pauseAction",
                      "error": 'Action "pauseAction" is no longer registered, so the approved call cannot run. The '
                               "approval was consumed."}
    assert runs == [] and agent.pending_executions() == [] and part(agent, "dp1")["output"] == result
    await agent.wait_until_stable(timeout=60)


async def test_a_keyed_durable_action_approved_twice_runs_once() -> None:
    """Think: "does not double-execute across a duplicate approve when idempotency-keyed"."""
    runs: list = []
    model = S([[S.tool_call("pauseAction", {"message": "keyed"}, id="dp1")], [S.text("a")],
               [S.tool_call("pauseAction", {"message": "keyed"}, id="dp2")], [S.text("b")], [S.text("c")]])
    agent = acting(model, [pause_action(runs, idempotency_key=lambda value: "dp-key")])
    first = await parked(agent)
    assert await agent.approve_execution(first) == "paused-exec: keyed"
    await agent.wait_until_stable(timeout=60)
    second = await parked(agent)
    assert await agent.approve_execution(second) == "paused-exec: keyed"
    await agent.wait_until_stable(timeout=60)
    assert len(runs) == 1


async def test_an_outcome_whose_part_is_gone_is_kept_as_a_system_note() -> None:
    """Think: "labels orphaned durable-pause outcomes without re-invoking the action"."""
    runs: list = []
    agent = acting(pause_script(), [pause_action(runs)])
    execution_id = await parked(agent)
    agent.clear_messages()  # the part is gone; the parked row stays
    await agent.reject_execution(execution_id, "not now")
    (note,) = agent.messages
    assert note["id"].startswith(f"exec-outcome-{execution_id}-") and note["role"] == "system"
    assert '[durable action]' in note["parts"][0]["text"] and '"action":"pauseAction"' in note["parts"][0]["text"]
    assert runs == []
    await agent.wait_until_stable(timeout=60)


async def test_approve_execution_refuses_an_id_that_is_not_a_string() -> None:
    agent = acting(pause_script(), [pause_action([])])
    with pytest.raises(UserError, match="pending_executions"):
        await agent.approve_execution(None)  # type: ignore[arg-type]
