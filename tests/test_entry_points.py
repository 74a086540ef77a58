"""Programmatic turns: save_messages, continue_last_turn, regenerate, abort, stability, config, repair."""

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from dirty_equals import IsStr

from agents import eventually, scripted_agent, streamed, texts, user
from think_nb import AbortController, Think, tool
from think_nb.testing import ScriptedModel as S


def msg(text: str, id: str | None = None) -> dict:
    return {"id": id or f"u-{text}", "role": "user", "parts": [{"type": "text", "text": text}]}


async def test_save_messages_statuses() -> None:
    script = S([[S.text("ok")], [S.error("bad gateway")]])
    agent = scripted_agent(script)
    completed = await agent.save_messages([msg("one")])
    errored = await agent.save_messages([msg("two")])
    skipped = await agent.save_messages([])
    controller = AbortController()
    controller.abort("before start")
    aborted = await agent.save_messages([msg("three")], signal=controller.signal)
    assert [(r.status, r.error) for r in (completed, errored, skipped, aborted)] == [
        ("completed", None), ("error", IsStr(regex=".*bad gateway.*")), ("skipped", None), ("aborted", None)]
    assert len(script.requests) == 2  # the pre-aborted turn never called the model
    assert texts(agent) == [("user", "one"), ("assistant", "ok"), ("user", "two"), ("assistant", "")]


async def test_signal_aborts_mid_stream_and_keeps_the_partial() -> None:
    script = S([[S.text("abcdefghijklmnopqrstuvwxyz" * 4, chunk_size=1)]], delay=0.01)
    chunks: list[str] = []
    agent = scripted_agent(script, on_chunk=streamed(chunks))
    controller = AbortController()
    task = asyncio.ensure_future(agent.save_messages([msg("go")], signal=controller.signal))
    await eventually(lambda: chunks.count("text-delta") >= 5, what="5 deltas streamed")
    controller.abort("enough")
    result = await task
    assert result.status == "aborted"
    partial = texts(agent)[-1][1]
    assert 0 < len(partial) < 104 and "abcdefghijklmnopqrstuvwxyz".startswith(partial[:26])
    assert agent.messages[-1]["parts"][-1]["state"] == "done"
    controller.abort()  # aborting again, after the turn, is a no-op
    script.steps.append([S.text("later")])
    assert (await agent.save_messages([msg("again")])).status == "completed"


async def test_function_form_sees_predecessors_under_a_queue_of_three() -> None:
    script = S([[S.text("A")], [S.text("B")], [S.text("C")]], delay=0.005)
    agent = scripted_agent(script)
    seen = []

    def next_message(label):
        def build(current):
            seen.append((label, [t for _, t in texts_of(current)]))
            return [msg(label)]
        return build

    results = await asyncio.gather(*(agent.save_messages(next_message(x)) for x in ("1", "2", "3")))
    assert [r.status for r in results] == ["completed"] * 3
    assert seen == [("1", []), ("2", ["1", "A"]), ("3", ["1", "A", "2", "B"])]
    assert texts(agent) == [("user", "1"), ("assistant", "A"), ("user", "2"), ("assistant", "B"),
                            ("user", "3"), ("assistant", "C")]


def texts_of(messages):
    return [(m["role"], "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text")) for m in messages]


async def test_continue_last_turn_persists_a_new_continuation_message() -> None:
    script = S([[S.text("Once upon")], [S.text(" a time.")]])
    flags = []
    agent = scripted_agent(script, before_turn=lambda self, ctx: flags.append((ctx.continuation, ctx.body)))
    skipped = await agent.continue_last_turn()
    assert (skipped.request_id, skipped.status) == ("", "skipped")
    await agent.send("Tell a story")
    result = await agent.continue_last_turn(body={"style": "short"})
    assert (result.status, result.continuation) == ("completed", True)
    assert flags == [(False, None), (True, {"style": "short"})]
    assert agent.messages[-1] == {"id": IsStr(), "role": "assistant", "parts": [
        {"type": "step-start"}, {"type": "text", "text": " a time.", "state": "done"}],
        "metadata": {"continuation": True, "model": script.model, "usage": {"prompt_tokens": None,
                                                                            "completion_tokens": None,
                                                                            "total_tokens": None,
                                                                            "source": None},
                     "requestId": result.request_id,
                     "finishReason": "stop"}}
    assert len(agent.messages) == 3
    # Think's continue checkpoint is sent to the model but never stored
    assert script.requests[1]["messages"][-2:] == [
        {"role": "assistant", "content": "Once upon"},
        {"role": "user", "content": "Continue your previous response from exactly where it left off. "
                                    "Do not repeat any of it."}]




