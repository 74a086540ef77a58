"""Cases of Think's own test list (the anchor map §7, `docs/think-tests.md`) that no other test
asserted yet: each test's docstring names the Think file and case. Real turns on scripted
models; the rows of `docs/think-tests.md` point here."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from dirty_equals import IsStr

from agents import add, eventually, scripted_agent, texts
from helpers_comm import from_js
from panels import chat_request, responses, streamed_text, until
from test_durable import agent_class, left_by_dead_process
from think_nb import AbortController, ScheduledTask, Think, TurnConfig, action, client_tool, events, tool
from think_nb.actions import ActionContext
from think_nb.binding import runtime_of
from think_nb.messages import user_message
from think_nb.panel.widget import ChatPanel
from think_nb.testing import FakeClock
from think_nb.testing import ScriptedModel as S

tz = client_tool("time_zone", "The user's time zone.", js="return 'UTC';")
sel = client_tool("selection", "The page selection.", js="return '';")


class Callback:
    """A `chat()` callback recording what it hears."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def on_start(self, info: dict) -> None:
        self.calls.append("start")

    def on_event(self, raw: str) -> None:
        self.calls.append(json.loads(raw)["type"])

    def on_done(self) -> None:
        self.calls.append("done")

    def on_error(self, error: str) -> None:
        self.calls.append("error")


def tool_part(agent: Think, call_id: str) -> dict:
    return next(p for m in agent.messages for p in m["parts"] if p.get("toolCallId") == call_id)


# -- think-session.test.ts ------------------------------------------------------------------------
async def test_chat_streams_to_every_panel_of_the_agent(recording_comm: Any) -> None:
    """think-session.test.ts, Core: "RPC chat broadcasts message updates and stream chunks to WS clients"."""
    agent = scripted_agent(S([[S.text("Hello from chat.")]]))
    panel = ChatPanel(agent)
    result = await agent.chat("hi", Callback())
    assert streamed_text(responses(panel, result.request_id)) == "Hello from chat."
    await until(lambda: panel.messages == agent.messages, "the panel's transcript follows")


async def test_an_empty_message_still_runs_inference() -> None:
    """think-session.test.ts, Core: "empty-string message still runs inference"."""
    script = S([[S.text("You sent nothing.")]])
    agent = scripted_agent(script)
    assert (await agent.send("")).status == "completed"
    assert len(script.requests) == 1 and texts(agent) == [("user", ""), ("assistant", "You sent nothing.")]


async def test_a_model_error_with_the_watchdog_armed_ends_the_turn_once() -> None:
    """think-session.test.ts, Watchdog: "in-band error with watchdog armed terminates cleanly"."""
    agent = scripted_agent(S([[S.text("so far"), S.error("provider down")]]), chat_stream_stall_timeout=5)
    result = await agent.send("go")
    assert (result.status, result.interrupted) == ("error", False)
    assert agent.recovery_task is None and [t["status"] for t in agent.turns()] == ["error"]


async def test_chat_works_after_an_abort() -> None:
    """think-session.test.ts, Abort: "chat works after abort"."""
    agent = scripted_agent(S([[S.text("z" * 100, chunk_size=1)], [S.text("fresh")]], delay=0.01))
    callback = Callback()
    task = asyncio.ensure_future(agent.chat("go", callback))
    await eventually(lambda: "text-delta" in callback.calls, what="the chat streams")
    agent.abort_all_requests()
    assert (await task).status == "aborted"
    again = Callback()
    assert (await agent.chat("again", again)).status == "completed"
    assert again.calls[-1] == "done" and texts(agent)[-1] == ("assistant", "fresh")


async def test_chat_takes_a_ui_message_with_several_parts() -> None:
    """think-session.test.ts, Input: "UIMessage input accepted", "multi-part input accepted"."""
    script = S([[S.text("Both read.")]])
    agent = scripted_agent(script)
    message = {"id": "u-multi", "role": "user", "parts": [{"type": "text", "text": "First."},
                                                          {"type": "text", "text": "Second."}]}
    assert (await agent.chat(message, Callback())).status == "completed"
    assert agent.messages[0] == message
    assert "First." in json.dumps(script.requests[0]["messages"][-1])
    assert "Second." in json.dumps(script.requests[0]["messages"][-1])


async def test_get_messages_returns_a_copy() -> None:
    """think-session.test.ts, Session: "getMessages returns copy"."""
    agent = scripted_agent(S([[S.text("ok")]]))
    await agent.send("hi")
    copy = agent.get_messages()
    copy[0]["parts"][0]["text"] = "changed"
    copy.append({"id": "x", "role": "user", "parts": []})
    assert texts(agent) == [("user", "hi"), ("assistant", "ok")]


def session_agent(script: S, configure: Any, name: str = "m") -> Think:
    cls = type("Mem", (Think,), {"get_model": lambda self: script.model, "configure_session": configure,
                                 "include_workspace_tools": False})
    return cls(name)


async def test_an_async_configure_session_works_across_turns() -> None:
    """think-session.test.ts: "async configureSession works across turns"."""
    async def configure(self: Think, session: Any) -> Any:
        await asyncio.sleep(0)
        return session.with_context("persona", description="Who you are.")

    script = S([[S.text("one")], [S.text("two")]])
    agent = session_agent(script, configure)
    await agent.send("1")
    await agent.send("2")
    assert all("PERSONA (Who you are.)" in r["messages"][0]["content"] for r in script.requests)


