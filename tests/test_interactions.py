"""Approvals and client tools in the engine: state machine, batch barrier, continuations."""

import asyncio

import pytest
from dirty_equals import IsStr

from agents import scripted_agent, texts, user
from think_nb import Think, client_tool, tool
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S

ran: list = []


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return f"deleted {path}"


@tool(needs_approval=lambda input: input["amount"] > 100)
async def pay(amount: int) -> str:
    """Pay someone."""
    return f"paid {amount}"


tz = client_tool("time_zone", "The user's time zone.", js="return Intl.DateTimeFormat().resolvedOptions().timeZone;")
sel = client_tool("selection", "The page selection.", js="return String(window.getSelection());")


class Updates:
    def __init__(self) -> None:
        self.updated: list[dict] = []

    def on_message_updated(self, message):
        self.updated.append(message)


@pytest.fixture(autouse=True)
def _reset():
    ran.clear()


async def test_approve_runs_the_tool_in_a_continuation_and_the_result_lands_in_the_original_message() -> None:
    script = S([[S.text("Deleting."), S.tool_call("delete_file", {"path": "/tmp/x"})], [S.text("Done, it is gone.")]])
    agent = scripted_agent(script, tools=[delete_file])
    updates = Updates()
    runtime_of(agent).subscribe(updates)
    await agent.send("remove /tmp/x")
    assert ran == [] and len(script.requests) == 1
    assert agent.pending_approvals() == [{"tool_call_id": "call_1_0", "tool_name": "delete_file",
                                          "input": {"path": "/tmp/x"}, "message_id": agent.messages[-1]["id"],
                                          "approval_id": IsStr(regex="approval_.*"), "waiting_on": None}]
    task = agent.approve("call_1_0")
    assert updates.updated[0]["parts"][-1]["state"] == "approval-responded"
    result = await task
    assert (result.status, result.continuation) == ("completed", True)
    assert ran == ["/tmp/x"]
    assert agent.messages == [user("remove /tmp/x"), {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(model=script.model), "parts": [
            {"type": "step-start"}, {"type": "text", "text": "Deleting.", "state": "done"},
            {"type": "tool-delete_file", "toolCallId": "call_1_0", "state": "output-available",
             "input": {"path": "/tmp/x"}, "output": "deleted /tmp/x",
             "approval": {"id": IsStr(), "approved": True}}]}, {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(continuation=True), "parts": [
            {"type": "step-start"}, {"type": "text", "text": "Done, it is gone.", "state": "done"}]}]
    assert updates.updated[-1]["parts"][-1]["state"] == "output-available"
    assert script.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1_0",
                                                  "content": "deleted /tmp/x"}
    assert agent.pending_approvals() == [] and not agent.has_pending_interaction()


from dirty_equals import IsPartialDict  # noqa: E402


async def test_deny_tells_the_model_and_never_runs_the_tool() -> None:
    script = S([[S.tool_call("delete_file", {"path": "/etc"})], [S.text("Understood, I will not.")]])
    agent = scripted_agent(script, tools=[delete_file])
    await agent.send("wipe /etc")
    await agent.deny("call_1_0", "too dangerous")
    assert ran == []
    assert agent.messages[1]["parts"][-1] == {"type": "tool-delete_file", "toolCallId": "call_1_0",
                                              "state": "output-denied", "input": {"path": "/etc"},
                                              "approval": {"id": IsStr(), "approved": False,
                                                           "reason": "too dangerous"}}
    assert script.requests[1]["messages"][-1]["content"] == "The user denied this tool call. too dangerous"
    assert texts(agent)[-1] == ("assistant", "Understood, I will not.")


async def test_predicate_approval_only_gates_matching_inputs() -> None:
    script = S([[S.tool_call("pay", {"amount": 5}), S.tool_call("pay", {"amount": 500})], [S.text("ok")]])
    agent = scripted_agent(script, tools=[pay])
    await agent.send("pay both")
    states = [(p["input"]["amount"], p["state"]) for p in agent.messages[-1]["parts"] if p["type"] == "tool-pay"]
    assert states == [(5, "output-available"), (500, "approval-requested")]
    assert len(script.requests) == 1