async def test_regenerate_adds_a_sibling_branch_and_keeps_the_old_reply() -> None:
    script = S([[S.text("first reply")], [S.text("second reply")]])
    agent = scripted_agent(script)
    await agent.send("question")
    old = agent.messages[-1]
    result = await agent.regenerate()
    assert result.status == "completed"
    assert texts(agent) == [("user", "question"), ("assistant", "second reply")]
    branches = agent.get_branches(agent.messages[-1]["id"])
    assert [b["parts"][-1]["text"] for b in branches] == ["first reply", "second reply"]
    agent.switch_branch(old["id"])
    assert texts(agent) == [("user", "question"), ("assistant", "first reply")]
    # the model was asked the same question again, without the old reply
    assert script.requests[1]["messages"][1:] == [{"role": "user", "content": "question"}]


async def test_abort_all_requests_and_wait_until_stable() -> None:
    script = S([[S.text("x" * 100, chunk_size=1)], [S.text("y")]], delay=0.01)
    chunks: list[str] = []
    agent = scripted_agent(script, on_chunk=streamed(chunks))
    first, second = agent.submit("a"), agent.submit("b")
    await eventually(lambda: "text-delta" in chunks, what="the first turn streams")
    agent.abort_all_requests()
    assert [r.status for r in await asyncio.gather(first, second)] == ["aborted", "aborted"]
    assert await agent.wait_until_stable(timeout=1) is True
    assert texts(agent)[0] == ("user", "a") and len(agent.messages) == 2  # b was never admitted


async def test_pending_approval_counts_as_pending_interaction() -> None:
    @tool(needs_approval=lambda input: input["path"].startswith("/"))
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted"

    script = S([[S.tool_call("delete", {"path": "/etc"})]])
    agent = scripted_agent(script, tools=[delete])
    await agent.send("clean up")
    part = agent.messages[-1]["parts"][-1]
    assert part == {"type": "tool-delete", "toolCallId": "call_1_0", "state": "approval-requested",
                    "input": {"path": "/etc"}, "approval": {"id": IsStr(regex="approval_.*")}}
    assert agent.has_pending_interaction() is True
    assert await agent.wait_until_stable(timeout=0.2) is False


def test_config_survives_a_new_process(tmp_path: Path) -> None:
    db = tmp_path / "cfg.sqlite"
    code = ("from think_nb import Think\nclass A(Think): pass\n"
            f"a = A('x', db={str(db)!r})\nprint(a.get_config())\na.configure({{'tone': 'dry', 'n': 3}})\n")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert first.stdout.strip() == "None"

    class A(Think):
        pass

    assert A("x", db=db).get_config() == {"tone": "dry", "n": 3}
    A("x", db=db).configure(["overwritten"])
    assert A("x", db=db).get_config() == ["overwritten"]