async def test_get_config_is_usable_inside_configure_session() -> None:
    """think-session.test.ts: "getConfig usable inside configureSession"."""
    script = S([[S.text("ok")]])
    first = session_agent(S([]), lambda self, s: s, name="cfg")
    first.configure({"block": "notes"})
    agent = session_agent(script, lambda self, s: s.with_context(self.get_config()["block"]), name="cfg")
    await agent.send("hi")
    assert "NOTES" in script.requests[0]["messages"][0]["content"]


async def test_a_raising_on_error_callback_propagates_and_no_hook_fires_twice() -> None:
    """think-session.test.ts, onChatResponse: "RPC onError rethrow propagates without duplicate hooks"."""
    seen: list = []

    class Rethrows(Callback):
        def on_error(self, error: str) -> None:
            raise ValueError(f"caller rethrew: {error}")

    agent = scripted_agent(S([[S.error("provider down")]]), on_chat_error=lambda self, e: seen.append("on_chat_error"),
                           on_chat_response=lambda self, r: seen.append(r.status))
    with pytest.raises(ValueError, match=r"caller rethrew: .*provider down"):
        await agent.chat("hi", Rethrows())
    assert seen == ["on_chat_error", "error"] and [t["status"] for t in agent.turns()] == ["error"]


async def test_on_chat_response_fires_for_an_empty_stream() -> None:
    """think-session.test.ts, onChatResponse: "fires on empty streams (WS and RPC)"."""
    seen: list = []
    agent = scripted_agent(S([[S.silent()], [S.silent()]]), on_chat_response=lambda self, r: seen.append(r.status))
    await agent.send("say nothing")
    await agent.chat("again nothing", Callback())
    assert seen == ["completed", "completed"]


async def test_on_chat_response_sees_an_error_before_any_part() -> None:
    """think-session.test.ts, onChatResponse: "error status (incl. in-band error before any part)"."""
    seen: list = []
    agent = scripted_agent(S([[S.error("refused at once")]]),
                           on_chat_response=lambda self, r: seen.append((r.status, "refused at once" in r.error)))
    assert (await agent.send("go")).status == "error"
    assert seen == [("error", True)]


async def test_on_chat_response_sees_an_aborted_turn() -> None:
    """think-session.test.ts, onChatResponse: "aborted status"."""
    seen: list = []
    chunks: list = []
    agent = scripted_agent(S([[S.text("y" * 100, chunk_size=1)]], delay=0.01),
                           on_chunk=lambda self, c: chunks.append(c["type"]),
                           on_chat_response=lambda self, r: seen.append(r.status))
    task = agent.submit("go")
    await eventually(lambda: "text-delta" in chunks, what="the turn streams")
    agent.abort_all_requests()
    assert (await task).status == "aborted" and seen == ["aborted"]


async def test_a_client_tool_result_is_still_sent_turns_later() -> None:
    """think-session.test.ts: "earlier client-side tool results preserved across turns"."""
    script = S([[S.tool_call("time_zone", {})], [S.text("UTC it is.")], [S.text("Still UTC.")]])
    agent = scripted_agent(script, tools=[tz])
    await agent.send("tz?")
    await agent.add_tool_output("call_1_0", "UTC")
    await agent.send("and now?")
    assert {"role": "tool", "tool_call_id": "call_1_0", "content": "UTC"} in script.requests[2]["messages"]


async def test_save_messages_fires_on_chat_response() -> None:
    """think-session.test.ts, saveMessages: "onChatResponse"."""
    seen: list = []
    agent = scripted_agent(S([[S.text("ok")]]), on_chat_response=lambda self, r: seen.append(r.request_id))
    result = await agent.save_messages([user_message("hi")])
    assert seen == [result.request_id]


async def test_save_messages_streams_to_a_panel(recording_comm: Any) -> None:
    """think-session.test.ts, saveMessages: "broadcast"."""
    agent = scripted_agent(S([[S.text("Saved and streamed.")]]))
    panel = ChatPanel(agent)
    result = await agent.save_messages([user_message("hi")])
    assert streamed_text(responses(panel, result.request_id)) == "Saved and streamed."


async def test_finished_turns_leave_no_abort_controller() -> None:
    """think-session.test.ts, saveMessages external signal: "no controller leak"."""
    agent = scripted_agent(S([[S.text("a")], [S.text("b")]]))
    for _ in range(2):
        assert (await agent.save_messages([user_message("x")], signal=AbortController().signal)).status == "completed"
    engine = runtime_of(agent).engine
    assert (engine.active, engine.turns_run, engine.responding, engine.stall_outcomes) == ({}, {}, {}, {})


async def test_continue_last_turn_is_aborted_by_its_signal() -> None:
    """think-session.test.ts, saveMessages: "continueLastTurn aborted/pre-aborted"."""
    script = S([[S.text("Once")], [S.text("x" * 100, chunk_size=1)]], delay=0.01)
    chunks: list = []
    agent = scripted_agent(script, on_chunk=lambda self, c: chunks.append(c["type"]))
    await agent.send("story")
    controller = AbortController()
    controller.abort("no")
    assert (await agent.continue_last_turn(signal=controller.signal)).status == "aborted"
    assert len(script.requests) == 1
    controller, chunks[:] = AbortController(), []
    task = asyncio.ensure_future(agent.continue_last_turn(signal=controller.signal))
    await eventually(lambda: "text-delta" in chunks, what="the continuation streams")
    controller.abort("enough")
    assert (await task).status == "aborted"


