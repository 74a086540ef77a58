"""An agent called from inside its own turn never deadlocks (issue 30 item 2), and the entry
points that make it possible: `add_messages` (Think's `addMessages`) and `run_turn` (Think's
`runTurn`). Ported from Think's run-turn.test.ts, think-session.test.ts ("Think — addMessages")
and hooks.test.ts ("addMessages from inside a tool execute runs mid-turn and persists")."""

import asyncio

import pytest

from agents import scripted_agent, texts
from think_nb import tool
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S

NESTED = "cannot be called from inside an active turn"


def msg(mid: str, role: str, text: str) -> dict:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


class Callback:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_start(self, info: dict) -> None:
        self.calls.append("start")

    def on_event(self, chunk: str) -> None:
        self.calls.append("event")

    def on_done(self) -> None:
        self.calls.append("done")

    def on_error(self, error: str) -> None:
        self.calls.append(f"error: {error}")


def tool_agent(script: S, body, **attrs):
    """An agent whose one tool `probe()` runs `await body(agent)` and returns its result."""
    holder = []

    @tool
    async def probe() -> str:
        """Probe the agent."""
        return str(await body(holder[0]))

    agent = scripted_agent(script, [probe], **attrs)
    holder.append(agent)
    return agent


def tool_error(agent) -> str | None:
    parts = [p for m in agent.messages for p in m["parts"] if p["type"] == "tool-probe"]
    return parts[0].get("errorText") if parts else None


# -- the nested admission guard ----------------------------------------------------------------
@pytest.mark.parametrize("entry", ["send", "save_messages", "continue_last_turn", "regenerate", "chat"])
async def test_a_tool_awaiting_a_turn_of_its_own_agent_fails_at_once_naming_add_messages(entry: str) -> None:
    calls = {"send": lambda a: a.send("again"), "save_messages": lambda a: a.save_messages([msg("n1", "user", "x")]),
             "continue_last_turn": lambda a: a.continue_last_turn(), "regenerate": lambda a: a.regenerate(),
             "chat": lambda a: a.chat("again", Callback())}
    script = S([[S.tool_call("probe", {})], [S.text("done")]])
    agent = tool_agent(script, calls[entry])
    result = await asyncio.wait_for(agent.send("go"), 60)  # the bound only fails a deadlock
    assert result.status == "completed"
    error = tool_error(agent)
    assert error is not None and NESTED in error and f"agent.{entry}()" in error
    assert "add_messages" in error and "submit" in error
    assert len(script.requests) == 2  # the model read the error and answered


async def test_a_sync_tool_calling_run_in_its_worker_thread_fails_at_once() -> None:
    holder = []

    @tool
    def probe() -> str:
        """Probe the agent."""
        return str(holder[0].run("again"))

    agent = scripted_agent(S([[S.tool_call("probe", {})], [S.text("done")]]), [probe])
    holder.append(agent)
    assert (await asyncio.wait_for(agent.send("go"), 60)).status == "completed"
    error = tool_error(agent)
    assert error is not None and NESTED in error and "agent.run()" in error


@pytest.mark.parametrize("mode", ["wait", "continuation", "stream"])
async def test_blocking_run_turn_modes_throw_inside_before_turn(mode: str) -> None:
    seen: list[str] = []

    async def before_turn(self, ctx):
        if seen:
            return
        kwargs = {"wait": {"input": "nested"}, "continuation": {"continuation": True},
                  "stream": {"input": "nested", "mode": "stream", "callback": Callback()}}[mode]
        try:
            await self.run_turn(**kwargs)
            seen.append("succeeded")
        except UserError as exc:
            seen.append(str(exc))

    agent = scripted_agent(S([[S.text("outer")]]), before_turn=before_turn)
    assert (await asyncio.wait_for(agent.send("outer"), 60)).status == "completed"
    assert NESTED in seen[0]


