"""`before_step` (Think's `beforeStep`, the AI SDK's `prepareStep`) and `stop_when` (Think's
`TurnConfig.stopWhen`, with the AI SDK's `stepCountIs` / `hasToolCall`), ported from Think's
hooks.test.ts (§7.1)."""

import asyncio

import pytest
from dirty_equals import IsStr

from agents import add, mul, scripted_agent, user
from think_nb import (
    PrepareStepContext,
    StepConfig,
    StepContext,
    TurnConfig,
    UserError,
    has_tool_call,
    step_count_is,
)
from think_nb.testing import ScriptedModel as S

ADD_SCHEMA = {"type": "function", "function": {"name": "add", "description": "Add two numbers.", "parameters": {
    "type": "object", "required": ["a", "b"], "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}
MUL_SCHEMA = {"type": "function", "function": {"name": "mul", "description": "Multiply two numbers.", "parameters": {
    "type": "object", "required": ["a", "b"], "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}


def tool_loop(n: int) -> S:
    """A script that calls `add` in each of `n` steps, then answers."""
    return S([[S.tool_call("add", {"a": k, "b": 1})] for k in range(n)] + [[S.text("done")]])


async def test_before_step_gets_prepare_step_ctx_once_per_step_with_growing_steps_and_is_awaited() -> None:
    """Think: 'beforeStep receives prepareStep ctx', 'awaited', 'once per step with growing steps'."""
    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("42.")]])
    seen: list[PrepareStepContext] = []

    async def before_step(self, ctx):
        await asyncio.sleep(0)  # an async hook is awaited before the step's model call
        seen.append(ctx)

    agent = scripted_agent(script, before_step=before_step, get_system_prompt=lambda self: "Be brief.")
    result = await agent.send("2+40?")
    assert result.status == "completed", result.error
    assert [(c.step_number, len(c.steps), c.model, c.system, sorted(c.tools), c.active_tools) for c in seen] == [
        (0, 0, script.model, "Be brief.", ["add", "mul"], ["add", "mul"]),
        (1, 1, script.model, "Be brief.", ["add", "mul"], ["add", "mul"])]
    assert seen[0].messages == [{"role": "user", "content": "2+40?"}]
    assert seen[1].messages == script.requests[1]["messages"][1:]  # what the step sent, system message aside
    assert seen[1].messages[-1] == {"role": "tool", "tool_call_id": "call_1_0", "content": "42.0"}
    step = seen[1].steps[0]
    assert isinstance(step, StepContext)
    assert (step.step_number, step.finish_reason, step.tool_calls, step.tool_results) == (
        0, "tool-calls", [{"toolCallId": "call_1_0", "toolName": "add", "input": {"a": 2, "b": 40}}],
        [{"toolCallId": "call_1_0", "toolName": "add", "output": 42.0}])
    assert seen[1].request_id == result.request_id


async def test_before_step_switches_model_prompt_tools_and_sampling_for_that_step_only() -> None:
    """Think: 'beforeStep ... can override model' (a string model resolved like getModel's)."""
    main = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("Done.")]])
    summary = S([[S.tool_call("mul", {"a": 42, "b": 2}, id="call_mul")]])  # its own id: two scripts, one turn

    def before_step(self, ctx):
        if ctx.step_number == 1:
            return StepConfig(model=summary.model, system="Summarize.", active_tools=["mul"], tool_choice="required",
                              temperature=0.2, max_output_tokens=30)
        return None

    agent = scripted_agent(main, before_step=before_step, get_system_prompt=lambda self: "Be brief.")
    result = await agent.send("2+40, doubled?")
    assert result.status == "completed", result.error
    assert [r["options"] for r in main.requests] == [{}, {}]  # steps 0 and 2: the turn's settings
    assert [r["tools"] for r in main.requests] == [[ADD_SCHEMA, MUL_SCHEMA], [ADD_SCHEMA, MUL_SCHEMA]]
    assert [r["messages"][0] for r in main.requests] == [{"role": "system", "content": "Be brief."}] * 2
    assert summary.requests == [{
        "messages": [{"role": "system", "content": "Summarize."}, {"role": "user", "content": "2+40, doubled?"},
                     {"role": "assistant", "content": "", "tool_calls": [{
                         "id": "call_1_0", "type": "function",
                         "function": {"name": "add", "arguments": '{"a":2,"b":40}'}}]},
                     {"role": "tool", "tool_call_id": "call_1_0", "content": "42.0"}],
        "tools": [MUL_SCHEMA], "options": {"temperature": 0.2, "max_tokens": 30, "tool_choice": "required"}}]
    assert [p.get("output") for p in agent.messages[-1]["parts"] if p["type"].startswith("tool-")] == [42.0, 84.0]