async def test_add_messages_never_moves_a_stored_message() -> None:
    """think-session.test.ts, addMessages: "no re-parent on upsert"."""
    agent = scripted_agent(S([]))
    a, b = user_message("a"), user_message("b")
    await agent.add_messages([a, b])
    await agent.add_messages([b], parent_id=None)  # the same message again, under another parent
    assert [m["id"] for m in agent.messages] == [a["id"], b["id"]]
    assert [m["id"] for m in type(agent)(agent.name).messages] == [a["id"], b["id"]]


async def test_a_continuation_is_flagged_in_on_chat_response() -> None:
    """think-session.test.ts, continueLastTurn: "continuation:true in hooks/onChatResponse";
    client-tools.test.ts: "onChatResponse ... incl. continuation=true"."""
    seen: list = []
    agent = scripted_agent(S([[S.tool_call("time_zone", {})], [S.text("UTC.")]]), tools=[tz],
                           on_chat_response=lambda self, r: seen.append(r.continuation))
    await agent.send("tz?")
    await agent.add_tool_output("call_1_0", "UTC")
    assert seen == [False, True]


async def test_a_continued_recovery_sends_the_partial_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """think-session.test.ts, onChatRecovery: "no assistant prefill replay" — the partial goes to
    the model once, as history, and the request ends with Think's continue checkpoint."""
    from test_durable import partial_chunks

    script = S([[S.text("wer.")]])
    cls = agent_class(script, on_chat_recovery=lambda self, ctx: {"continue": True})
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert agent.recovery_task is not None
    await agent.recovery_task
    sent = script.requests[0]["messages"]
    assert json.dumps(sent).count("half an ans") == 1
    assert sent[-1] == {"role": "user", "content": IsStr(regex="Continue your previous response.*")}


async def test_an_on_chat_recovery_that_raises_keeps_the_partial_and_continues_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """think-session.test.ts, onChatRecovery: "onChatRecovery throw → failed"."""
    from test_durable import partial_chunks

    def on_chat_recovery(self: Think, ctx: Any) -> None:
        raise RuntimeError("recovery policy broke")

    script = S([[S.text("never")]])
    cls = agent_class(script, on_chat_recovery=on_chat_recovery)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    if agent.recovery_task is not None:
        await asyncio.gather(agent.recovery_task, return_exceptions=True)
    assert script.requests == [] and agent.messages[-1]["metadata"]["interrupted"] is True
    assert [t["status"] for t in agent.turns()] == ["interrupted"]


async def test_an_input_streaming_orphan_is_repaired_before_the_next_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """think-session.test.ts, onChatRecovery: "input-streaming orphan repaired"."""
    chunks = [{"type": "start", "messageId": "m-cut"}, {"type": "start-step"},
              {"type": "tool-input-start", "toolCallId": "c1", "toolName": "add"},
              {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a": 1'}]
    script = S([[S.text("Recovered.")]])
    cls = agent_class(script)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", chunks)
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert (await agent.send("status?")).status == "completed"
    assert tool_part(agent, "c1")["state"] == "output-error"
    assert {"role": "tool", "tool_call_id": "c1", "content": IsStr(regex="Error: .*interrupted.*")} in \
        script.requests[0]["messages"]


async def test_a_recovery_continuation_superseded_by_a_new_message_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """think-session.test.ts, onChatRecovery: "superseded/user-superseded continuations skip" — a
    message the user sends before the recovered turn resumes is answered, and the continuation of
    the old partial does not run after it (it appended a second reply to the new answer)."""
    from test_durable import partial_chunks
    from think_nb.turns.result import SKIPPED

    script = S([[S.text("About the new question.")], [S.text("never")]])
    cls = agent_class(script, on_chat_recovery=lambda self, ctx: {"continue": True})
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    newer = agent.submit("something else")
    assert agent.recovery_task is not None
    (resumed,) = await agent.recovery_task
    assert ((await newer).status, resumed.status, resumed.reason) == ("completed", "skipped", SKIPPED["superseded"])
    assert texts(agent)[-2:] == [("user", "something else"), ("assistant", "About the new question.")]
    assert len(script.requests) == 1


async def test_a_completed_turn_is_not_recovered(tmp_path: Path) -> None:
    """think-session.test.ts, onChatRecovery: "completed streams not continued or duplicated"."""
    seen: list = []
    script = S([[S.text("done.")]])
    cls = agent_class(script, on_chat_recovery=lambda self, ctx: seen.append(ctx) or {"continue": True})
    first = cls("r", db=tmp_path / "a.sqlite")
    await first.send("hi")
    again = cls("r", db=tmp_path / "a.sqlite")
    assert seen == [] and again.recovery_task is None and again.messages == first.messages


# -- hooks.test.ts ---------------------------------------------------------------------------------
async def test_before_turn_fires_on_every_entry_path() -> None:
    """hooks.test.ts: "beforeTurn ... fires every turn and from RPC/programmatic", "hooks converge
    across paths" — the same hooks for `send`, `chat`, `save_messages`, `submit_messages` and
    `continue_last_turn`."""
    seen: list = []
    script = S([[S.text(f"r{n}")] for n in range(5)])
    agent = scripted_agent(script, before_turn=lambda self, ctx: seen.append(("before_turn", ctx.trigger)),
                           on_chat_response=lambda self, r: seen.append(("on_chat_response", r.status)))
    await agent.send("1")
    await agent.chat("2", Callback())
    await agent.save_messages([user_message("3")])
    await agent.submit_messages([user_message("4")])
    await agent.submissions_task
    await agent.continue_last_turn()
    triggers = ["send", "chat", "save_messages", "submission", "continuation"]
    assert seen == [x for t in triggers for x in (("before_turn", t), ("on_chat_response", "completed"))]


async def test_a_plain_tool_streams_no_preliminary_output() -> None:
    """hooks.test.ts, streaming tools: "scalar emits none"."""
    chunks: list = []
    agent = scripted_agent(S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]]),
                           on_chunk=lambda self, c: chunks.append(c))
    await agent.send("1 + 2")
    outputs = [c for c in chunks if c["type"] == "tool-output-available"]
    assert outputs == [{"type": "tool-output-available", "toolCallId": "call_1_0", "output": 3.0}]


