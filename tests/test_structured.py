"""Structured output (Think's structured workflow turns and `TurnConfig.output`): a hidden
`think_final_answer` tool, forced tool choice, stop on the call, parts left out of the stored
message, the validated object on `TurnResult.output` (`think_nb/turns/structured.py`)."""

from __future__ import annotations

import pytest
from dirty_equals import IsStr
from pydantic import BaseModel

from agents import add, scripted_agent, user
from providers.agents import hosted_agent, server  # noqa: F401 - the fixture
from providers.server import Call, FakeProvider, Reply
from think_nb import StructuredOutputError, TurnConfig, UserError, tool
from think_nb.testing import ScriptedModel as S
from think_nb.turns.structured import DESCRIPTION, instruction


class Forecast(BaseModel):
    city: str
    celsius: float


FORECAST_SCHEMA = Forecast.model_json_schema()
FINAL = {"type": "function", "function": {"name": "think_final_answer", "description": DESCRIPTION,
                                          "parameters": FORECAST_SCHEMA}}
FORCED = {"type": "function", "function": {"name": "think_final_answer"}}


def final(args: dict | str, name: str = "think_final_answer") -> S:
    return S.tool_call(name, args)


def tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request["tools"]]


async def test_send_with_output_type_forces_the_final_tool_stops_on_it_and_returns_the_object() -> None:
    """Think (submissions.test.ts, workflows): structured output, 'final-answer stripped' from the
    persisted message; the turn stops on the final-answer call (hasToolCall)."""
    script = S([[S.tool_call("add", {"a": 10, "b": 2})], [final({"city": "Oslo", "celsius": 12})],
                [S.text("never asked")]])
    hooked: list[str] = []
    streamed: list[str] = []
    agent = scripted_agent(script, tools=[add], get_system_prompt=lambda self: "Be brief.",
                           before_tool_call=lambda self, ctx: hooked.append(ctx.tool_name),
                           after_tool_call=lambda self, ctx: hooked.append(ctx.tool_name),
                           on_chunk=lambda self, c: streamed.append(c.get("toolName") or ""))
    result = await agent.send("Weather in Oslo?", output_type=Forecast)
    assert (result.status, result.error) == ("completed", None)
    assert result.output == Forecast(city="Oslo", celsius=12.0)
    assert len(script.requests) == 2  # stopped on the final answer
    system = {"role": "system", "content": "Be brief.\n\n" + instruction("think_final_answer")}
    assert [r["messages"][0] for r in script.requests] == [system, system]
    assert [r["tools"][-1] for r in script.requests] == [FINAL, FINAL]
    assert [tool_names(r) for r in script.requests] == [["add", "think_final_answer"]] * 2
    assert [r["options"] for r in script.requests] == [{"tool_choice": "required"}] * 2  # other tools: any tool
    assert hooked == ["add", "add"]  # the tool hooks never see the final answer (as in Think)
    assert "think_final_answer" in streamed  # its call streams like any other
    stored = {"id": IsStr(), "role": "assistant", "metadata": {
        "model": script.model, "usage": {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None,
                                         "source": None}, "requestId": result.request_id,
        "finishReason": "tool-calls"},
        "parts": [{"type": "step-start"},
                  {"type": "tool-add", "toolCallId": "call_1_0", "state": "output-available",
                   "input": {"a": 10, "b": 2}, "output": 12.0},
                  {"type": "step-start"}]}
    assert agent.messages == [user("Weather in Oslo?"), stored]  # the final answer's parts are not stored
    assert result.message == stored
    assert "output=Forecast(city='Oslo', celsius=12.0)" in repr(result)


async def test_without_other_tools_the_choice_is_the_final_tool_and_a_config_choice_wins() -> None:
    script = S([[final({"city": "Rome", "celsius": 30})]])
    agent = scripted_agent(script, tools=[])
    result = await agent.send("Rome?", output_type=Forecast)
    assert result.output == Forecast(city="Rome", celsius=30)
    assert (script.requests[0]["tools"], script.requests[0]["options"]) == ([FINAL], {"tool_choice": FORCED})

    script = S([[S.tool_call("add", {"a": 1, "b": 1})], [final({"city": "Rome", "celsius": 30})]])
    agent = scripted_agent(script, name="auto", tools=[add],
                           before_turn=lambda self, ctx: TurnConfig(output_type=Forecast, tool_choice="auto"))
    result = await agent.send("Rome?")  # output_type from before_turn
    assert result.output == Forecast(city="Rome", celsius=30)
    assert [r["options"] for r in script.requests] == [{"tool_choice": "auto"}] * 2


