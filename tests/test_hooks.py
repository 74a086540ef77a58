"""Every hook of a turn: order, contexts, return values, failures (Think §1.C, §4)."""

import asyncio
import itertools

import pytest
from dirty_equals import IsPositiveFloat, IsStr
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from agents import add, eventually, scripted_agent, texts
from think_nb import ToolCallDecision, TurnConfig, tool
from think_nb.testing import ScriptedModel as S
from think_nb.turns.capabilities import DEFAULT_SYSTEM_PROMPT, system_for_turn


def two_tool_script() -> S:
    return S([[S.text("On it."), S.tool_call("add", {"a": 1, "b": 2}), S.tool_call("mul", {"a": 3, "b": 4}),
               S.usage(5, 5)], [S.text("3 and 12."), S.usage(6, 2)]])


class Recorder:
    """Hook implementations that log (hook, detail) into `self.calls`; mixed into a Think subclass."""

    def before_turn(self, ctx):
        self.calls.append(("before_turn", sorted(ctx.tools), ctx.continuation))

    def before_tool_call(self, ctx):
        self.calls.append(("before_tool_call", ctx.tool_name, ctx.input))

    async def after_tool_call(self, ctx):  # async hooks are awaited
        await asyncio.sleep(0)
        self.calls.append(("after_tool_call", ctx.tool_name, ctx.success, ctx.output))

    def on_step_finish(self, ctx):
        self.calls.append(("on_step_finish", ctx.step_number, ctx.finish_reason))

    def on_chunk(self, chunk):
        if not self.calls or self.calls[-1] != ("on_chunk",):
            self.calls.append(("on_chunk",))

    def on_chat_response(self, result):
        self.calls.append(("on_chat_response", result.status))


def recording_agent(script: S):
    agent = scripted_agent(script, **{k: v for k, v in vars(Recorder).items() if not k.startswith("__")})
    agent.calls = []
    return agent


async def test_hook_order_for_a_turn_with_two_tool_calls() -> None:
    agent = recording_agent(two_tool_script())
    result = await agent.send("1+2 and 3*4")
    assert result.status == "completed"
    calls = agent.calls
    hooks = [c for c in calls if c != ("on_chunk",)]
    # the step's two tools run concurrently: both are decided first, they finish in any order
    assert hooks[:3] == [("before_turn", ["add", "mul"], False),
                         ("before_tool_call", "add", {"a": 1, "b": 2}),
                         ("before_tool_call", "mul", {"a": 3, "b": 4})]
    assert sorted(hooks[3:5]) == [("after_tool_call", "add", True, 3.0), ("after_tool_call", "mul", True, 12.0)]
    assert hooks[5:] == [("on_step_finish", 0, "tool-calls"), ("on_step_finish", 1, "stop"),
                         ("on_chat_response", "completed")]
    # chunks stream before the tools are decided, between tool results, and before each step ends
    assert calls[1] == ("on_chunk",)
    assert calls[calls.index(hooks[5]) - 1] == ("on_chunk",) and calls[calls.index(hooks[6]) - 1] == ("on_chunk",)


async def test_before_turn_context_then_switching_model_and_restricting_tools() -> None:
    cheap = S([[S.text("cheap answer")]])
    seen = []

    def before_turn(self, ctx):
        seen.append((ctx.system, ctx.messages, sorted(ctx.tools), ctx.model, ctx.continuation, ctx.trigger))
        return TurnConfig(model=cheap.model, active_tools=["mul"], tool_choice="none", temperature=0.1,
                          max_output_tokens=50, system="Short answers.")

    main = S([[S.text("never used")]])
    agent = scripted_agent(main, before_turn=before_turn)
    await agent.send("hello")
    prompt = system_for_turn(DEFAULT_SYSTEM_PROMPT, ["add", "mul"], main.model)  # with Think's capability block
    assert seen == [(prompt,
                     [{"role": "user", "content": "hello"}], ["add", "mul"], main.model, False, "send")]
    assert main.requests == []
    assert cheap.requests == [{
        "messages": [{"role": "system", "content": "Short answers."}, {"role": "user", "content": "hello"}],
        "tools": [{"type": "function", "function": {"name": "mul", "description": "Multiply two numbers.",
                                                    "parameters": {"type": "object", "required": ["a", "b"],
                                                                   "properties": {"a": {"type": "number"},
                                                                                  "b": {"type": "number"}}}}}],
        "options": {"temperature": 0.1, "max_tokens": 50, "tool_choice": "none"}}]
    assert agent.messages[-1]["metadata"]["model"] == cheap.model