async def test_wrong_order_repeated_and_unknown_decisions_change_nothing() -> None:
    script = S([[S.tool_call("delete_file", {"path": "a"})], [S.text("ok")]])
    agent = scripted_agent(script, tools=[delete_file])
    with pytest.raises(UserError, match="No tool call 'nope'"):
        agent.approve("nope")
    await agent.send("go")
    before = agent.get_messages()
    with pytest.raises(UserError, match="is 'approval-requested', not waiting"):
        agent.add_tool_output("call_1_0", "forged")  # a frame cannot give a gated tool an output
    assert agent.messages[-1]["parts"][-1]["state"] == "approval-requested"
    assert ran == []
    await agent.approve("call_1_0")
    with pytest.raises(UserError, match="is 'output-available', not waiting"):
        agent.approve("call_1_0")
    with pytest.raises(UserError, match="not waiting"):
        agent.deny("call_1_0")
    assert ran == ["a"] and before[0] == agent.messages[0]


async def test_pending_approvals_survive_a_restart_and_can_be_approved_from_the_new_object() -> None:
    script = S([[S.tool_call("delete_file", {"path": "kept"})], [S.text("done")]])
    first = scripted_agent(script, tools=[delete_file], name="restart")
    await first.send("go")
    second = scripted_agent(script, tools=[delete_file], name="restart")  # a new object: reads SQLite
    assert [p["tool_call_id"] for p in second.pending_approvals()] == ["call_1_0"]
    await second.approve("call_1_0")
    assert ran == ["kept"]


async def test_client_tool_round_trip_with_two_parallel_calls_and_a_failure() -> None:
    script = S([[S.tool_call("time_zone", {}), S.tool_call("selection", {})], [S.text("You are in Paris time.")]])
    agent = scripted_agent(script, tools=[tz, sel])
    assert runtime_of(agent).client_tool_specs() == [
        {"name": "time_zone", "description": "The user's time zone.",
         "parameters": {"type": "object", "properties": {}},
         "js": "return Intl.DateTimeFormat().resolvedOptions().timeZone;"},
        {"name": "selection", "description": "The page selection.", "parameters": {"type": "object", "properties": {}},
         "js": "return String(window.getSelection());"}]
    await agent.send("where am I?")
    assert [p["state"] for p in agent.messages[-1]["parts"][1:]] == ["input-available", "input-available"]
    assert agent.has_pending_interaction()
    assert agent.add_tool_output("call_1_0", "Europe/Paris") is None  # the batch still waits
    assert len(script.requests) == 1
    task = agent.add_tool_output("call_1_1", error_text="Selection API blocked")
    assert (await task).status == "completed"
    assert [(p["state"], p.get("output"), p.get("errorText")) for p in agent.messages[1]["parts"][1:]] == [
        ("output-available", "Europe/Paris", None), ("output-error", None, "Selection API blocked")]
    assert [m["content"] for m in script.requests[1]["messages"] if m["role"] == "tool"] == [
        "Europe/Paris", "Error: Selection API blocked"]
    assert texts(agent)[-1] == ("assistant", "You are in Paris time.") and not agent.has_pending_interaction()


async def test_a_client_result_arriving_mid_turn_continues_once_the_turn_ends() -> None:
    script = S([[S.tool_call("time_zone", {}), S.text("...and some trailing text", chunk_size=1)],
                [S.text("Noted.")]], delay=0.01)
    agent = scripted_agent(script, tools=[tz])
    seen = asyncio.Event()

    class Panel:
        def on_chunk(self, request_id, chunk, continuation):
            if chunk["type"] == "tool-input-available":
                agent.add_tool_output(chunk["toolCallId"], "UTC")  # the panel answers while text streams
                seen.set()

    runtime_of(agent).subscribe(Panel())
    await agent.send("tz?")
    assert seen.is_set()
    await agent.wait_until_stable(timeout=5)
    assert agent.messages[1]["parts"][1]["state"] == "output-available"
    assert texts(agent)[-1] == ("assistant", "Noted.")


async def test_panel_registered_client_tools_are_offered_and_remembered() -> None:
    script = S([[S.text("a")], [S.text("b")]])
    agent = scripted_agent(script, tools=[])
    copy = {"name": "copy", "description": "Copy to clipboard",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}
    await agent.submit("hi", client_tools=[copy])
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["copy"]
    await agent.continue_last_turn()  # continuations reuse the last request's client tools
    assert [t["function"]["name"] for t in script.requests[1]["tools"]] == ["copy"]


COPY = {"name": "copy", "description": "Copy to clipboard",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}