async def test_submit_and_add_messages_are_allowed_inside_a_turn() -> None:
    accepted = []

    async def body(agent):
        await agent.add_messages([msg("note-1", "user", "noted mid-turn")])
        accepted.append(await agent.run_turn("later", mode="submit", submission_id="sub-nested"))
        return "ok"

    script = S([[S.tool_call("probe", {})], [S.text("first done")], [S.text("later done")]])
    agent = tool_agent(script, body)
    assert (await asyncio.wait_for(agent.send("go"), 60)).status == "completed"
    assert tool_error(agent) is None and accepted[0]["accepted"] is True
    await asyncio.wait_for(agent.submissions_task, 60)
    assert agent.inspect_submission("sub-nested")["status"] == "completed"
    assert ("user", "noted mid-turn") in texts(agent) and texts(agent)[-1] == ("assistant", "later done")


async def test_an_unawaited_submit_from_a_tool_runs_after_the_turn() -> None:
    later = []

    async def body(agent):
        later.append(agent.submit("after"))
        return "queued"

    script = S([[S.tool_call("probe", {})], [S.text("first")], [S.text("second")]])
    agent = tool_agent(script, body)
    assert (await asyncio.wait_for(agent.send("go"), 60)).status == "completed"
    assert (await asyncio.wait_for(later[0], 60)).status == "completed"
    assert [t for _, t in texts(agent)][-2:] == ["after", "second"]


async def test_a_task_a_tool_started_may_run_a_turn_once_that_turn_ended() -> None:
    """Only the running turn is guarded: a background task it started (a scheduler, a watcher)
    carries its context, yet waits for a turn of its own after it as any caller does."""
    turn_over = asyncio.Event()
    later = []

    async def afterwards(agent):
        await turn_over.wait()
        return await agent.send("from the background")

    async def body(agent):
        later.append(asyncio.get_running_loop().create_task(afterwards(agent)))
        return "started"

    script = S([[S.tool_call("probe", {})], [S.text("first")], [S.text("background answer")]])
    agent = tool_agent(script, body)
    assert (await asyncio.wait_for(agent.send("go"), 60)).status == "completed"
    turn_over.set()
    assert (await asyncio.wait_for(later[0], 60)).status == "completed"
    assert texts(agent)[-1] == ("assistant", "background answer")


async def test_on_chat_response_may_still_start_a_turn() -> None:
    results: list = []

    async def on_chat_response(self, result):
        if not results:
            results.append("started")
            results.append(await self.send("follow-up"))

    agent = scripted_agent(S([[S.text("one")], [S.text("two")]]), on_chat_response=on_chat_response)
    assert (await asyncio.wait_for(agent.send("start"), 60)).status == "completed"
    assert results[1].status == "completed" and texts(agent)[-1] == ("assistant", "two")


# -- add_messages ------------------------------------------------------------------------------
async def test_add_messages_appends_without_starting_a_model_turn() -> None:
    script = S([])
    agent = scripted_agent(script)
    await agent.add_messages([msg("add-1", "user", "Context A"), msg("add-2", "assistant", "Context B")])
    assert [m["id"] for m in agent.messages] == ["add-1", "add-2"]
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert script.requests == [] and agent.turns() == []


async def test_add_messages_keeps_a_new_agent_on_the_file_coherent() -> None:
    agent = scripted_agent(S([]), name="cache")
    await agent.add_messages([msg("cache-1", "user", "Hi")])
    again = type(agent)("cache")
    assert [m["id"] for m in again.messages] == ["cache-1"]


async def test_add_messages_is_idempotent_by_id_and_refuses_a_rewrite() -> None:
    agent = scripted_agent(S([]))
    await agent.add_messages([msg("idem-1", "user", "Original")])
    await agent.add_messages([msg("idem-1", "user", "Original")])
    assert texts(agent) == [("user", "Original")]
    with pytest.raises(UserError, match="already stored"):  # think_nb: ids never rewrite history
        await agent.add_messages([msg("idem-1", "user", "Ignored")])
    assert texts(agent) == [("user", "Original")]


