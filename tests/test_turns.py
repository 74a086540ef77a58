"""The turn loop over litellm with scripted models (think_nb.turns, think_nb.agent)."""

import asyncio
import json

import pytest
from dirty_equals import IsPartialDict, IsStr

from agents import eventually, streamed
from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.testing import ScriptedModel
from think_nb.tools.tool import ToolInputError

S = ScriptedModel


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
async def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def agent_for(script: ScriptedModel, tools: list | None = None, **attrs: object) -> Think:
    attrs.setdefault("include_workspace_tools", False)  # these tests see exactly the tools they pass
    cls = type("Scripted", (Think,), {"get_model": lambda self: script.model,
                                      "get_tools": lambda self: tools if tools is not None else [add, fail], **attrs})
    return cls("t")


def user(text: str) -> dict:
    return {"id": IsStr(), "role": "user", "parts": [{"type": "text", "text": text}]}


def meta(script: ScriptedModel, usage: dict) -> dict:
    return {"model": script.model, "usage": usage, "requestId": IsStr(), "finishReason": "stop"}


async def test_multi_step_turn_with_parallel_tool_calls_and_a_failing_tool() -> None:
    script = S([
        [S.text("Working."), S.tool_call("add", {"a": 2, "b": 40}), S.tool_call("fail", {"reason": "nope"}),
         S.usage(10, 5)],
        [S.text("2 + 40 = 42."), S.usage(20, 4)],
    ])
    agent = agent_for(script)
    result = await agent.send("What is 2 + 40?")
    assert (result.status, result.error) == ("completed", None)
    assert agent.messages == [user("What is 2 + 40?"), {
        "id": IsStr(regex=r"msg_.*"), "role": "assistant", "metadata": meta(
            script, {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39, "source": "reported"}),
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Working.", "state": "done"},
            {"type": "tool-add", "toolCallId": "call_1_0", "state": "output-available", "input": {"a": 2, "b": 40},
             "output": 42.0},
            {"type": "tool-fail", "toolCallId": "call_1_1", "state": "output-error", "input": {"reason": "nope"},
             "errorText": "RuntimeError: nope"},
            {"type": "step-start"},
            {"type": "text", "text": "2 + 40 = 42.", "state": "done"},
        ]}]
    # the second model call saw both results, the error as text
    assert script.requests[1]["messages"][-2:] == [
        {"role": "tool", "tool_call_id": "call_1_0", "content": "42.0"},
        {"role": "tool", "tool_call_id": "call_1_1", "content": "Error: RuntimeError: nope"}]
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["add", "fail"]


async def test_chunk_stream_is_the_ai_sdk_sequence() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 2}, chunk_size=6)], [S.text("3", chunk_size=1)]])
    seen: list[dict] = []
    agent = agent_for(script, on_chunk=lambda self, chunk: seen.append(chunk))
    await agent.send("1+2")
    assert [c["type"] for c in seen] == [
        "start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-delta",
        "tool-input-available", "tool-output-available", "finish-step",
        "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"]
    assert seen[-1] == {"type": "finish", "finishReason": "stop", "messageMetadata": IsPartialDict(model=script.model)}


async def test_max_steps_bounds_the_loop() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 1})] for _ in range(5)])
    agent = agent_for(script, max_steps=2)
    result = await agent.send("loop")
    assert result.status == "completed"
    assert len(script.requests) == 2
    assert sum(p["type"] == "tool-add" for p in agent.messages[-1]["parts"]) == 2
    assert agent.messages[-1]["parts"][-1]["state"] == "output-available"


async def test_unknown_tool_and_invalid_arguments_go_back_to_the_model() -> None:
    script = S([[S.tool_call("nope", {}), S.tool_call("add", "{not json")], [S.text("ok")]])
    agent = agent_for(script)
    await agent.send("x")
    parts = agent.messages[-1]["parts"]
    assert parts[1:3] == [
        {"type": "tool-nope", "toolCallId": "call_1_0", "state": "output-error", "input": {},
         "errorText": "LookupError: There is no tool named 'nope'; available tools: add, fail."},
        {"type": "tool-add", "toolCallId": "call_1_1", "state": "output-error", "input": "{not json",
         "errorText": IsStr(regex=r"The tool arguments are not valid JSON .*; send a JSON object\.")}]
    assert script.requests[1]["messages"][-1]["content"].startswith("Error: The tool arguments are not valid JSON")