@pytest.mark.parametrize("declared", ["python", "panel"])
async def test_a_client_call_waiting_for_its_result_is_still_pending_after_a_restart(declared: str) -> None:
    """Think: `waitUntilStable/hasPendingInteraction: client-tool pending counts`, and client
    tool state survives across agent instances. A restarted kernel (a new agent object over the
    same SQLite file) had no turn's client tool names, so the call read as not pending, and a
    panel-registered tool's result was refused as a server tool's."""
    name, tools = ("time_zone", [tz]) if declared == "python" else ("copy", [])
    script = S([[S.tool_call(name, {})], [S.text("Got it.")]])
    first = scripted_agent(script, tools=tools, name=f"restart-{declared}")
    await first.submit("go", client_tools=[COPY] if declared == "panel" else None)
    assert first.has_pending_interaction()
    second = scripted_agent(script, tools=tools, name=f"restart-{declared}")
    assert second.has_pending_interaction()
    assert await second.wait_until_stable(timeout=0.2) is False  # the call waits for the browser, not a turn
    assert (await second.add_tool_output("call_1_0", "done")).status == "completed"
    assert texts(second)[-1] == ("assistant", "Got it.")
    assert not second.has_pending_interaction() and await second.wait_until_stable(timeout=5)


async def test_pending_reads_the_last_turns_tools_when_get_tools_raises_now() -> None:
    """`has_pending_interaction()` asks `get_tools()` for the client tools; one that raises now
    (its error is the next turn's) falls back to the last turn's tools instead of raising here."""
    script = S([[S.tool_call("time_zone", {})]])
    broken = {"on": False}

    def get_tools(self):
        if broken["on"]:
            raise RuntimeError("tools are being rebuilt")
        return [tz]

    agent = scripted_agent(script, get_tools=get_tools, name="broken-tools")
    await agent.send("tz?")
    broken["on"] = True
    assert agent.has_pending_interaction()


async def test_a_server_tool_orphan_after_a_restart_is_not_pending() -> None:
    """Think: a dead server-tool `input-available` orphan does not block stability (nothing will
    answer it; the next turn repairs it), though a panel once registered a client tool."""
    gate = asyncio.Event()

    @tool
    async def slow() -> str:
        """Never answers."""
        await gate.wait()
        return "late"

    script = S([[S.tool_call("slow", {})], [S.text("unused")]])
    first = scripted_agent(script, tools=[slow], name="orphan")
    turn = first.submit("go", client_tools=[COPY])
    await eventually_pending(first)
    second = scripted_agent(script, tools=[slow], name="orphan")  # the first is still running the tool
    assert [p["state"] for p in second.messages[-1]["parts"] if p.get("toolCallId")] == ["input-available"]
    assert not second.has_pending_interaction() and await second.wait_until_stable(timeout=1)
    first.abort_all_requests()
    await turn


async def eventually_pending(agent: Think) -> None:
    from agents import eventually

    await eventually(lambda: any(p.get("state") == "input-available" for m in agent.messages
                                 for p in m.get("parts", [])), what="the tool call is stored")


async def test_a_client_call_only_in_the_streaming_message_is_pending() -> None:
    """Think: `detects a pending CLIENT-tool interaction living ONLY in the in-flight
    accumulator` — the call streamed, the step has not ended, nothing is stored yet."""
    script = S([[S.tool_call("time_zone", {}), S.text("...and some trailing text", chunk_size=1)]], delay=0.01)
    agent = scripted_agent(script, tools=[tz])
    seen = []

    class Panel:
        def on_chunk(self, request_id, chunk, continuation):
            if chunk["type"] == "tool-input-available":
                seen.append(agent.has_pending_interaction())

    runtime_of(agent).subscribe(Panel())
    await agent.send("tz?")
    assert seen == [True]


async def test_clear_messages_forgets_the_panels_client_tool_schemas() -> None:
    """Think: `clear clears stored client tools` — the next turn is not offered them."""
    script = S([[S.text("a")], [S.text("b")]])
    agent = scripted_agent(script, tools=[])
    await agent.submit("hi", client_tools=[COPY])
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["copy"]
    agent.clear_messages()
    await agent.send("again")
    assert script.requests[1]["tools"] in ([], None)


def test_client_tool_needs_a_body() -> None:
    with pytest.raises(UserError, match="needs js="):
        client_tool("x", "y", js=" ")
    assert isinstance(Think, type)


async def test_a_non_json_client_result_is_converted_not_stuck() -> None:
    import datetime

    script = S([[S.tool_call("time_zone", {})], [S.text("ok")]])
    agent = scripted_agent(script, tools=[tz])
    await agent.send("when?")
    task = agent.add_tool_output("call_1_0", {"at": datetime.date(2026, 11, 29), "tags": {"x"}})
    assert (await task).status == "completed"
    assert agent.messages[1]["parts"][-1]["output"] == {"at": "2026-11-29", "tags": ["x"]}


