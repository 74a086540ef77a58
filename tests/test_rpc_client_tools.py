"""Client tools given to `chat()` with an executor (Think's RPC client tools: `ChatOptions.clientTools`
+ `onClientToolCall`; cases ported from client-tools.test.ts, "Think — client tools via chat() RPC")."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agents import scripted_agent, texts
from think_nb import Think, tool
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S
from think_nb.turns.assemble import LAST_CLIENT_TOOLS
from think_nb.turns.repair import INTERRUPTED_TEXT

ACTION = {"name": "client_action", "description": "A client tool",
          "parameters": {"type": "object", "properties": {"action": {"type": "string"}}}}
ACTION_2 = {"name": "client_action_2", "description": "Another client tool"}


class Callback:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.ended: tuple = ()

    def on_event(self, raw: str) -> None:
        self.events.append(json.loads(raw)["type"])

    def on_done(self) -> None:
        self.ended = ("done",)

    def on_error(self, message: str) -> None:
        self.ended = ("error", message)


class Executor:
    """An `on_client_tool_call` that records each call and answers it (or raises)."""

    def __init__(self, raises: bool = False) -> None:
        self.calls: list[dict] = []
        self.threads: list[str] = []
        self.raises = raises

    def __call__(self, call: dict) -> dict:
        self.calls.append(call)
        self.threads.append(threading.current_thread().name)
        if self.raises:
            raise ValueError("the client could not do it")
        return {"ok": True, "echoed": call["input"]}


def tool_parts(agent: Think) -> list[dict]:
    return [p for m in agent.messages if m["role"] == "assistant" for p in m["parts"] if "toolCallId" in p]


async def test_the_executor_completes_the_round_trip_inside_one_chat() -> None:
    """Think: `completes the client-tool round trip inline when an executor is supplied` and
    `invokes onClientToolCall across the RPC boundary (caller-supplied executor)`."""
    script = S([[S.tool_call("client_action", {"action": "do_thing"})], [S.text("Continuation after tool")]])
    agent = scripted_agent(script, tools=[])
    executor, callback = Executor(), Callback()
    result = await agent.chat("use client tool", callback, client_tools=[ACTION], on_client_tool_call=executor)
    assert (result.status, callback.ended) == ("completed", ("done",))
    assert executor.calls == [{"tool_name": "client_action", "input": {"action": "do_thing"},
                               "tool_call_id": "call_1_0"}]
    assert executor.threads != [threading.main_thread().name]  # a sync executor runs off the event loop
    assert agent.messages[-1]["parts"] == [
        {"type": "step-start"},
        {"type": "tool-client_action", "toolCallId": "call_1_0", "state": "output-available",
         "input": {"action": "do_thing"}, "output": {"ok": True, "echoed": {"action": "do_thing"}}},
        {"type": "step-start"},
        {"type": "text", "text": "Continuation after tool", "state": "done"},
    ]
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["client_action"]
    assert script.requests[0]["tools"][0]["function"]["parameters"] == ACTION["parameters"]


async def test_the_tools_are_this_turns_only_never_stored() -> None:
    """Think: `registers client tools for the turn WITHOUT polluting the persisted registry
    (recovery safety)`: nothing in `lastClientTools`, and the next turn is not offered them."""
    script = S([[S.tool_call("client_action", {"action": "x"})], [S.text("done")], [S.text("plain")]])
    agent = scripted_agent(script, tools=[])
    await agent.chat("use client tool", Callback(), client_tools=[ACTION], on_client_tool_call=Executor())
    from think_nb.binding import runtime_of

    assert runtime_of(agent).store.state.get(LAST_CLIENT_TOOLS) is None
    assert (await agent.send("again")).status == "completed"
    assert script.requests[2]["tools"] == []
    assert agent.has_pending_interaction() is False


async def test_an_executor_that_raises_is_that_calls_output_error_and_the_turn_goes_on() -> None:
    """Think: `handles an executor that throws without crashing the turn`."""
    script = S([[S.tool_call("client_action", {"action": "x"})], [S.text("It failed, sorry.")]])
    agent = scripted_agent(script, tools=[])
    executor, callback = Executor(raises=True), Callback()
    result = await agent.chat("use client tool", callback, client_tools=[ACTION], on_client_tool_call=executor)
    assert (result.status, callback.ended, len(executor.calls)) == ("completed", ("done",), 1)
    (part,) = tool_parts(agent)
    assert (part["state"], part["errorText"]) == ("output-error", "ValueError: the client could not do it")
    assert texts(agent)[-1] == ("assistant", "It failed, sorry.")


async def test_without_an_executor_the_call_is_left_dangling_and_is_not_a_pending_interaction(
        tmp_path: Path) -> None:
    """Think: `surfaces a dangling tool call when no executor is supplied`, `does not classify an
    interrupted RPC client-tool call as a pending human interaction (recovers, not parks)`: after a
    restart too, and the next turn repairs it as interrupted."""
    script = S([[S.tool_call("client_action", {"action": "x"})], [S.text("Continuation after tool")]])
    agent_cls = type("Dangling", (Think,), {"get_model": lambda self: script.model,
                                            "include_workspace_tools": False})
    agent = agent_cls("d", db=tmp_path / "a.sqlite")
    callback = Callback()
    result = await agent.chat("use client tool", callback, client_tools=[ACTION])
    assert (result.status, callback.ended) == ("completed", ("done",))
    assert "tool-input-available" in callback.events  # streamed to the caller
    (part,) = tool_parts(agent)
    assert part["state"] == "input-available" and len(script.requests) == 1
    assert agent.has_pending_interaction() is False
    assert await agent.wait_until_stable(timeout=5) is True
    again = agent_cls("d", db=tmp_path / "a.sqlite")
    assert again.has_pending_interaction() is False
    await again.send("next")
    assert tool_parts(again)[0]["state"] == "output-error"
    assert tool_parts(again)[0]["errorText"] == INTERRUPTED_TEXT


async def test_parallel_calls_of_one_step_are_all_answered() -> None:
    """Think: `resolves multiple client tools called in parallel within one turn`."""
    script = S([[S.tool_call("client_action", {"action": "a"}), S.tool_call("client_action_2", {})],
                [S.text("Continuation after parallel tools")]])
    agent = scripted_agent(script, tools=[])
    executor = Executor()
    await agent.chat("use client tools", Callback(), client_tools=[ACTION, ACTION_2], on_client_tool_call=executor)
    assert sorted(c["tool_name"] for c in executor.calls) == ["client_action", "client_action_2"]
    assert [(p["type"], p["state"]) for p in tool_parts(agent)] == [
        ("tool-client_action", "output-available"), ("tool-client_action_2", "output-available")]
    assert texts(agent)[-1] == ("assistant", "Continuation after parallel tools")


async def test_an_async_executor_answers_calls_of_several_steps_in_order() -> None:
    """Think: `invokes the executor across multiple sequential steps in one turn`."""
    script = S([[S.tool_call("client_action", {"action": "first"})], [S.tool_call("client_action_2", {})],
                [S.text("Done after two steps")]])
    agent = scripted_agent(script, tools=[])
    seen: list[str] = []

    async def executor(call: dict) -> str:
        seen.append(call["tool_name"])
        return f"did {call['tool_name']}"

    await agent.chat("use client tools", Callback(), client_tools=[ACTION, ACTION_2], on_client_tool_call=executor)
    assert seen == ["client_action", "client_action_2"]
    assert [p["output"] for p in tool_parts(agent)] == ["did client_action", "did client_action_2"]
    assert texts(agent)[-1] == ("assistant", "Done after two steps")


async def test_a_name_a_gated_tool_has_is_refused_before_anything_is_stored() -> None:
    """No approval gate for RPC client tools, so one may not take a gated tool's name (the rule of
    `think_nb.tools.collisions`): one line, nothing stored, no model call."""

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return path

    script = S([[S.text("never")]])
    agent = scripted_agent(script, tools=[delete_file])
    with pytest.raises(UserError, match=r"'delete_file' is the name of a tool of the agent that needs approval"):
        await agent.chat("go", Callback(), client_tools=[{"name": "delete_file"}], on_client_tool_call=Executor())
    assert agent.messages == [] and script.requests == []


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"client_tools": {"name": "x"}}, r"client_tools=\{'name': 'x'\}.*pass a list of tool schemas"),
    ({"client_tools": [{"description": "no name"}]}, "needs a 'name' of letters"),
    ({"client_tools": [{"name": "a b"}]}, "needs a 'name' of letters"),
    ({"client_tools": [{"name": "x"}, {"name": "x"}]}, "the name 'x' is given twice"),
    ({"client_tools": [{"name": "x", "parameters": {"type": "string"}}]}, "must be a JSON object schema"),
    ({"on_client_tool_call": print}, r"needs client_tools="),
    ({"client_tools": [{"name": "x"}], "on_client_tool_call": "run"}, "pass a function of the call"),
])
async def test_bad_client_tools_are_refused_in_one_line(kwargs: dict, message: str) -> None:
    script = S([[S.text("never")]])
    agent = scripted_agent(script)
    with pytest.raises(UserError, match=message):
        await agent.chat("go", Callback(), **kwargs)
    assert agent.messages == [] and script.requests == []