async def test_a_gated_call_reaches_before_tool_call_only_once_approved() -> None:
    """hooks.test.ts: "raw needsApproval + beforeToolCall ordering" — the approval gate comes
    first (the AI SDK's `needsApproval`), `beforeToolCall` wraps the execution after it."""
    seen: list = []

    @tool(needs_approval=True)
    def wipe(path: str) -> str:
        """Wipe a path."""
        return "wiped"

    agent = scripted_agent(S([[S.tool_call("wipe", {"path": "/tmp"})], [S.text("Done.")]]), tools=[wipe],
                           before_tool_call=lambda self, ctx: seen.append(ctx.tool_name))
    await agent.send("wipe /tmp")
    assert seen == [] and tool_part(agent, "call_1_0")["state"] == "approval-requested"
    await agent.approve("call_1_0")
    assert seen == ["wipe"] and tool_part(agent, "call_1_0")["output"] == "wiped"


async def test_a_dynamic_block_offers_set_context() -> None:
    """hooks.test.ts, dynamic context: "set_context appears", "coexists with configured blocks"."""
    script = S([[S.text("ok")]])
    agent = session_agent(script, lambda self, s: s.with_context("memory", description="Facts."), name="dyn")
    agent.session.add_context("todo", description="Open tasks")
    await agent.send("hi")
    system = script.requests[0]["messages"][0]["content"]
    assert "MEMORY (Facts.)" in system and "TODO (Open tasks) [writable]" in system
    set_context = next(t["function"] for t in script.requests[0]["tools"] if t["function"]["name"] == "set_context")
    assert set_context["parameters"]["properties"]["label"]["enum"] == ["memory", "todo"]


async def test_turn_config_instructions_replace_the_system_prompt() -> None:
    """hooks.test.ts, beforeTurn overrides: "instructions"."""
    script = S([[S.text("Arr.")]])
    agent = scripted_agent(script, before_turn=lambda self, ctx: TurnConfig(instructions="Talk like a pirate."))
    await agent.send("hi")
    assert script.requests[0]["messages"][0] == {"role": "system", "content": "Talk like a pirate."}


# -- client-tools.test.ts --------------------------------------------------------------------------
async def test_a_client_error_without_text_gets_the_default_error_text() -> None:
    """client-tools.test.ts, tool result application: "output-error (... default errorText)"."""
    from think_nb.turns.engine import DEFAULT_TOOL_ERROR

    agent = scripted_agent(S([[S.tool_call("time_zone", {})], [S.text("It failed.")]]), tools=[tz])
    await agent.send("tz?")
    await agent.add_tool_output("call_1_0", state="output-error")
    assert (tool_part(agent, "call_1_0")["state"], tool_part(agent, "call_1_0")["errorText"]) == (
        "output-error", DEFAULT_TOOL_ERROR)


async def test_without_auto_continue_a_result_starts_no_turn() -> None:
    """client-tools.test.ts, auto-continuation: "without autoContinue"."""
    script = S([[S.tool_call("time_zone", {})], [S.text("later")]])
    agent = scripted_agent(script, tools=[tz])
    await agent.send("tz?")
    assert agent.add_tool_output("call_1_0", "UTC", auto_continue=False) is None
    assert await agent.wait_until_stable(timeout=5)
    assert len(script.requests) == 1 and tool_part(agent, "call_1_0")["output"] == "UTC"


async def test_an_approved_tool_that_raises_keeps_its_error() -> None:
    """client-tools.test.ts, auto-continuation: "approved tool error persisted"."""
    @tool(needs_approval=True)
    def wipe(path: str) -> str:
        """Wipe a path."""
        raise PermissionError("read-only file system")

    script = S([[S.tool_call("wipe", {"path": "/"})], [S.text("It failed.")]])
    agent = scripted_agent(script, tools=[wipe])
    await agent.send("wipe /")
    assert (await agent.approve("call_1_0")).status == "completed"
    stored = tool_part(type(agent)(agent.name), "call_1_0")
    assert (stored["state"], stored["errorText"]) == ("output-error", "PermissionError: read-only file system")
    assert script.requests[1]["messages"][-1]["content"] == "Error: PermissionError: read-only file system"


async def test_a_sibling_called_after_the_first_result_holds_the_batch() -> None:
    """client-tools.test.ts, parallel batches: "sibling emitted later in same stream", "slow
    sibling after stream end" — a result for the first call, given while the step still streams
    the second, does not continue the turn; the second's, after the turn, does."""
    script = S([[S.tool_call("time_zone", {}), S.text("thinking...", chunk_size=1), S.tool_call("selection", {})],
                [S.text("Both answered.")]], delay=0.01)
    agent = scripted_agent(script, tools=[tz, sel])

    class Panel:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            if chunk["type"] == "tool-input-available" and chunk["toolCallId"] == "call_1_0":
                agent.add_tool_output("call_1_0", "UTC")

    runtime_of(agent).subscribe(Panel())
    await agent.send("tz and selection?")
    assert await agent.wait_until_stable(timeout=0.2) is False and len(script.requests) == 1
    assert (await agent.add_tool_output("call_1_1", "")).status == "completed"
    assert texts(agent)[-1] == ("assistant", "Both answered.") and len(script.requests) == 2