async def test_before_turn_can_add_tools_replace_messages_and_bound_steps() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 1})], [S.tool_call("add", {"a": 2, "b": 2})]])

    def extra(x: int) -> int:
        """Extra tool."""
        return x

    agent = scripted_agent(script, tools=[add], before_turn=lambda self, ctx: {
        "tools": [extra], "messages": [{"role": "user", "content": "rewritten"}], "max_steps": 1})
    await agent.send("original")
    assert len(script.requests) == 1
    assert script.requests[0]["messages"][1:] == [{"role": "user", "content": "rewritten"}]
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["add", "extra"]
    assert texts(agent)[0] == ("user", "original")  # the stored transcript is what really happened


async def test_each_before_tool_call_decision() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 1}), S.tool_call("add", {"a": 2, "b": 2}),
                 S.tool_call("add", {"a": 3, "b": 3}), S.tool_call("add", {"a": 4, "b": 4})], [S.text("done")]])
    ran = []
    original = add.function

    def spy(a: float, b: float) -> float:
        ran.append((a, b))
        return original(a, b)

    add.function = spy
    after = []

    def decide(self, ctx):
        return {1: None, 2: ToolCallDecision.allow({"a": 20, "b": 20}), 3: ToolCallDecision.block("not today"),
                4: {"action": "substitute", "output": {"cached": 8}}}[ctx.input["a"]]

    try:
        agent = scripted_agent(script, before_tool_call=decide,
                               after_tool_call=lambda self, ctx: after.append((ctx.input, ctx.success, ctx.output,
                                                                               ctx.duration_ms)))
        await agent.send("go")
    finally:
        add.function = original
    assert ran == [(1, 1), (20, 20)]  # block and substitute never run the tool
    parts = [p for p in agent.messages[-1]["parts"] if p["type"] == "tool-add"]
    assert [(p["input"], p["state"], p.get("output")) for p in parts] == [
        ({"a": 1, "b": 1}, "output-available", 2.0),
        ({"a": 2, "b": 2}, "output-available", 40.0),
        ({"a": 3, "b": 3}, "output-available", "not today"),
        ({"a": 4, "b": 4}, "output-available", {"cached": 8})]
    assert sorted(after, key=lambda a: a[0]["a"]) == [
        ({"a": 1, "b": 1}, True, 2.0, IsPositiveFloat()), ({"a": 3, "b": 3}, True, "not today", IsPositiveFloat()),
        ({"a": 4, "b": 4}, True, {"cached": 8}, IsPositiveFloat()), ({"a": 20, "b": 20}, True, 40.0, IsPositiveFloat())]
    # the model saw the block reason and the substituted output
    assert [m["content"] for m in script.requests[1]["messages"] if m["role"] == "tool"] == [
        "2.0", "40.0", "not today", '{"cached":8}']


async def test_block_without_reason_uses_thinks_default_text() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 1})], [S.text("ok")]])
    agent = scripted_agent(script, before_tool_call=lambda self, ctx: ToolCallDecision.block())
    await agent.send("go")
    assert agent.messages[-1]["parts"][1]["output"] == "Tool 'add' was blocked by before_tool_call."


async def test_after_tool_call_sees_failures() -> None:
    def boom() -> str:
        """Fails."""
        raise KeyError("gone")

    script = S([[S.tool_call("boom", {})], [S.text("sorry")]])
    seen = []
    agent = scripted_agent(script, tools=[boom], after_tool_call=lambda self, ctx: seen.append(
        (ctx.tool_name, ctx.success, ctx.output, ctx.error)))
    await agent.send("go")
    assert seen == [("boom", False, None, "KeyError: 'gone'")]


def counting_add(ran: list, **options):
    """An `add` tool that appends `a` to `ran` each time it runs."""
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append(a)
        return a + b
    return tool(add, **options)