async def test_the_last_step_offers_only_the_final_tool_and_forces_it() -> None:
    """Think: 'forced on last step' (the prepareStep safety net)."""
    script = S([[S.tool_call("add", {"a": 1, "b": 1})], [S.tool_call("add", {"a": 2, "b": 2})],
                [final({"city": "Oslo", "celsius": 4})]])
    agent = scripted_agent(script, tools=[add], max_steps=3)
    result = await agent.send("go", output_type=Forecast)
    assert result.output == Forecast(city="Oslo", celsius=4)
    assert [(tool_names(r), r["options"]) for r in script.requests] == [
        (["add", "think_final_answer"], {"tool_choice": "required"}),
        (["add", "think_final_answer"], {"tool_choice": "required"}),
        (["think_final_answer"], {"tool_choice": FORCED})]


async def test_a_tool_named_think_final_answer_gets_the_hidden_tool_suffixed() -> None:
    """Think: 'suffixed on collision'; the user's own tool of that name keeps its parts."""
    @tool(name="think_final_answer")
    def mine(note: str) -> str:
        """The user's own tool."""
        return note.upper()

    script = S([[S.tool_call("think_final_answer", {"note": "hi"})],
                [final({"city": "Oslo", "celsius": 5}, "think_final_answer_1")]])
    agent = scripted_agent(script, tools=[mine])
    result = await agent.send("go", output_type=Forecast)
    assert result.output == Forecast(city="Oslo", celsius=5)
    assert tool_names(script.requests[0]) == ["think_final_answer", "think_final_answer_1"]
    assert script.requests[0]["messages"][0]["content"].endswith(instruction("think_final_answer_1"))
    assert [(p["type"], p.get("output")) for p in agent.messages[-1]["parts"] if p["type"] != "step-start"] == [
        ("tool-think_final_answer", "HI")]


async def test_invalid_input_goes_back_to_the_model_which_answers_again() -> None:
    script = S([[final({"city": "Oslo", "celsius": "warm"})], [final({"city": "Oslo", "celsius": 11})]])
    agent = scripted_agent(script, tools=[])
    result = await agent.send("go", output_type=Forecast)
    assert result.output == Forecast(city="Oslo", celsius=11)
    told = script.requests[1]["messages"][-1]
    assert told == {"role": "tool", "tool_call_id": "call_1_0", "content": (
        "Error: The final answer does not match the required schema (celsius: Input should be a valid number, unable "
        "to parse string as a number). Call think_final_answer again with corrected arguments.")}
    assert [p["type"] for p in agent.messages[-1]["parts"]] == ["step-start", "step-start"]


async def test_no_valid_answer_within_max_steps_ends_the_turn_with_a_clear_error() -> None:
    errors: list[BaseException] = []
    script = S([[final({"city": "Oslo"})], [final('{"city": ')]])
    agent = scripted_agent(script, tools=[], max_steps=2, on_chat_error=lambda self, e: errors.append(e))
    result = await agent.send("go", output_type=Forecast)
    assert (result.status, result.output) == ("error", None)
    assert result.error.startswith("The model gave no valid Forecast in 2 step(s): The tool arguments are not valid "
                                   "JSON (")
    assert result.error.endswith(" Raise max_steps or simplify Forecast.")
    assert [type(e) for e in errors] == [StructuredOutputError]
    assert agent.turns()[-1]["status"] == "error"

    script = S([[S.text("It is 12 degrees.")]])
    agent = scripted_agent(script, name="text", tools=[])
    result = await agent.send("go", output_type=Forecast)
    assert (result.status, result.error) == ("error", (
        "The model ended the turn without calling the think_final_answer tool, so the turn has no Forecast; use a "
        "model that supports tool calls, or say in the prompt what to answer."))
    assert agent.messages[-1]["parts"][-1] == {"type": "text", "text": "It is 12 degrees.", "state": "done"}