async def test_an_approval_beside_a_client_call_holds_the_batch() -> None:
    """client-tools.test.ts, parallel batches: "approval-requested sibling holds barrier"."""
    @tool(needs_approval=True)
    def wipe(path: str) -> str:
        """Wipe a path."""
        return "wiped"

    script = S([[S.tool_call("time_zone", {}), S.tool_call("wipe", {"path": "/tmp"})], [S.text("Done.")]])
    agent = scripted_agent(script, tools=[tz, wipe])
    await agent.send("go")
    assert agent.add_tool_output("call_1_0", "UTC") is None and len(script.requests) == 1
    assert (await agent.approve("call_1_1")).status == "completed" and len(script.requests) == 2


async def test_a_panel_request_without_client_tools_clears_them(recording_comm: Any) -> None:
    """client-tools.test.ts, client tool schemas: "cleared by requests without them"."""
    script = S([[S.text("a")], [S.text("b")]])
    agent = scripted_agent(script, tools=[])
    panel = ChatPanel(agent)
    copy = {"name": "copy", "description": "Copy", "parameters": {"type": "object", "properties": {}}}
    from_js(panel, chat_request("r1", clientTools=[copy]))
    await until(lambda: agent.turns() and agent.turns()[-1]["status"] == "completed", "the first turn")
    from_js(panel, chat_request("r2", {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "again"}]}))
    await until(lambda: len(agent.turns()) == 2 and agent.turns()[-1]["status"] == "completed", "the second turn")
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["copy"]
    assert script.requests[1]["tools"] in ([], None)


async def test_another_panel_gets_the_continuation_chunks(recording_comm: Any) -> None:
    """client-tools.test.ts, broadcast/persistence: "other tabs get continuation chunks"."""
    agent = scripted_agent(S([[S.tool_call("time_zone", {})], [S.text("UTC, then.")]]), tools=[tz])
    first, other = ChatPanel(agent), ChatPanel(agent)
    await agent.send("tz?")
    result = await agent.add_tool_output("call_1_0", "UTC")
    frames = responses(other, result.request_id)
    assert streamed_text(frames) == "UTC, then." and all(f.get("continuation") for f in frames)
    assert streamed_text(responses(first, result.request_id)) == "UTC, then."


async def test_regenerating_twice_keeps_three_versions() -> None:
    """client-tools.test.ts, regeneration: "multiple branches", "hook fires"."""
    seen: list = []
    agent = scripted_agent(S([[S.text("v1")], [S.text("v2")], [S.text("v3")]]),
                           on_chat_response=lambda self, r: seen.append(r.status))
    await agent.send("q")
    await agent.regenerate()
    await agent.regenerate()
    versions = agent.get_branches(agent.messages[-1]["id"])
    assert [v["parts"][-1]["text"] for v in versions] == ["v1", "v2", "v3"]
    assert seen == ["completed"] * 3 and texts(agent) == [("user", "q"), ("assistant", "v3")]


async def test_repair_interrupted_tool_part_may_settle_a_call_its_own_way() -> None:
    """client-tools.test.ts: "repairInterruptedToolPart override (ask_user → text; fallback;
    settled untouched)" — the override settles the open `ask_user` call, the default repairs
    another open call, a settled call is never passed to it."""
    asked: list = []

    def repair(self: Think, part: dict) -> dict | None:
        asked.append(part["toolCallId"])
        if part["type"] == "tool-ask_user":
            return {**part, "state": "output-available", "output": "The user did not answer."}
        return None

    ask_user = client_tool("ask_user", "Ask the user.", js="return prompt('?');")
    script = S([[S.tool_call("add", {"a": 1, "b": 1}), S.tool_call("ask_user", {}), S.tool_call("time_zone", {})],
                [S.text("Moving on.")]])
    agent = scripted_agent(script, tools=[add, ask_user, tz], repair_interrupted_tool_part=repair)
    await agent.send("go")
    await agent.send("never mind")
    assert sorted(asked) == ["call_1_1", "call_1_2"]
    assert tool_part(agent, "call_1_1")["output"] == "The user did not answer."
    assert tool_part(agent, "call_1_2")["state"] == "output-error" and tool_part(agent, "call_1_0")["output"] == 2.0


# -- submissions.test.ts ---------------------------------------------------------------------------
async def test_two_submissions_of_one_key_at_once_accept_one() -> None:
    """submissions.test.ts: "idempotency by key (incl. concurrent)"."""
    agent = scripted_agent(S([[S.text("once")]]))
    results = await asyncio.gather(*(agent.submit_messages([user_message("hi")], idempotency_key="k")
                                     for _ in range(3)))
    assert sorted(r["accepted"] for r in results) == [False, False, True]
    await agent.submissions_task
    assert texts(agent) == [("user", "hi"), ("assistant", "once")]


async def test_a_failed_submission_keeps_its_error() -> None:
    """submissions.test.ts: "stream/setup errors stored"."""
    agent = scripted_agent(S([[S.error("provider down")]]))
    await agent.submit_messages([user_message("hi")], submission_id="s1")
    await agent.submissions_task
    inspected = agent.inspect_submission("s1")
    assert inspected["status"] == "error" and "provider down" in inspected["error"]