async def test_a_before_tool_call_that_raises_fails_that_call_and_the_turn_goes_on() -> None:
    # Think: a throwing beforeToolCall becomes the tool's error (the model reads it), not the turn's
    script = S([[S.text("partial "), S.tool_call("add", {"a": 1, "b": 1})], [S.text("The policy check failed.")]])
    state = {"fail": True}
    ran = []

    def before_tool_call(self, ctx):
        if state["fail"]:
            raise ValueError("policy engine down")

    agent = scripted_agent(script, tools=[counting_add(ran)], before_tool_call=before_tool_call)
    result = await agent.send("go")
    assert (result.status, result.error) == ("completed", None)
    error = "Scripted.before_tool_call() for tool 'add' raised ValueError: policy engine down; the tool did not run."
    assert agent.messages[-1]["parts"][1:4] == [
        {"type": "text", "text": "partial ", "state": "done"},
        {"type": "tool-add", "toolCallId": "call_1_0", "state": "output-error", "input": {"a": 1, "b": 1},
         "errorText": error},
        {"type": "step-start"}]
    assert ran == []  # the tool never runs for a failed decision
    assert script.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1_0",
                                                  "content": f"Error: {error}"}
    assert [t["status"] for t in agent.turns()] == ["completed"]
    state["fail"] = False
    script.steps.append([S.text("fine")])
    assert (await agent.send("again")).status == "completed"
    assert texts(agent)[-1] == ("assistant", "fine")


async def test_a_throwing_before_tool_call_surfaces_as_a_tool_error_in_after_tool_call() -> None:
    # Think hooks.test.ts: "a throwing beforeToolCall surfaces as a tool error in afterToolCall"
    script = S([[S.tool_call("add", {"a": 1, "b": 1})], [S.text("ok")]])
    seen = []

    def before_tool_call(self, ctx):
        raise RuntimeError("policy violation")

    agent = scripted_agent(script, before_tool_call=before_tool_call,
                           after_tool_call=lambda self, ctx: seen.append((ctx.tool_name, ctx.success, ctx.error)))
    assert (await agent.send("go")).status == "completed"
    error = "Scripted.before_tool_call() for tool 'add' raised RuntimeError: policy violation; the tool did not run."
    assert seen == [("add", False, error)]


async def test_an_after_tool_call_that_raises_replaces_the_result_with_its_error() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 1}), S.tool_call("mul", {"a": 2, "b": 3})], [S.text("ok")]])
    chunks: list[dict] = []

    def after_tool_call(self, ctx):
        if ctx.tool_name == "add":
            raise KeyError("audit log full")

    agent = scripted_agent(script, after_tool_call=after_tool_call, on_chunk=lambda self, c: chunks.append(c))
    assert (await agent.send("go")).status == "completed"
    error = ("Scripted.after_tool_call() for tool 'add' raised KeyError: 'audit log full'; "
             "the call's result was discarded.")
    add_part, mul_part = (p for p in agent.messages[-1]["parts"] if p["type"].startswith("tool-"))
    assert (add_part["state"], add_part["errorText"]) == ("output-error", error)
    assert (mul_part["state"], mul_part["output"]) == ("output-available", 6.0)  # its sibling is untouched
    # the result chunk is emitted once after_tool_call returned: the discarded output never streamed
    assert [c["type"] for c in chunks if c.get("toolCallId") == "call_1_0"][-1:] == ["tool-output-error"]
    assert not any(c["type"] == "tool-output-available" and c["toolCallId"] == "call_1_0" for c in chunks)
    assert [m["content"] for m in script.requests[1]["messages"] if m["role"] == "tool"] == [f"Error: {error}", "6.0"]


def assert_settled(agent) -> None:
    """The property: every turn of `agent` is settled, and no stored tool part of a server tool is
    left without a result (`input-streaming` / `input-available`)."""
    assert all(t["status"] in ("completed", "error", "aborted") for t in agent.turns())
    open_parts = [p for m in agent.messages for p in m["parts"]
                  if p["type"].startswith("tool-") and p["state"] in ("input-streaming", "input-available")]
    assert open_parts == []


FAILING_PLACES = ("before_tool_call", "after_tool_call", "needs_approval")
"""Every hook that runs for one tool call and can raise (the `needs_approval` predicate included)."""


@seed(30)
@settings(max_examples=30, deadline=None, database=None)
@given(plan=st.lists(st.lists(st.sampled_from((None, *FAILING_PLACES)), min_size=1, max_size=3),
                     min_size=1, max_size=2),
       kind=st.sampled_from((ValueError, SystemExit, KeyError)))