async def test_add_messages_chains_an_array_linearly_into_one_path() -> None:
    agent = scripted_agent(S([]))
    await agent.add_messages([msg("c1", "user", "One"), msg("c2", "assistant", "Two"), msg("c3", "user", "Three")])
    assert [m["id"] for m in agent.messages] == ["c1", "c2", "c3"]
    assert [m["id"] for m in type(agent)("t").messages] == ["c1", "c2", "c3"]  # one stored path
    assert [len(agent.get_branches(i)) for i in ("c1", "c2", "c3")] == [1, 1, 1]


async def test_add_messages_throws_on_an_unknown_parent_id_and_stores_nothing() -> None:
    agent = scripted_agent(S([]))
    with pytest.raises(UserError, match="does not exist"):
        await agent.add_messages([msg("orphan", "user", "x")], parent_id="does-not-exist")
    assert agent.messages == []


async def test_add_messages_of_nothing_is_a_no_op() -> None:
    agent = scripted_agent(S([]))
    await agent.add_messages([])
    await agent.add_messages(lambda current: [])
    assert agent.messages == []


async def test_added_messages_are_visible_to_the_next_turn() -> None:
    script = S([[S.text("It is 42.")]])
    agent = scripted_agent(script)
    await agent.add_messages([msg("ctx-1", "user", "Remember 42")])
    assert (await agent.send("And?")).status == "completed"
    assert [m["content"] for m in script.requests[0]["messages"][1:]] == ["Remember 42", "And?"]
    assert agent.messages[0]["id"] == "ctx-1" and len(agent.messages) == 3


async def test_an_explicit_parent_id_branches_and_the_branch_is_shown() -> None:
    agent = scripted_agent(S([]))
    await agent.add_messages([msg("b-A", "user", "A"), msg("b-B", "assistant", "B"), msg("b-C", "user", "C")])
    await agent.add_messages([msg("b-D", "assistant", "D")], parent_id="b-A")
    assert [m["id"] for m in agent.messages] == ["b-A", "b-D"]
    assert [m["id"] for m in type(agent)("t").messages] == ["b-A", "b-D"]
    assert sorted(m["id"] for m in agent.get_branches("b-D")) == ["b-B", "b-D"]


async def test_the_function_form_sees_the_current_messages() -> None:
    agent = scripted_agent(S([]))
    await agent.add_messages([msg("f1", "user", "first")])
    await agent.add_messages(lambda current: [msg("f2", "assistant", f"{len(current)} before me")])
    assert texts(agent) == [("user", "first"), ("assistant", "1 before me")]


async def test_add_messages_refuses_tool_parts_as_save_messages_does() -> None:
    agent = scripted_agent(S([]))
    forged = {"id": "t1", "role": "assistant", "parts": [{"type": "tool-add", "toolCallId": "c1",
                                                         "state": "output-available", "input": {}, "output": 1}]}
    with pytest.raises(UserError):
        await agent.add_messages([forged])
    assert agent.messages == []


async def test_add_messages_from_inside_a_tool_persists_mid_turn() -> None:
    stored_during = []

    async def body(agent):
        await agent.add_messages([msg("mt-1", "user", "Mid-turn")])
        stored_during.append([m["id"] for m in type(agent)("t").messages])  # another reader of the file
        return "added"

    agent = tool_agent(S([[S.tool_call("probe", {})], [S.text("done")]]), body)
    assert (await asyncio.wait_for(agent.send("go"), 60)).status == "completed"
    assert "mt-1" in stored_during[0]
    assert "mt-1" in [m["id"] for m in agent.messages]