async def test_before_step_returning_none_changes_nothing_and_a_dict_replaces_the_messages_of_one_step() -> None:
    plain = S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    await scripted_agent(plain, name="plain").send("1+2?")
    same = S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    await scripted_agent(same, name="none", before_step=lambda self, ctx: None).send("1+2?")
    assert same.requests == plain.requests

    edited = S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    agent = scripted_agent(edited, name="dict", before_step=lambda self, ctx: (
        {"messages": [{"role": "user", "content": "rewritten"}]} if ctx.step_number == 0 else None))
    await agent.send("1+2?")
    assert edited.requests[0]["messages"][1:] == [{"role": "user", "content": "rewritten"}]
    assert edited.requests[1]["messages"][1:] == plain.requests[1]["messages"][1:]  # step 1: the turn's own
    assert agent.messages[0] == user("1+2?")  # the stored transcript is what really happened


@pytest.mark.parametrize(("returned", "error"), [
    (42, "Scripted.before_step() must return a StepConfig, a dict or None, not int."),
    ({"max_steps": 2}, "Scripted.before_step() returned unknown StepConfig fields ['max_steps']; known: "),
    ({"model": 42}, "Scripted.before_step() returned an unusable StepConfig: "),
])
async def test_a_before_step_returning_something_unusable_fails_the_turn_naming_it(returned, error) -> None:
    script = S([[S.text("never")]])
    agent = scripted_agent(script, before_step=lambda self, ctx: returned)
    result = await agent.send("hi")
    assert result.status == "error"
    assert result.error.startswith(error)
    assert script.requests == []  # no model call with a step it could not prepare
    assert agent.messages == [user("hi")]


async def test_stop_when_has_tool_call_ends_the_turn_after_that_step() -> None:
    """Think: 'maxSteps respected and combined with stopWhen' (stopWhen ends it first)."""
    script = S([[S.tool_call("mul", {"a": 2, "b": 3})], [S.tool_call("add", {"a": 1, "b": 1})],
                [S.tool_call("add", {"a": 2, "b": 2})], [S.text("never")]])
    agent = scripted_agent(script, before_turn=lambda self, ctx: TurnConfig(stop_when=has_tool_call("add")))
    result = await agent.send("go")
    assert result.status == "completed", result.error
    assert len(script.requests) == 2
    assert [p["type"] for p in agent.messages[-1]["parts"]] == ["step-start", "tool-mul", "step-start", "tool-add"]
    assert agent.messages[-1]["metadata"]["finishReason"] == "tool-calls"


async def test_stop_when_a_list_stops_at_the_first_condition_that_holds_and_max_steps_still_bounds() -> None:
    """Think: 'maxSteps respected and combined with stopWhen' (max_steps ends it when no condition holds)."""
    script = tool_loop(5)
    agent = scripted_agent(script, before_turn=lambda self, ctx: {
        "stop_when": [has_tool_call("mul"), step_count_is(3)]})
    await agent.send("go")
    assert len(script.requests) == 3

    seen: list[int] = []

    async def never(steps):  # an async condition is awaited, with the finished steps
        seen.append(len(steps))
        return False

    script = tool_loop(5)
    agent = scripted_agent(script, name="bounded", max_steps=2,
                           before_turn=lambda self, ctx: TurnConfig(stop_when=never))
    result = await agent.send("go")
    # asked after each step with calls, the last one too (the AI SDK asks its stepCountIs(max) and these together)
    assert (result.status, len(script.requests), seen) == ("completed", 2, [1, 2])