def test_no_failing_tool_hook_leaves_a_call_without_a_result(plan: list[list[str | None]], kind: type) -> None:
    """Whatever tool hooks fail, for whichever calls of whichever steps: the turn completes, every
    call has a result (a failing one its hook's error), the model's next request reads each error,
    and a call whose decision failed never ran."""
    places = dict(enumerate(p for step in plan for p in step))
    calls, n = [], 0
    for step in plan:
        calls.append([S.tool_call("add", {"a": n + i, "b": 1}) for i in range(len(step))])
        n += len(step)
    script = S([*calls, [S.text("done")]])
    ran: list[int] = []

    def fail_at(place: str, ctx_or_input) -> None:
        a = ctx_or_input["a"] if isinstance(ctx_or_input, dict) else ctx_or_input.input["a"]
        if places[a] == place:
            raise kind(f"{place} {a}")

    gated = counting_add(ran, needs_approval=lambda i: fail_at("needs_approval", i))
    agent = scripted_agent(script, tools=[gated], name=f"settled-{next(_agents)}",
                           before_tool_call=lambda self, ctx: fail_at("before_tool_call", ctx),
                           after_tool_call=lambda self, ctx: fail_at("after_tool_call", ctx))
    result = asyncio.run(agent.send("go"))
    assert (result.status, result.error) == ("completed", None)
    assert_settled(agent)
    parts = {p["input"]["a"]: p for p in agent.messages[-1]["parts"] if p["type"] == "tool-add"}
    assert sorted(parts) == sorted(places)
    for a, place in places.items():
        if place is None:
            assert (parts[a]["state"], parts[a]["output"]) == ("output-available", a + 1)
        else:
            assert parts[a]["state"] == "output-error"
            assert f"{place}" in parts[a]["errorText"] and f"{kind.__name__}: " in parts[a]["errorText"]
    assert sorted(ran) == sorted(a for a, place in places.items() if place in (None, "after_tool_call"))
    seen = [m["content"] for m in script.requests[-1]["messages"] if m["role"] == "tool"]
    assert seen == [f"Error: {parts[a]['errorText']}" if place else str(a + 1) for a, place in places.items()]


_agents = itertools.count()


UNSETTLED = "The turn ended with an error before this call had a result."


@pytest.mark.parametrize("where", ["tool-input-start", "tool-input-available", "a sibling's result", "the model"])
async def test_a_turn_that_fails_leaves_no_call_without_a_result(where: str) -> None:
    """The same property when the turn itself fails while a call has no result yet (`on_chunk`
    raising, the model failing after a call streamed): the call's part is settled as an
    `output-error`, stored and streamed, before the turn reports its error."""
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Runs until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    first = [S.tool_call("slow", {}), S.tool_call("add", {"a": 1, "b": 2})]
    script = S([first + ([S.error("connection lost")] if where == "the model" else []), [S.text("never")],
                [S.text("Retried.")]])

    failing = {"on": True}

    async def on_chunk(self, chunk):
        if not failing["on"]:
            return
        if chunk["type"] == where or (where == "a sibling's result" and chunk["type"] == "tool-output-available"):
            await started.wait() if where == "a sibling's result" else None
            raise ValueError("observer broke")

    agent = scripted_agent(script, tools=[slow, add], on_chunk=on_chunk)
    result = await agent.send("go")
    failing["on"] = False
    assert result.status == "error"
    assert_settled(agent)
    assert type(agent)(agent.name).messages == agent.messages  # settled as stored, not only in memory
    slow_part = next(p for p in agent.messages[-1]["parts"] if p["type"] == "tool-slow")
    assert (slow_part["state"], slow_part["errorText"]) == ("output-error", UNSETTLED)
    if where != "tool-input-start":  # raising there, the turn ended before add's call began
        add_part = next(p for p in agent.messages[-1]["parts"] if p["type"] == "tool-add")
        assert add_part["state"] in ("output-error", "output-available")
    assert (await agent.send("again")).status == "completed"
    assert {"role": "tool", "tool_call_id": slow_part["toolCallId"], "content": f"Error: {UNSETTLED}"} in \
        script.requests[-1]["messages"]


async def test_on_chat_response_can_chain_a_follow_up_turn() -> None:
    script = S([[S.text("first")], [S.text("second")]])
    results = []

    async def on_chat_response(self, result):
        results.append(result)
        if len(results) == 1:  # the queue is released: chaining is allowed
            await self.save_messages([{"id": "u2", "role": "user", "parts": [{"type": "text", "text": "more"}]}])

    agent = scripted_agent(script, on_chat_response=on_chat_response)
    await agent.send("go")
    await agent.wait_until_stable(timeout=5)
    assert texts(agent) == [("user", "go"), ("assistant", "first"), ("user", "more"), ("assistant", "second")]
    assert [(r.status, r.request_id) for r in results] == [("completed", IsStr()), ("completed", IsStr())]