async def test_a_tool_interrupted_by_a_kernel_kill_is_repaired_before_the_next_turn(tmp_path: Path) -> None:
    db = tmp_path / "killed.sqlite"
    marker = tmp_path / "tool-started"
    code = f"""
import time, pathlib
from think_nb import Think, tool
from think_nb.testing import ScriptedModel as S
@tool
def slow(n: int) -> int:
    '''Slow.'''
    pathlib.Path({str(marker)!r}).write_text("x")
    time.sleep(60)
    return n
s = S([[S.text("Running it."), S.tool_call("slow", {{"n": 1}})]])
class Worker(Think):
    def get_model(self): return s.model
    def get_tools(self): return [slow]
Worker("w", db={str(db)!r}).run("go")
"""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
    await eventually(marker.exists, timeout=60, what="the tool started in the child process")
    proc.kill()
    await proc.wait()

    script = S([[S.text("Recovered.")]])

    class Worker(Think):
        def get_model(self):
            return script.model

    agent = Worker("w", db=db)
    assert agent.messages[-1]["parts"][-1]["state"] == "input-available"  # as the kill left it
    assert (await agent.send("status?")).status == "completed"
    assert agent.messages[:2] == [user("go"), {"id": IsStr(), "role": "assistant", "parts": [
        {"type": "step-start"}, {"type": "text", "text": "Running it.", "state": "done"},
        {"type": "tool-slow", "toolCallId": "call_1_0", "state": "output-error", "input": {"n": 1},
         "errorText": "The tool call was interrupted before a result was recorded."}],
        "metadata": {"interrupted": True}}]  # recovery marks the reply of the cut-off turn
    assert agent.turns()[0]["status"] == "interrupted"
    assert script.requests[0]["messages"][2:4] == [
        {"role": "assistant", "content": "Running it.", "tool_calls": [
            {"id": "call_1_0", "type": "function", "function": {"name": "slow", "arguments": '{"n":1}'}}]},
        {"role": "tool", "tool_call_id": "call_1_0",
         "content": "Error: The tool call was interrupted before a result was recorded."}]
    assert Worker("w", db=db).messages == agent.messages  # the repair was persisted


async def test_turn_log_records_trigger_status_and_duration() -> None:
    script = S([[S.text("a")], [S.error("x")], [S.text("b")]])
    agent = scripted_agent(script)
    await agent.send("1")
    await agent.save_messages([msg("2")])
    await agent.continue_last_turn()
    assert [(t["trigger"], t["status"], t["continuation"]) for t in agent.turns()] == [
        ("send", "completed", False), ("save_messages", "error", False), ("continuation", "completed", True)]
    assert all(t["duration_ms"] >= 0 and t["finished_at"] >= t["started_at"] for t in agent.turns())
    assert agent.turns()[1]["error"] == f"Model {script.model!r} failed: RuntimeError: x"


async def test_a_save_messages_chained_from_on_chat_response_is_logged_as_save_messages() -> None:
    """Issue 27 §9: the turn log said `programmatic` for a `send` and for the `save_messages` an
    `on_chat_response` chains after it (Think's follow-up pattern); each now names its entry point."""
    chained: list[asyncio.Task] = []

    def on_chat_response(self: Any, result: Any) -> None:
        if not chained:
            chained.append(asyncio.ensure_future(self.save_messages([msg("and a follow-up")])))

    agent = scripted_agent(S([[S.text("a")], [S.text("b")]]), on_chat_response=on_chat_response)
    await agent.send("first")
    assert (await chained[0]).status == "completed"
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("send", "completed"),
                                                                    ("save_messages", "completed")]


async def test_text_streamed_before_a_kernel_kill_is_recovered_from_the_stream_buffer(tmp_path: Path) -> None:
    db = tmp_path / "killed-stream.sqlite"
    code = f"""
from think_nb import Think
from think_nb.testing import ScriptedModel as S
s = S([[S.text("abcdefghij" * 40, chunk_size=2)]], delay=0.02)
class Streamer(Think):
    def get_model(self): return s.model
agent = Streamer("s", db={str(db)!r})
panel = agent.panel()  # a view: its stream buffer records the chunks in SQLite
agent.run("go")
"""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code)

    def buffered_text() -> int:
        try:
            with sqlite3.connect(db) as conn:
                rows = conn.execute("SELECT chunks FROM think_stream_chunks").fetchall()
        except sqlite3.Error:  # not created yet
            return 0
        return sum(len(c.get("delta", "")) for (r,) in rows for c in json.loads(r) if c["type"] == "text-delta")

    await eventually(lambda: buffered_text() >= 10, timeout=60, what="10 characters in the stream buffer")
    proc.kill()
    await proc.wait()

    class Streamer(Think):
        pass

    agent = Streamer("s", db=db)
    reply = agent.messages[-1]
    assert reply["role"] == "assistant" and reply["metadata"]["interrupted"] is True
    text = reply["parts"][-1]["text"]
    assert len(text) >= 10 and ("abcdefghij" * 40).startswith(text)
    assert Streamer("s", db=db).messages == agent.messages  # recovered once, stored