async def test_cancelling_a_queued_submission_of_two_messages_appends_neither() -> None:
    """submissions.test.ts: cancel queued "(messages never appended, multi-message atomic)"."""
    agent = scripted_agent(S([[S.text("slow " * 30, chunk_size=1)], [S.text("never")]], delay=0.01))
    await agent.submit_messages([user_message("run")], submission_id="run")
    await agent.submit_messages([user_message("one"), user_message("two")], submission_id="queued")
    await eventually(lambda: agent.inspect_submission("run")["status"] == "running", what="the first one runs")
    assert agent.cancel_submission("queued")["status"] == "aborted"
    await agent.submissions_task
    assert [m["parts"][-1]["text"] for m in agent.messages if m["role"] == "user"] == ["run"]


async def test_list_submissions_takes_a_limit() -> None:
    """submissions.test.ts: "list/delete ... limits"."""
    agent = scripted_agent(S([[S.text(f"r{n}")] for n in range(3)]))
    for n in range(3):
        await agent.submit_messages([user_message(str(n))], submission_id=f"s{n}")
    await agent.submissions_task
    assert [s["submission_id"] for s in agent.list_submissions(limit=2)] == ["s0", "s1"]
    assert agent.delete_submissions(limit=2) == 2 and [s["submission_id"] for s in agent.list_submissions()] == ["s2"]


async def test_delete_submissions_keeps_what_is_newer_than_the_cutoff() -> None:
    """submissions.test.ts: "list/delete ... cutoffs"."""
    agent = scripted_agent(S([[S.text("a")], [S.text("b")]]))
    await agent.submit_messages([user_message("old")], submission_id="old")
    await agent.submissions_task
    cutoff = agent.inspect_submission("old")["completed_at"] + 1e-6
    await agent.submit_messages([user_message("new")], submission_id="new")
    await agent.submissions_task
    assert agent.delete_submissions(completed_before=cutoff) == 1
    assert [s["submission_id"] for s in agent.list_submissions()] == ["new"]


# -- run-turn.test.ts ------------------------------------------------------------------------------
async def test_turn_events_carry_no_channel_without_one() -> None:
    """run-turn.test.ts: "chat:turn start/finish events per mode (no channel in metadata ...)"."""
    agent = scripted_agent(S([[S.text("ok")]]))
    seen: list = []
    with events.subscribe(seen.append, agent=agent, names="chat:turn:*"):
        await agent.run_turn("hi")
    assert [e.name for e in seen] == ["chat:turn:start", "chat:turn:finish"]
    assert not any("channel" in json.dumps(e.payload) for e in seen)
    assert "channel" not in agent.messages[0].get("metadata", {})


async def test_a_skipped_turn_emits_no_turn_events() -> None:
    """run-turn.test.ts: "chat:turn ... (none for skipped)"."""
    agent = scripted_agent(S([]))
    seen: list = []
    with events.subscribe(seen.append, agent=agent, names="chat:turn:*"):
        assert (await agent.run_turn("")).status == "skipped"
        assert (await agent.continue_last_turn()).status == "skipped"
    assert seen == []


# -- assistant-tools.test.ts -----------------------------------------------------------------------
async def test_an_ambiguous_fuzzy_edit_is_refused() -> None:
    """assistant-tools.test.ts, edit: "ambiguous fuzzy"."""
    from fsspec.implementations.memory import MemoryFileSystem

    from think_nb.workspace.tools import WorkspaceToolError, workspace_tools

    fs = MemoryFileSystem(skip_instance_cache=True)
    fs.store.clear()
    fs.pipe_file("/a.py", b"x  = 1\nx =\t1\n")
    edit = workspace_tools(fs)["edit"]
    with pytest.raises(WorkspaceToolError, match="include more context"):
        await edit.invoke({"path": "/a.py", "old_string": "x = 1", "new_string": "x = 2"})
    assert fs.cat("/a.py") == b"x  = 1\nx =\t1\n"