def ordered_agent(script: S, log: list):
    """An agent whose async `on_chat_response` logs its start and end around a few hundred loop
    turns (no timer: turns queued behind it could run in that time if the queue were free), and
    whose `before_turn` logs each turn's start (Think's async-hook agent)."""

    async def on_chat_response(self, result):
        log.append(("response-start", result.status))
        for _ in range(300):
            await asyncio.sleep(0)
        log.append(("response-end", result.status))

    return scripted_agent(script, on_chat_response=on_chat_response,
                          before_turn=lambda self, ctx: log.append(("turn", ctx.request_id)))


async def test_an_async_on_chat_response_ends_before_the_next_queued_turn_starts() -> None:
    """Think: async `onChatResponse` awaited before the next turn (run inside the turn body);
    here with three turns queued at once, so the hook's awaiting is where a free queue would
    let turn 2 start."""
    log: list = []
    agent = ordered_agent(S([[S.text("one")], [S.text("two")], [S.text("three")]]), log)
    results = await asyncio.gather(agent.submit("First"), agent.submit("Second"), agent.submit("Third"))
    assert [r.status for r in results] == ["completed"] * 3
    assert [e[0] for e in log] == ["turn", "response-start", "response-end"] * 3
    assert [e[1] for e in log if e[0] == "turn"] == [r.request_id for r in results]
    assert texts(agent) == [("user", "First"), ("assistant", "one"), ("user", "Second"), ("assistant", "two"),
                            ("user", "Third"), ("assistant", "three")]


async def test_async_on_chat_response_drops_no_result_in_rapid_sequential_turns() -> None:
    """Think: `does not drop results during rapid sequential turns` / `awaits async hook before
    next turn starts` (each turn awaited in turn; the hook still running when the call returns
    would leave it unlogged)."""
    log: list = []
    agent = ordered_agent(S([[S.text("one")], [S.text("two")], [S.text("three")]]), log)
    for text in ("Turn 1", "Turn 2", "Turn 3"):
        await agent.send(text)
    assert [e for e in log if e[0] == "response-end"] == [("response-end", "completed")] * 3
    assert len(agent.messages) == 6


async def test_wait_until_stable_waits_for_an_async_on_chat_response() -> None:
    """Think's `waitUntilStable` waits for the turn queue to be idle, and the response hook runs
    inside the turn: stable means the hook has ended (it returned while the hook still ran)."""
    log: list = []
    agent = ordered_agent(S([[S.text("one")]]), log)
    turn = agent.submit("go")
    await eventually(lambda: ("response-start", "completed") in log, what="on_chat_response starts")
    assert await agent.wait_until_stable(timeout=30)
    assert log[-1] == ("response-end", "completed")
    assert (await turn).status == "completed"


async def test_a_turn_on_chat_response_starts_without_awaiting_runs_before_the_queued_one() -> None:
    """A chained turn the hook starts but does not await is the hook's own: it runs (and its
    `on_chat_response` fires) before a turn that was already queued, not beside it."""
    script = S([[S.text("first")], [S.text("chained")], [S.text("queued")]])
    started: list = []

    def on_chat_response(self, result):
        started.append(result.status)
        if len(started) == 1:
            self.submit("follow-up")

    agent = scripted_agent(script, on_chat_response=on_chat_response)
    first, queued = agent.submit("go"), agent.submit("next")
    assert [r.status for r in await asyncio.gather(first, queued)] == ["completed", "completed"]
    await agent.wait_until_stable(timeout=5)
    assert texts(agent) == [("user", "go"), ("assistant", "first"), ("user", "follow-up"), ("assistant", "chained"),
                            ("user", "next"), ("assistant", "queued")]
    assert started == ["completed"] * 3


