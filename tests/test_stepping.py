"""Step mode, the hook trace, and replay of recorded turns."""

import asyncio

import pytest

from agents import scripted_agent
from think_nb.binding import runtime_of
from think_nb.testing import ScriptedModel as S
from think_nb.turns.replay import Recording


def two_tools() -> S:
    return S([[S.text("Let me compute."), S.tool_call("add", {"a": 2, "b": 40}), S.tool_call("mul", {"a": 3, "b": 4}),
               S.usage(9, 9)], [S.text("42 and 12."), S.usage(12, 3)]])


def test_stepping_visits_the_hooks_in_order_and_edits_change_what_the_model_sees() -> None:
    script = two_tools()
    agent = scripted_agent(script, name="step1")
    stepper = agent.step("2+40 and 3*4?")
    seen = []
    event = stepper.next()
    while event.hook != "done":
        seen.append((event.hook, event.step, event.tool))
        if event.hook == "before_turn":
            event.ctx.system = "You are terse."
            event.ctx.messages.append({"role": "user", "content": "(be exact)"})
            del event.ctx.tools["mul"]  # dropped from what the model is offered
        if event.hook == "before_tool_call" and event.tool == "mul":
            event.substitute(1000)
        event = stepper.next()
    assert event.result.status == "completed"
    # the step's two calls run concurrently: decided in call order, finished in any order
    assert seen[:3] == [("before_turn", None, None), ("before_tool_call", 0, "add"), ("before_tool_call", 0, "mul")]
    assert sorted(seen[3:5]) == [("after_tool_call", 0, "add"), ("after_tool_call", 0, "mul")]
    assert seen[5:] == [("on_step_finish", 0, None), ("on_step_finish", 1, None), ("on_chat_response", None, None)]
    first = script.requests[0]
    assert first["messages"][0] == {"role": "system", "content": "You are terse."}
    assert first["messages"][-1] == {"role": "user", "content": "(be exact)"}
    assert [t["function"]["name"] for t in first["tools"]] == ["add"]
    # mul was not offered, so its call is unknown... but the substitution decided it before it ran
    tool_results = [m["content"] for m in script.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_results == ["42.0", "1000"]
    parts = agent.messages[-1]["parts"]
    assert [(p["type"], p.get("output")) for p in parts if p["type"].startswith("tool-")] == [
        ("tool-add", 42.0), ("tool-mul", 1000)]


def test_edit_a_tool_input_then_run_to_the_end() -> None:
    script = two_tools()
    agent = scripted_agent(script, name="step2")
    stepper = agent.step("go")
    event = stepper.next()
    while not (event.hook == "before_tool_call" and event.tool == "add"):
        event = stepper.next()
    event.ctx.input = {"a": 100, "b": 1}
    assert stepper.run().status == "completed"
    assert agent.messages[-1]["parts"][2]["output"] == 101.0


def test_cancel_from_a_pause_keeps_the_partial() -> None:
    script = two_tools()
    agent = scripted_agent(script, name="step3")
    stepper = agent.step("go")
    event = stepper.next()
    while event.hook != "after_tool_call":
        event = stepper.next()
    assert stepper.cancel().status == "aborted"
    assert agent.messages[-1]["parts"][1] == {"type": "text", "text": "Let me compute.", "state": "done"}
    assert len(script.requests) == 1


async def test_await_next_works_on_a_running_loop() -> None:
    agent = scripted_agent(S([[S.text("hi")]]), name="step4")
    stepper = agent.step("hello")
    event = await stepper.next()
    assert event.hook == "before_turn"
    assert "<b>before_turn</b>" in event._repr_html_() and "dataframe" in event._repr_html_()
    assert (await stepper.next()).hook == "on_step_finish"
    assert stepper.run().status == "completed"


async def test_trace_has_one_row_per_hook_call_and_chunk_group() -> None:
    agent = scripted_agent(two_tools(), name="trace")
    await agent.send("go")
    frame = agent.trace()
    assert list(frame.columns) == ["t_ms", "kind", "hook", "step", "tool", "summary", "duration_ms"]
    assert frame.attrs["request_id"] == agent.turns()[-1]["request_id"]
    compact = [(r.kind, r.hook, r.tool if isinstance(r.tool, str) else None) for r in frame.itertuples()]
    model = agent.get_model()
    assert compact[:7] == [("hook", "before_turn", None), ("chunks", "start", None), ("chunks", "start-step", None),
                           ("model", model, None), ("chunks", "text-start", None), ("chunks", "text-delta", None),
                           ("chunks", "text-end", None)]
    calls = frame[frame.kind == "model"]
    assert list(calls.step) == [0, 1] and calls.summary.iloc[0] == "2 messages, tools: add, mul"
    assert frame[frame.hook == "before_turn"].summary.iloc[0].startswith('{"tools":["add","mul"],')
    hooks = [(h, t) for k, h, t in compact if k == "hook"]
    assert hooks[0] == ("before_turn", None) and hooks[-1] == ("on_chat_response", None)
    assert sorted(hooks[1:5]) == [("after_tool_call", "add"), ("after_tool_call", "mul"),
                                  ("before_tool_call", "add"), ("before_tool_call", "mul")]
    assert hooks[5:7] == [("on_step_finish", None), ("on_step_finish", None)]
    text_row = frame[frame.hook == "text-delta"].iloc[0]
    assert text_row.summary == "text-delta ×5: Let me compute."
    assert frame.t_ms.is_monotonic_increasing


async def test_replay_reproduces_the_recorded_chunks_exactly(tmp_path) -> None:
    agent = scripted_agent(two_tools(), name="rec")
    await agent.send("go")
    recording = agent.recording()
    path = recording.save(tmp_path / "turn.json")

    class View:
        def __init__(self):
            self.chunks = []

        def on_chunk(self, request_id, chunk, continuation):
            self.chunks.append(chunk)

    view = View()
    runtime_of(agent).subscribe(view)
    played = await agent.replay(speed=0)
    assert view.chunks == played == [c for _, c in recording.chunks]

    # offline re-run through the whole engine from the saved file: the same chunks, ids aside
    replayed = scripted_agent(Recording.load(path).to_scripted_model(), name="rerun")
    await replayed.send("go")
    assert _normalized(replayed.recording().chunks) == _normalized(recording.chunks)


def _normalized(chunks):
    out = []
    for _, chunk in chunks:
        chunk = dict(chunk)
        for key in ("id", "messageId"):
            if key in chunk:
                chunk[key] = "<id>"
        if "messageMetadata" in chunk:
            chunk["messageMetadata"] = {k: v for k, v in chunk["messageMetadata"].items()
                                        if k not in ("requestId", "model")}
        out.append(chunk)
    return out


async def test_replay_paces_chunks_by_speed() -> None:
    agent = scripted_agent(S([[S.text("slow text", chunk_size=1)]], delay=0.02), name="pace")
    await agent.send("go")
    loop = asyncio.get_running_loop()
    start = loop.time()
    await agent.replay(speed=4)
    fast = loop.time() - start
    recorded_ms = agent.recording().chunks[-1][0]
    assert fast * 1000 < recorded_ms  # 4x faster than recorded
    assert fast * 1000 >= recorded_ms / 4 * 0.8


async def test_a_scripted_turn_replays_at_a_pace_a_class_can_follow() -> None:
    """Issue 27 §9: a turn recorded in a few milliseconds (a scripted model) replays its text at
    least at the reading pace (20 ms a character at speed 1) divided by the speed; a slower
    recording keeps its own pace; speed=0 does not wait."""
    from think_nb.turns.replay import READING_MS_PER_CHAR, pacing

    agent = scripted_agent(S([[S.text("The answer is 42.", chunk_size=4)]]), name="read")
    await agent.send("go")
    # the turn's own chunks, as recorded in a few ms (a loaded machine can take longer: the times are
    # set here, not measured); before the fix, such a recording replayed as fast as it was made
    recording = Recording("r", [(n * 0.5, chunk) for n, (_, chunk) in enumerate(agent.recording().chunks)])
    deltas = [c for _, c in recording.chunks if c["type"] == "text-delta"]
    waits = pacing(recording, speed=4)
    assert sum(waits) >= len("The answer is 42.") * READING_MS_PER_CHAR / 1000 / 4
    text_waits = [w for w, (_, c) in zip(waits, recording.chunks, strict=True) if c["type"] == "text-delta"]
    assert text_waits == [pytest.approx(len(c["delta"]) * READING_MS_PER_CHAR / 1000 / 4, abs=0.05)
                          for c in deltas]
    assert pacing(recording, speed=0) == [0.0] * len(recording.chunks)
    slow = Recording("r", [(0.0, {"type": "start"}), (2000.0, {"type": "text-delta", "id": "t", "delta": "a"})])
    assert pacing(slow, speed=2) == [0.0, 1.0]


def test_a_second_stepper_waits_behind_a_paused_one_and_says_so() -> None:
    script = S([[S.text("one")], [S.text("two")]])
    agent = scripted_agent(script, name="two-steppers")
    first = agent.step("a")
    assert first.next().hook == "before_turn"
    second = agent.step("b")
    queued = second.next()
    assert queued.hook == "queued" and first.request_id in queued.ctx
    assert first.run().status == "completed"
    assert second.next().hook == "before_turn"
    assert second.run().status == "completed"
    assert [(m["role"], m["parts"][-1]["text"]) for m in agent.messages] == [
        ("user", "a"), ("assistant", "one"), ("user", "b"), ("assistant", "two")]