async def test_a_stop_condition_that_raises_fails_the_turn_naming_it() -> None:
    def picky(steps):
        raise ValueError("no")

    script = tool_loop(2)
    agent = scripted_agent(script, before_turn=lambda self, ctx: TurnConfig(stop_when=[picky]))
    result = await agent.send("go")
    assert (result.status, result.error) == ("error", "picky() for stop_when raised ValueError: no")
    assert agent.turns()[-1]["status"] == "error"


async def test_a_stop_when_that_is_not_a_function_fails_the_turn_as_an_unusable_turn_config() -> None:
    script = S([[S.text("never")]])
    agent = scripted_agent(script, before_turn=lambda self, ctx: TurnConfig(stop_when=3))
    result = await agent.send("go")
    assert result.status == "error"
    assert result.error == ("Scripted.before_turn() returned an unusable TurnConfig: stop_when=3 is not a function "
                            "of the steps; pass one (e.g. step_count_is(3), has_tool_call('search')) or a list of them")
    assert script.requests == []


def test_the_stop_helpers_refuse_bad_arguments_in_one_line() -> None:
    with pytest.raises(UserError, match=r"^step_count_is\(n\) takes a whole number of steps >= 1, not 0\.$"):
        step_count_is(0)
    with pytest.raises(UserError, match=r"^has_tool_call\(name\) takes a tool name, not ''\.$"):
        has_tool_call("")
    calls = StepContext(0, "tool-calls", "", [{"toolCallId": "c", "toolName": "add", "input": {}}])
    assert has_tool_call("add")([calls]) and not has_tool_call("mul")([calls]) and not has_tool_call("add")([])
    assert step_count_is(1)([calls]) and not step_count_is(2)([calls])
    assert step_count_is(2).__name__ == "step_count_is(2)"


async def test_a_before_step_hook_keeps_the_transcript_whole() -> None:
    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("42.")]])
    agent = scripted_agent(script, tools=[add, mul], before_step=lambda self, ctx: StepConfig(temperature=0))
    result = await agent.send("2+40?")
    assert agent.messages == [user("2+40?"), {
        "id": IsStr(), "role": "assistant", "metadata": {
            "model": script.model, "usage": {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None,
                                             "source": None},
            "requestId": result.request_id, "finishReason": "stop"},
        "parts": [{"type": "step-start"},
                  {"type": "tool-add", "toolCallId": "call_1_0", "state": "output-available",
                   "input": {"a": 2, "b": 40}, "output": 42.0},
                  {"type": "step-start"}, {"type": "text", "text": "42.", "state": "done"}]}]
    assert [r["options"] for r in script.requests] == [{"temperature": 0}, {"temperature": 0}]


def test_step_mode_does_not_pause_at_before_step_but_runs_and_traces_it() -> None:
    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("42.")]])
    ran: list[int] = []
    agent = scripted_agent(script, name="stepped", before_step=lambda self, ctx: ran.append(ctx.step_number))
    stepper = agent.step("2+40?")
    hooks = []
    event = stepper.next()
    while event.hook != "done":
        hooks.append(event.hook)
        event = stepper.next()
    assert event.result.status == "completed"
    assert hooks == ["before_turn", "before_tool_call", "after_tool_call", "on_step_finish", "on_step_finish",
                     "on_chat_response"]
    assert ran == [0, 1]
    trace = agent.trace()
    assert list(trace[trace["hook"] == "before_step"]["step"]) == [0, 1]