async def test_unknown_branch_ids_are_refused_and_change_nothing() -> None:
    agent = scripted_agent(S([[S.text("a")]]), name="branches")
    await agent.send("q")
    before = agent.messages
    with pytest.raises(UserError, match="No message 'nope'"):
        agent.switch_branch("nope")
    with pytest.raises(UserError, match="No message 'nope'"):
        agent.get_branches("nope")
    assert agent.messages == before and scripted_agent(S([]), name="branches").messages == before


async def test_a_new_message_while_an_approval_waits_says_the_call_did_not_run() -> None:
    script = S([[S.tool_call("delete_file", {"path": "x"})], [S.text("ok, never mind")]])
    agent = scripted_agent(script, tools=[delete_file], name="superseded")
    await agent.send("delete x")
    await agent.send("actually never mind")
    assert ran == [] and agent.pending_approvals() == []
    assert agent.messages[1]["parts"][-1]["errorText"] == (
        "The user sent a new message instead of approving this call, so it did not run.")


async def test_bad_arguments_get_clear_errors() -> None:
    agent = scripted_agent(S([[S.text("a")]]), name="bad-args")
    with pytest.raises(UserError, match="sub_agent\\(\\) needs a Think subclass"):
        agent.sub_agent(int, "x")
    with pytest.raises(UserError, match="configure\\(\\) needs a JSON value"):
        agent.configure(float("nan"))
    await agent.send("go")
    with pytest.raises(UserError, match="use a number >= 0"):
        await agent.replay(speed=-1)
    with pytest.raises(UserError, match="No recorded turn 'req_nope' to replay"):
        await agent.replay("req_nope")


def test_approving_in_a_script_runs_the_approved_call_and_the_continuation_at_once(tmp_path) -> None:
    """No running event loop (a plain script using `agent.run`): `approve` runs the continuation
    turn on the script loop before it returns, as `run` does (it used to do nothing)."""
    from think_nb import Think, tool
    from think_nb.testing import ScriptedModel

    ran = []

    @tool(needs_approval=True)
    def rm(path: str) -> str:
        """Remove a file."""
        ran.append(path)
        return "removed"

    script = ScriptedModel([[ScriptedModel.tool_call("rm", {"path": "/x"})], [ScriptedModel.text("Done.")]])
    cls = type("Script", (Think,), {"get_model": lambda self: script.model, "get_tools": lambda self: [rm],
                                    "include_workspace_tools": False})
    agent = cls("script", db=tmp_path / "s.sqlite")
    assert agent.run("remove /x").status == "completed"
    assert agent.approve(agent.pending_approvals()[0]["tool_call_id"]) is None
    assert ran == ["/x"]
    assert agent.pending_approvals() == [] and agent.turns()[-1]["status"] == "completed"
    texts = [p["text"] for m in agent.messages for p in m["parts"] if p["type"] == "text"]
    assert texts[-1] == "Done." and agent.messages[-1]["role"] == "assistant"


async def test_a_paused_turn_says_it_waits_and_approve_returns_a_readable_awaitable() -> None:
    """Issue 27 §9: the paused turn's result says what it waits for (its status stays `completed`,
    as Think's); `approve()` left as a cell's value reads as a turn, not `<Task pending …>`, and is
    still awaited (and is an asyncio.Task) for the continuation's result."""
    script = S([[S.text("Deleting."), S.tool_call("delete_file", {"path": "/tmp/y"})], [S.text("Gone.")]])
    agent = scripted_agent(script, tools=[delete_file])
    paused = await agent.send("remove /tmp/y")
    assert (paused.status, paused.waiting) == ("completed", ("call_1_0",))
    assert repr(paused) == f"TurnResult({paused.request_id}: completed, waiting for 1 approval (delete_file))"
    task = agent.approve("call_1_0")
    # an asyncio task (nest_asyncio2, applied by a stepper test earlier in the process, rebinds asyncio.Task)
    assert asyncio.isfuture(task) and callable(task.get_coro) and task.get_name()
    assert repr(task) == f"<turn {task.request_id} running: await it for its TurnResult>"
    result = await task
    assert (result.status, result.waiting) == ("completed", ())
    assert repr(task) == f"<turn {task.request_id} completed>"
    ran.clear()