# -- run_turn ----------------------------------------------------------------------------------
async def test_run_turn_wait_is_save_messages() -> None:
    agent = scripted_agent(S([[S.text("RunTurn wait reply")]]))
    result = await agent.run_turn("Hello via run_turn")
    assert (result.status, result.continuation) == ("completed", False) and result.request_id
    assert result.message["role"] == "assistant" and texts(agent)[-1] == ("assistant", "RunTurn wait reply")
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]


async def test_run_turn_wait_takes_a_list_and_a_function() -> None:
    agent = scripted_agent(S([[S.text("one")], [S.text("two")]]))
    assert (await agent.run_turn([msg("u1", "user", "Array input")])).status == "completed"
    result = await agent.run_turn(lambda current: [*current, msg("u2", "user", "Function input")])
    assert result.status == "completed" and len(agent.messages) == 4


async def test_run_turn_wait_skips_empty_input_without_a_turn() -> None:
    script = S([])
    agent = scripted_agent(script)
    for empty in ("", []):
        result = await agent.run_turn(empty)
        assert (result.request_id, result.status, result.continuation, result.message) == ("", "skipped", False, None)
    assert agent.messages == [] and script.requests == []


async def test_run_turn_continuation_delegates_to_continue_last_turn_and_skips_without_an_assistant() -> None:
    agent = scripted_agent(S([[S.text("First answer")], [S.text("Continued answer")]]))
    skipped = await agent.run_turn(continuation=True)
    assert (skipped.request_id, skipped.status, skipped.continuation, skipped.message) == ("", "skipped", True, None)
    await agent.run_turn("Start")
    result = await agent.run_turn(continuation=True)
    assert (result.status, result.continuation) == ("completed", True)
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "assistant"]


async def test_run_turn_submit_is_submit_messages() -> None:
    agent = scripted_agent(S([[S.text("queued reply")]]))
    result = await agent.run_turn("Queued prompt", mode="submit", submission_id="sub-runturn-1",
                                  metadata={"source": "run_turn"})
    assert (result["accepted"], result["submission_id"], result["metadata"]) == (True, "sub-runturn-1",
                                                                                 {"source": "run_turn"})
    await asyncio.wait_for(agent.submissions_task, 60)
    assert texts(agent) == [("user", "Queued prompt"), ("assistant", "queued reply")]


async def test_run_turn_stream_drives_the_callback_like_chat() -> None:
    agent = scripted_agent(S([[S.text("streamed")], [S.text("again")]]))
    callback = Callback()
    assert await agent.run_turn("hi", mode="stream", callback=callback) is None
    assert callback.calls[0] == "start" and callback.calls[-1] == "done" and "event" in callback.calls
    assert texts(agent)[-1] == ("assistant", "streamed")
    functional = Callback()
    await agent.run_turn(lambda current: [*current, msg("s2", "user", f"{len(current)} so far")], mode="stream",
                         callback=functional)
    assert functional.calls[-1] == "done" and texts(agent)[-2:] == [("user", "2 so far"), ("assistant", "again")]


async def test_run_turn_stream_of_static_empty_input_calls_start_and_done_without_inference() -> None:
    script = S([])
    callback = Callback()
    await scripted_agent(script).run_turn("", mode="stream", callback=callback)
    assert callback.calls == ["start", "done"] and script.requests == []


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"input": "hi", "mode": "bogus"}, "mode must be"),
    ({}, "either input or continuation"),
    ({"input": "hi", "continuation": True}, "not both"),
    ({"mode": "submit"}, 'mode "submit" requires input'),
    ({"mode": "stream", "callback": Callback()}, 'mode "stream" requires input'),
    ({"input": "hi", "mode": "stream"}, 'mode "stream" requires callback'),
    ({"input": "hi", "mode": "stream", "continuation": True, "callback": Callback()}, "continuation"),
    ({"input": lambda current: current, "mode": "submit"}, "function input"),
])
async def test_run_turn_validates_its_arguments(kwargs: dict, words: str) -> None:
    with pytest.raises(UserError, match=words):
        await scripted_agent(S([])).run_turn(**kwargs)