async def test_on_step_finish_says_the_step_type_and_its_usage_reads_as_the_turns_does() -> None:
    """Think's `onStepFinish` fires after each step (initial, continue, tool-result): the step
    type is said. Its usage has the keys of `metadata.usage`, `usage_df()` and the turn log's
    (`prompt_tokens`, `completion_tokens`, `total_tokens`, `source`), and the steps add up to the turn's."""
    seen = []
    agent = scripted_agent(two_tool_script(), on_step_finish=lambda self, ctx: seen.append(ctx))
    await agent.send("1+2 and 3*4")
    assert [(c.step_number, c.step_type) for c in seen] == [(0, "initial"), (1, "tool-result")]
    assert [c.usage for c in seen] == [
        {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10, "source": "reported"},
        {"prompt_tokens": 6, "completion_tokens": 2, "total_tokens": 8, "source": "reported"}]
    turn = agent.messages[-1]["metadata"]["usage"]
    assert set(turn) == set(seen[0].usage)
    assert {k: sum(c.usage[k] for c in seen) for k in ("prompt_tokens", "completion_tokens", "total_tokens")} == \
        {k: turn[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    (row,) = agent.usage_df().to_dict("records")
    assert {k: row[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")} == \
        {k: turn[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    assert row["usage_source"] == turn["source"] == "reported"


async def test_a_step_with_no_reported_usage_is_unknown_in_on_step_finish_as_in_the_message() -> None:
    """A step the provider reported nothing for: litellm's estimate was handed to `on_step_finish`
    as if counted (the message said unknown). Now both say unknown, the guess kept apart."""
    seen = []
    agent = scripted_agent(S([[S.text("Forty-two.")]]), via_litellm=True,
                           on_step_finish=lambda self, ctx: seen.append(ctx.usage))
    await agent.send("2 + 40?")
    (usage,) = seen
    message = agent.messages[-1]["metadata"]["usage"]
    assert usage == message
    assert (usage["source"], usage["total_tokens"]) == (None, None)


async def test_an_unusable_turn_config_names_before_turn() -> None:
    for bad, detail in (({"max_steps": "x"}, "max_steps must be a positive int, not 'x'"),
                        ({"tools": {"x": 1}}, "get_tools() returned 1")):
        agent = scripted_agent(S([[S.text("never")]]), name=f"bad-{detail[:5]}", before_turn=lambda self, ctx, b=bad: b)
        result = await agent.send("go")
        assert result.status == "error"
        assert result.error.startswith("Scripted.before_turn() returned an unusable TurnConfig: ")
        assert detail in result.error


async def test_requests_record_what_was_sent_though_a_later_hook_extends_the_list() -> None:
    """`ScriptedModel.requests` copies a call's messages only when read; the list itself is taken
    when the model is called, so a hook that adds to `ctx.messages` afterwards does not show."""
    script = S([[S.tool_call("add", {"a": 1, "b": 1})], [S.text("2")]])

    def before_tool_call(self, ctx):
        ctx.messages.append({"role": "user", "content": "added after the call"})

    agent = scripted_agent(script, tools=[add], before_tool_call=before_tool_call)
    await agent.send("1 + 1?")
    assert [m["role"] for m in script.requests[0]["messages"]] == ["system", "user"]
    assert [m["role"] for m in script.requests[1]["messages"]] == ["system", "user", "assistant", "tool"]
    assert script.requests is script.requests  # one list, read as often as a test likes


async def test_a_hook_editing_messages_in_place_changes_that_request_only() -> None:
    """Hooks may edit `ctx.messages` in place, nested values included (a tool call's arguments):
    the edit reaches the model in that request, and later turns are built from the history again
    (the conversion memo is never changed by a hook)."""
    from think_nb.messages import to_model_messages

    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("42")], [S.text("ok")], [S.text("ok")],
                [S.text("ok")]])
    editing = {"on": True}

    def rewrite(messages: list[dict]) -> None:
        for message in messages:
            for call in message.get("tool_calls", []):
                call["function"]["arguments"] = '{"a": 999}'

    def before_turn(self, ctx):
        if editing["on"]:
            rewrite(ctx.messages)

    def before_tool_call(self, ctx):
        rewrite(ctx.messages)

    agent = scripted_agent(script, tools=[add], before_turn=before_turn, before_tool_call=before_tool_call)
    await agent.send("2 + 40?")
    await agent.send("again")
    sent = [c["function"]["arguments"] for m in script.requests[2]["messages"] for c in m.get("tool_calls", [])]
    assert sent == ['{"a": 999}']  # the hook's edit reached the model for that request
    editing["on"] = False
    await agent.send("and now?")
    assert script.requests[3]["messages"][1:] == to_model_messages(agent.session.history()[:-1])
    sent = [c["function"]["arguments"] for m in script.requests[3]["messages"] for c in m.get("tool_calls", [])]
    assert sent == ['{"a":2,"b":40}']