# -- fetch-tools.test.ts ---------------------------------------------------------------------------
class _Bodies(BaseHTTPRequestHandler):
    """`/empty`: 204 with no body; anything else: a JSON content type over text that is not JSON."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b"" if self.path == "/empty" else b'{"a": 1,'
        self.send_response(204 if self.path == "/empty" else 200)
        if body:
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


async def test_an_empty_204_and_invalid_json_come_back_as_they_are() -> None:
    """fetch-tools.test.ts: "invalid JSON", "204"."""
    from think_nb.workspace.fetch import fetch_tool

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Bodies)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    fetch = fetch_tool(allowed_hosts=["127.0.0.1"], allow_private=["127.0.0.1"])
    try:
        assert await fetch.invoke({"url": f"{url}/empty"}) == {
            "ok": True, "url": f"{url}/empty", "status": 204, "contentType": "", "bytes": 0, "content": ""}
        bad = await fetch.invoke({"url": f"{url}/bad.json"})
        assert (bad["ok"], bad["contentType"], bad["content"]) == (True, "application/json", '{"a": 1,')
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- actions-attach-reply.test.ts ------------------------------------------------------------------
async def test_an_approved_actions_attachment_lands_on_the_continuation() -> None:
    """actions-attach-reply.test.ts: "after approval"."""
    @action(approval="approval-gated")
    def send_card(title: str, ctx: ActionContext) -> str:
        """Send a card."""
        ctx.attach_reply({"type": "card", "title": title})
        return "sent"

    agent = scripted_agent(S([[S.tool_call("send_card", {"title": "Hi"})], [S.text("Sent.")]]),
                           get_actions=lambda self: [send_card])
    paused = await agent.send("send a card")
    assert paused.attachments == []
    result = await agent.approve("call_1_0")
    assert result.attachments == [{"type": "card", "title": "Hi"}]


# -- scheduled-tasks.test.ts -----------------------------------------------------------------------
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def scheduled(clock: FakeClock, db: Path, tasks: dict, script: S | None = None) -> Think:
    script = script or S([[S.text("ok")]])
    cls = type("Scheduled", (Think,), {"get_model": lambda self: script.model, "schedule_clock": clock,
                                       "get_scheduled_tasks": lambda self: tasks})
    return cls("s", db=db)


async def stop(agent: Think) -> None:
    if agent.schedules_task is not None:
        agent.schedules_task.cancel()
        await asyncio.gather(agent.schedules_task, return_exceptions=True)


async def test_a_declared_task_whose_time_zone_changes_is_re_armed(tmp_path: Path) -> None:
    """scheduled-tasks.test.ts: "timezone change"."""
    clock = FakeClock(T0)
    first = scheduled(clock, tmp_path / "a.sqlite", {"d": ScheduledTask("every day at 09:00 in UTC", prompt="x")})
    assert first.get_schedule("d")["next_run_at"] == T0 + 9 * 3600
    await stop(first)
    again = scheduled(clock, tmp_path / "a.sqlite", {"d": ScheduledTask("every day at 09:00 in Asia/Tokyo",
                                                                        prompt="x")})
    assert again.get_schedule("d")["next_run_at"] == T0 + 24 * 3600  # 09:00 in Tokyo is 00:00 UTC
    await stop(again)


def test_a_daily_time_follows_daylight_saving_time() -> None:
    """scheduled-tasks.test.ts: "DST" — 09:00 in Paris is 08:00 UTC before 2026-03-29, 07:00 after."""
    from think_nb.schedules import spec as specs

    spec = specs.parse("every day at 09:00 in Europe/Paris")
    saturday = 1_774_692_000.0  # 2026-03-28T10:00:00Z, after that day's run
    sunday = spec.first(saturday)
    assert sunday == 1_774_767_600.0  # 2026-03-29T07:00:00Z: clocks went forward that night
    assert spec.first(sunday + 1) == sunday + 24 * 3600


async def test_a_prompt_task_whose_turn_fails_runs_its_next_occurrence(tmp_path: Path) -> None:
    """scheduled-tasks.test.ts: "re-arm after prompt ... failure"."""
    clock = FakeClock(T0)
    agent = scheduled(clock, tmp_path / "a.sqlite", {"t": ScheduledTask("every 1 minute", prompt="tick")},
                      S([[S.error("provider down")], [S.text("fine")]]))
    clock.advance(60)
    await eventually(lambda: agent.get_schedule("t")["last_status"] == "error")
    assert agent.get_schedule("t")["next_run_at"] == T0 + 120
    clock.advance(60)
    await eventually(lambda: agent.get_schedule("t")["last_status"] == "completed")
    assert [t["status"] for t in agent.turns()] == ["error", "completed"]
    await stop(agent)


async def test_a_sub_agents_schedule_is_its_own(tmp_path: Path) -> None:
    """scheduled-tasks.test.ts: "sub-agent support and isolation"."""
    clock = FakeClock(T0)
    script = S([[S.text("pong")]])
    child_cls = type("Child", (Think,), {"get_model": lambda self: script.model, "schedule_clock": clock})
    parent = scheduled(clock, tmp_path / "a.sqlite", {})
    child = parent.sub_agent(child_cls, "c")
    child.schedule(30, "ping", id="ping")
    assert parent.get_schedule("ping") is None
    clock.advance(30)
    await eventually(lambda: [t["status"] for t in child.turns()] == ["completed"])
    assert texts(child) == [("user", "ping"), ("assistant", "pong")] and parent.messages == []
    await stop(child)
    await stop(parent)


# -- hydration-budget.test.ts ----------------------------------------------------------------------
async def test_a_windowed_agent_keeps_chatting(tmp_path: Path) -> None:
    """hydration-budget.test.ts: "chat past window"."""
    script = S([[S.text("still here")]])
    cls = type("Long", (Think,), {"get_model": lambda self: script.model, "hydration_limit": 4})
    first = cls("long", db=tmp_path / "l.sqlite")
    await first.add_messages([user_message(f"m{n}") for n in range(10)])
    agent = cls("long", db=tmp_path / "l.sqlite")
    assert len(agent.messages) == 4
    assert (await agent.send("hello")).status == "completed"
    assert texts(agent)[-2:] == [("user", "hello"), ("assistant", "still here")]
    assert runtime_of(agent).store.messages.count() == 12


# -- stream-cleanup.test.ts ------------------------------------------------------------------------
def test_finished_streams_are_swept_after_ten_minutes_live_ones_never(tmp_path: Path) -> None:
    """stream-cleanup.test.ts: "live streams not swept", "10-min grace"."""
    from think_nb.store.agent import AgentStore
    from think_nb.store.db import open_database
    from think_nb.turns.recorder import KEEP_FINISHED_S

    store = AgentStore(open_database(tmp_path / "s.sqlite"), "K:k", "K", "k")
    for rid, status in (("old-done", "completed"), ("recent-done", "completed"), ("old-live", "streaming")):
        store.streams.set_status(rid, False, status)
        store.streams.append(rid, [{"type": "start"}])
    store.db.execute("UPDATE think_stream_metadata SET updated_at = updated_at - ? WHERE request_id LIKE 'old-%'",
                     (KEEP_FINISHED_S + 1,))
    store.streams.drop_finished(KEEP_FINISHED_S)
    assert KEEP_FINISHED_S == 600
    assert [(r, store.streams.meta(r)) for r in ("old-done", "recent-done", "old-live")] == [
        ("old-done", None), ("recent-done", (False, "completed")), ("old-live", (False, "streaming"))]


# -- onconnect-broadcast.test.ts -------------------------------------------------------------------
async def test_a_sub_agents_panel_never_gets_the_parents_stream(recording_comm: Any) -> None:
    """onconnect-broadcast.test.ts: "sub-agent sockets isolated from parent resume protocol"."""
    parent = scripted_agent(S([[S.text("parent talks")]]), name="parent")
    child = parent.sub_agent(type(parent), "child")
    child_panel = ChatPanel(child)
    await parent.send("hi")
    assert responses(child_panel) == [] and child_panel.messages == []


async def test_clear_drops_the_terminal_record(recording_comm: Any) -> None:
    """onconnect-broadcast.test.ts: terminal replay "dropped on clear"."""
    from helpers_comm import custom_msgs
    from think_nb.panel import protocol

    agent = scripted_agent(S([[S.text("so far"), S.error("boom")]]))
    assert (await agent.send("go")).status == "error"
    agent.clear_messages()
    view = ChatPanel(agent)
    from_js(view, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "p"})
    assert custom_msgs(view)[-1] == protocol.stream_resume_none("p")


# -- message-reconciliation.test.ts ----------------------------------------------------------------
async def test_a_repaired_call_is_not_repaired_again() -> None:
    """message-reconciliation.test.ts: "errored calls not re-repaired"."""
    asked: list = []
    agent = scripted_agent(S([[S.tool_call("time_zone", {})], [S.text("a")], [S.text("b")]]), tools=[tz],
                           repair_interrupted_tool_part=lambda self, part: asked.append(part["toolCallId"]) or {
                               **part, "state": "output-error", "errorText": "No answer came."})
    await agent.send("tz?")
    await agent.send("never mind")
    await agent.send("and again")
    assert asked == ["call_1_0"] and tool_part(agent, "call_1_0")["state"] == "output-error"


# -- extension-manager.test.ts ---------------------------------------------------------------------
async def test_an_extension_loads_again_after_it_was_unloaded(tmp_path: Path) -> None:
    """extension-manager.test.ts: "lifecycle after unload and reload"."""
    from test_extensions import MATH

    agent = type("Ext", (Think,), {"get_model": lambda self: "scripted/none"})("e", db=tmp_path / "e.sqlite")
    await agent.load_extension({"name": "math", "version": "1"}, MATH)
    await agent.unload_extension("math")
    await agent.load_extension({"name": "math", "version": "2"}, MATH)
    tool_ = (await runtime_of(agent).extension_tools())["math_add"]
    assert await tool_.invoke({"a": 2, "b": 40}) == {"result": 42}
    assert agent.extensions()[["name", "version"]].to_dict("records") == [{"name": "math", "version": "2"}]
    await agent.shutdown()


# -- agent-tools / nested-agent-tools.test.ts ------------------------------------------------------
async def test_a_child_may_delegate_to_its_own_child() -> None:
    """nested-agent-tools.test.ts: a sub-agent's tool delegates to its own sub-agent."""
    leaf_script = S([[S.text("leaf answer")]])
    Leaf = type("Leaf", (Think,), {"get_model": lambda self: leaf_script.model})
    mid_script = S([[S.tool_call("ask_leaf", {"q": "deep?"})], [S.text("mid relays: leaf answer")]])

    class Mid(Think):
        def get_model(self) -> str:
            return mid_script.model

        def get_tools(self) -> list:
            return [self.ask_leaf]

        async def ask_leaf(self, q: str) -> str:
            """Ask the leaf."""
            return await self.delegate(self.sub_agent(Leaf, "leaf"), q)

    top_script = S([[S.tool_call("ask_mid", {"q": "deep?"})], [S.text("done")]])

    class Top(Think):
        def get_model(self) -> str:
            return top_script.model

        def get_tools(self) -> list:
            return [self.ask_mid]

        async def ask_mid(self, q: str) -> str:
            """Ask the middle agent."""
            return await self.delegate(self.sub_agent(Mid, "mid"), q)

    top = Top("top")
    assert (await top.send("go")).status == "completed"
    assert tool_part(top, "call_1_0")["output"] == "mid relays: leaf answer"
    assert texts(top.sub_agent(Mid, "mid").sub_agent(Leaf, "leaf"))[-1] == ("assistant", "leaf answer")


# -- other small files -----------------------------------------------------------------------------
async def test_the_start_chunk_carries_the_stored_message_id() -> None:
    """streaming-message-id.test.ts: "start chunk carries persisted id"."""
    chunks: list = []
    agent = scripted_agent(S([[S.text("hi")]]), on_chunk=lambda self, c: chunks.append(c))
    await agent.send("hello")
    assert chunks[0]["type"] == "start" and chunks[0]["messageId"] == agent.messages[-1]["id"]


async def test_include_mcp_tools_false_offers_no_mcp_tool(tmp_path: Path) -> None:
    """mcp-tool-materialization.test.ts: "includeMcpTools=false skips conversion"."""
    from test_mcp import STDIO, agent_with

    script = S([[S.text("no tools")]])
    agent = agent_with(script, tmp_path, include_mcp_tools=False)
    await agent.add_mcp_server("demo", STDIO)
    await agent.send("hi")
    assert script.requests[0]["tools"] in ([], None)
    await agent.shutdown()