async def test_tool_input_sent_as_a_json_string_is_parsed_before_validation() -> None:
    # providers and proxies may double-encode the arguments: a JSON string holding the object
    # (Think's normalizeToolInput: "parses a stringified-JSON object input"); issue 30 item 5
    script = S([[S.tool_call("add", json.dumps(json.dumps({"a": 2, "b": 40}))),
                 S.tool_call("add", json.dumps("[2, 40]"))], [S.text("42")]])
    agent = agent_for(script)
    assert (await agent.send("2 + 40?")).status == "completed"
    parsed, not_an_object = agent.messages[-1]["parts"][1:3]
    assert parsed == {"type": "tool-add", "toolCallId": "call_1_0", "state": "output-available",
                      "input": {"a": 2, "b": 40}, "output": 42.0}
    assert (not_an_object["state"], not_an_object["errorText"]) == (
        "output-error", "The tool arguments must be a JSON object, got str.")
    sent = script.requests[1]["messages"]
    assert sent[-3]["tool_calls"][0]["function"]["arguments"] == '{"a":2,"b":40}'  # the model reads the object
    assert sent[-2] == {"role": "tool", "tool_call_id": "call_1_0", "content": "42.0"}


def test_validate_parses_a_json_object_given_as_text() -> None:
    # what a call made from code or an edited approval hands over goes through the same parsing
    assert add.validate('{"a": 1, "b": "2"}') == {"a": 1.0, "b": 2.0}
    with pytest.raises(ToolInputError, match=r"Invalid input for tool 'add': input: Input should be a valid"):
        add.validate("[1, 2]")


async def test_model_error_mid_stream_persists_the_partial_message() -> None:
    script = S([[S.text("Partial answer"), S.error("upstream exploded")]])
    errors: list = []
    # what on_chat_error sees: a ModelError whose cause is the model's own exception (in-process
    # models are called directly), and the partial already in SQLite
    agent = agent_for(script, on_chat_error=lambda self, e: errors.append(
        (type(e).__name__, type(e.__cause__).__name__, "upstream exploded" in str(e.__cause__),
         runtime_of(self).store.messages.branch()[-1]["parts"][-1].get("text"))))
    result = await agent.send("hi")
    assert result.status == "error"
    assert result.error.startswith(f"Model {script.model!r} failed: ") and "upstream exploded" in result.error
    assert errors == [("ModelError", "RuntimeError", True, "Partial answer")]
    stored = agent_for(script).messages  # a fresh object reads SQLite
    assert stored[-1]["parts"] == [{"type": "step-start"},
                                   {"type": "text", "text": "Partial answer", "state": "done"}]
    assert stored == agent.messages
    # the agent stays usable
    script.steps.append([S.text("Recovered.")])
    assert (await agent.send("again")).status == "completed"


async def test_on_chat_error_can_replace_the_message_and_hooks_see_results() -> None:
    script = S([[S.error("raw provider text")]])
    responses = []
    agent = agent_for(script, on_chat_error=lambda self, e: "Something went wrong, try again.",
                      on_chat_response=lambda self, r: responses.append(r))
    result = await agent.send("hi")
    assert (result.status, result.error) == ("error", "Something went wrong, try again.")
    assert [(r.status, r.error) for r in responses] == [("error", "Something went wrong, try again.")]


async def test_on_step_finish_gets_text_calls_results_and_usage() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 2}), S.usage(3, 4)], [S.text("3"), S.usage(5, 1)]])
    steps = []
    agent = agent_for(script, on_step_finish=lambda self, ctx: steps.append(ctx))
    await agent.send("1+2")
    assert [(s.step_number, s.finish_reason, s.text, s.usage["total_tokens"]) for s in steps] == [
        (0, "tool-calls", "", 7), (1, "stop", "3", 6)]
    assert steps[0].tool_calls == [{"toolCallId": "call_1_0", "toolName": "add", "input": {"a": 1, "b": 2}}]
    assert steps[0].tool_results == [{"toolCallId": "call_1_0", "toolName": "add", "output": 3.0}]


async def test_abort_keeps_the_partial_reply() -> None:
    script = S([[S.text("x" * 200, chunk_size=1)]], delay=0.005)
    chunks: list[str] = []
    agent = agent_for(script, on_chunk=streamed(chunks))
    task = agent.submit("long")
    await eventually(lambda: chunks.count("text-delta") >= 10, what="10 deltas streamed")
    rid = runtime_of(agent).streaming_turns()[0]
    agent.abort_request(rid)
    result = await task
    assert result.status == "aborted"
    text = agent.messages[-1]["parts"][1]["text"]
    assert 0 < len(text) < 200
    assert agent_for(script).messages[-1]["parts"][1]["text"] == text