async def test_save_messages_and_run_turn_take_output_type_and_bad_output_types_are_refused() -> None:
    script = S([[final({"city": "A", "celsius": 1})], [final({"city": "B", "celsius": 2})]])
    agent = scripted_agent(script, tools=[])
    saved = await agent.save_messages([{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "A?"}]}],
                                      output_type=Forecast)
    ran = await agent.run_turn("B?", output_type=Forecast)
    assert (saved.output, ran.output) == (Forecast(city="A", celsius=1), Forecast(city="B", celsius=2))

    with pytest.raises(UserError, match=r"^output_type=<class 'int'> is not a pydantic model class; pass a subclass "
                                        r"of pydantic.BaseModel"):
        await agent.send("C?", output_type=int)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r'^run_turn: output_type is only supported with mode="wait" and input'):
        await agent.run_turn("C?", mode="submit", output_type=Forecast)
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]  # nothing stored

    bad = S([[S.text("never")]])
    agent = scripted_agent(bad, name="bad", before_turn=lambda self, ctx: TurnConfig(output_type=dict))
    result = await agent.send("go")
    assert result.status == "error"
    assert result.error.startswith("Scripted.before_turn() returned an unusable TurnConfig: output_type=<class "
                                   "'dict'> is not a pydantic model class")
    assert bad.requests == []


def test_the_synchronous_run_takes_output_type_too() -> None:
    agent = scripted_agent(S([[final({"city": "Lima", "celsius": 19})]]), tools=[])
    assert agent.run("Lima?", output_type=Forecast).output == Forecast(city="Lima", celsius=19)


async def test_a_hosted_model_is_sent_the_final_tool_and_the_forced_choice(server: FakeProvider) -> None:  # noqa: F811
    """Through litellm's real provider over HTTP: the request body holds the hidden tool and the
    forced tool choice in the provider's own format, and the answer comes back validated."""
    server.replies += [Reply(tool_calls=[Call("add", {"a": 10, "b": 2})]),
                       Reply(tool_calls=[Call("think_final_answer", {"city": "Oslo", "celsius": 12})])]
    agent = hosted_agent(server, tools=[add], include_workspace_tools=False, max_steps=2)
    result = await agent.send("Weather in Oslo?", output_type=Forecast)
    assert (result.status, result.error, result.output) == ("completed", None, Forecast(city="Oslo", celsius=12))
    assert server.rejections == []
    first, last = server.requests
    if server.format == "openai":
        names = [[t["function"]["name"] for t in r["tools"]] for r in (first, last)]
        assert first["tools"][-1] == FINAL
        assert (first["tool_choice"], last["tool_choice"]) == ("required", FORCED)
    else:
        names = [[t["name"] for t in r["tools"]] for r in (first, last)]
        assert first["tools"][-1]["input_schema"]["properties"] == FORECAST_SCHEMA["properties"]
        assert (first["tool_choice"], last["tool_choice"]) == ({"type": "any"},
                                                               {"type": "tool", "name": "think_final_answer"})
    assert names == [["add", "think_final_answer"], ["think_final_answer"]]
    assert [p["type"] for p in agent.messages[-1]["parts"]] == ["step-start", "tool-add", "step-start"]


async def test_a_structured_turn_paused_for_approval_continues_structured_after_the_approval() -> None:
    """The continuation an approval starts answers the paused turn's question, so it is a structured
    turn with the same output type (else the answer would be lost as plain text)."""
    ran: list[str] = []

    @tool(needs_approval=True)
    def book(city: str) -> str:
        """Book a trip (gated)."""
        ran.append(city)
        return "booked"

    script = S([[S.tool_call("book", {"city": "Oslo"})], [final({"city": "Oslo", "celsius": 3})]])
    agent = scripted_agent(script, tools=[book])
    paused = await agent.send("Book Oslo", output_type=Forecast)
    assert (paused.status, paused.output, len(paused.waiting)) == ("completed", None, 1)
    continuation = agent.approve(paused.waiting[0])
    assert continuation is not None
    result = await continuation
    assert ran == ["Oslo"]
    assert (result.status, result.output) == ("completed", Forecast(city="Oslo", celsius=3.0))
    assert [tool_names(r) for r in script.requests] == [["book", "think_final_answer"]] * 2