async def test_turns_queue_in_order() -> None:
    script = S([[S.text("one")], [S.text("two")]], delay=0.01)
    agent = agent_for(script)
    first, second = agent.submit("1"), agent.submit("2")
    assert [r.status for r in await asyncio.gather(first, second)] == ["completed", "completed"]
    assert [(m["role"], m["parts"][-1]["text"]) for m in agent.messages] == [
        ("user", "1"), ("assistant", "one"), ("user", "2"), ("assistant", "two")]
    # the second turn's model call saw the whole first exchange
    assert [m["content"] for m in script.requests[1]["messages"][1:]] == ["1", "one", "2"]


async def test_hosted_models_are_refused_in_tests_with_a_clear_error() -> None:
    class Hosted(Think):
        def get_model(self) -> str:
            return "openai/gpt-4o-mini"

    result = await Hosted("h").send("hi")
    assert result.status == "error"
    assert "THINK_NB_ALLOW_MODEL_REQUESTS=0" in result.error
    assert result.message is None


async def test_openai_without_a_key_ends_with_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")  # opt in: fails before any network
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    class Hosted(Think):
        def get_model(self) -> str:
            return "openai/gpt-4o-mini"

    agent = Hosted("h")
    result = await agent.send("hi")
    assert result.status == "error"
    assert result.error.startswith("Model 'openai/gpt-4o-mini' failed: ")
    assert "OPENAI_API_KEY" in result.error
    assert result.error.startswith("Model 'openai/gpt-4o-mini' failed: authentication failed for openai; set "
                                   "OPENAI_API_KEY or pass api_key in ModelConfig options. (")
    # the error is persisted with the (empty) partial reply, so a reloaded panel still shows it
    assert Hosted("h").messages[-1] == {"id": IsStr(), "role": "assistant", "parts": [{"type": "step-start"}],
                                        "metadata": {"error": result.error}}
    assert not agent.is_running


def test_run_is_synchronous_outside_a_loop() -> None:
    script = S([[S.text("sync")]])
    result = agent_for(script).run("hi")
    assert result.status == "completed"
    assert result.message["parts"][-1]["text"] == "sync"


async def test_wait_until_stable_waits_for_background_turns_and_honours_timeout() -> None:
    script = S([[S.text("slow reply", chunk_size=1)]], delay=0.02)
    agent = agent_for(script)
    agent.submit("go")
    assert await agent.wait_until_stable(timeout=0.01) is False
    assert await agent.wait_until_stable() is True
    assert agent.messages[-1]["parts"][-1]["text"] == "slow reply"


async def test_an_unsettled_tool_part_deep_in_a_long_history_is_repaired_before_the_next_turn() -> None:
    """Repair skips messages it knows are final (`think_nb.messages.final`), never one that is not:
    a message deep in the history, replaced by a copy whose call has no result (e.g. as a second
    writer stored it), is repaired and the model reads the repaired result."""
    turns = 30
    script = S([s for n in range(turns) for s in ([S.tool_call("add", {"a": n, "b": 1})], [S.text(f"= {n + 1}")])]
               + [[S.text("ok")]])
    agent = agent_for(script)
    for n in range(turns):
        assert (await agent.send(f"{n} + 1?")).status == "completed"
    deep = agent.messages[5]
    call = deep["parts"][1]
    assert call["state"] == "output-available"
    open_call = {k: v for k, v in call.items() if k != "output"} | {"state": "input-available"}
    runtime_of(agent).conversation.replace({**deep, "parts": [deep["parts"][0], open_call, *deep["parts"][2:]]})
    assert (await agent.send("next")).status == "completed"
    repaired = agent.messages[5]["parts"][1]
    assert repaired == {**open_call, "state": "output-error",
                        "errorText": "The tool call was interrupted before a result was recorded."}
    assert type(agent)("t").messages[5]["parts"][1] == repaired  # stored, too
    sent = [m for m in script.requests[-1]["messages"] if m.get("tool_call_id") == call["toolCallId"]]
    assert sent == [{"role": "tool", "tool_call_id": call["toolCallId"],
                     "content": "Error: The tool call was interrupted before a result was recorded."}]
