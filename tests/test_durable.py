"""Durable turns (issue 12): write-ahead stream, recovery, stall watchdog, submissions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from dirty_equals import IsStr

from agents import eventually, scripted_agent, warm_litellm
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.panel.batcher import merge_chunk
from think_nb.testing import ScriptedModel as S


def stored_chunks(agent: Think, request_id: str) -> list[dict]:
    return [c for segment in runtime_of(agent).store.streams.segments(request_id) for c in segment]


def merged(chunks: list[dict]) -> list[dict]:
    out: list[dict] = []
    for chunk in chunks:
        merge_chunk(out, chunk)
    return out


DELTA_TEXT = {"text-delta": "delta", "reasoning-delta": "delta", "tool-input-delta": "inputTextDelta"}


def expanded(chunks: list[dict]) -> list[object]:
    """Chunks with every delta spread into one entry per character (segments merge deltas)."""
    out: list[object] = []
    for chunk in chunks:
        key = DELTA_TEXT.get(chunk.get("type", ""))
        if key is None:
            out.append(chunk)
        else:
            rest = tuple(sorted((k, v) for k, v in chunk.items() if k != key))
            out.extend((rest, ch) for ch in chunk.get(key, ""))
    return out


class WriteAheadListener:
    """Checks, at every chunk it hears, that the chunk is already in SQLite."""

    def __init__(self, agent: Think) -> None:
        self.agent = agent
        self.heard: list[dict] = []
        self.unrecorded: list[dict] = []

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        self.heard.append(chunk)
        heard, stored = expanded(self.heard), expanded(stored_chunks(self.agent, request_id))
        if stored[:len(heard)] != heard:
            self.unrecorded.append(chunk)


async def test_every_broadcast_chunk_is_in_sqlite_first() -> None:
    script = S([[S.text("hello world " * 30, chunk_size=2), S.tool_call("add", {"a": 1, "b": 2})],
                [S.text("three", chunk_size=1)]], delay=0.001)
    agent = scripted_agent(script)
    listener = WriteAheadListener(agent)
    runtime_of(agent).subscribe(listener)
    result = await agent.send("go")
    assert result.status == "completed"
    assert listener.unrecorded == []
    assert len(listener.heard) > 100  # every chunk, one by one
    # and everything recorded was broadcast, in order
    assert expanded(listener.heard) == expanded(stored_chunks(agent, result.request_id))


async def test_a_quiet_stream_is_flushed_within_the_flush_interval() -> None:
    # one delta, then the model goes quiet: the delta reaches listeners without waiting for more
    gate = asyncio.Event()
    heard: list[dict] = []

    class Listener:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            heard.append(chunk)

    async def before_tool_call(self: Think, ctx: object) -> None:
        await gate.wait()

    script = S([[S.text("ab", chunk_size=1), S.tool_call("add", {"a": 1, "b": 2})], [S.text("ok")]])
    agent = scripted_agent(script, before_tool_call=before_tool_call)
    runtime_of(agent).subscribe(Listener())
    task = agent.submit("go")
    await eventually(lambda: any(c.get("type") == "tool-input-available" for c in heard), timeout=30,
                     what="the tool call reaches the listener while the turn waits")
    gate.set()
    assert (await task).status == "completed"


async def test_a_failed_write_broadcasts_nothing_of_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    heard: list[dict] = []

    class Listener:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            heard.append(chunk)

    agent = scripted_agent(S([[S.text("abc")]]))
    runtime_of(agent).subscribe(Listener())
    real = runtime_of(agent).store.streams.append
    calls = {"n": 0}

    def failing(request_id: str, segment: list[dict]) -> None:
        calls["n"] += 1
        if calls["n"] >= 2:
            raise OSError("disk full")
        real(request_id, segment)

    monkeypatch.setattr(runtime_of(agent).store.streams, "append", failing)
    result = await agent.send("go")
    assert result.status == "error"
    assert [c["type"] for c in heard] == ["start"]  # only what was written before the failure
    assert json.dumps(heard)  # plain chunks


def test_recorder_replay_is_what_was_broadcast(tmp_path: Path) -> None:
    from think_nb.store.agent import AgentStore
    from think_nb.store.db import open_database
    from think_nb.turns.recorder import StreamRecorder

    store = AgentStore(open_database(tmp_path / "r.sqlite"), "K:k", "K", "k")
    heard: list[dict] = []
    recorder = StreamRecorder(store.streams, lambda rid, chunks, joined, cont: heard.extend(chunks))
    recorder.record("r1", {"type": "start"}, False)
    recorder.record("r1", {"type": "text-start", "id": "t"}, False)
    recorder.record("r1", {"type": "text-delta", "id": "t", "delta": "a"}, False)
    replay = recorder.replay("r1")
    assert replay is not None
    assert replay[0] == merged(heard)  # the buffered tail is not replayed: it follows live
    recorder.end("r1", "completed")
    assert merged(heard) == recorder.replay("r1")[0]  # type: ignore[index]
    assert [c["type"] for c in heard] == ["start", "text-start", "text-delta"]


# -- stall watchdog -------------------------------------------------------------------------------
async def test_a_stalled_model_stream_is_aborted_and_its_partial_kept() -> None:
    await warm_litellm()
    script = S([[S.text("partial ", chunk_size=4), S.stall(), S.text("never")]])
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2)
    result = await agent.send("go")
    assert result.status == "aborted" and result.interrupted
    assert "stalled" in (result.error or "")
    reply = agent.messages[-1]
    assert reply["role"] == "assistant" and reply["metadata"]["interrupted"] is True
    assert "".join(p.get("text", "") for p in reply["parts"]) == "partial "
    assert agent.turns()[-1]["status"] == "aborted"


async def test_tool_time_counts_and_turn_config_overrides_the_class_timeout() -> None:
    await warm_litellm()
    gate = asyncio.Event()

    async def slow(x: int) -> int:
        """Wait for a gate that never opens."""
        await gate.wait()
        return x

    from think_nb import tool
    script = S([[S.tool_call("slow", {"x": 1})], [S.text("done")]])
    agent = scripted_agent(script, tools=[tool(slow)], chat_stream_stall_timeout=None,
                           before_turn=lambda self, ctx: {"chat_stream_stall_timeout": 0.2})
    result = await agent.send("go")
    assert result.interrupted and result.status == "aborted"
    parts = agent.messages[-1]["parts"]
    assert any(p.get("toolCallId") and p.get("state") in ("input-available", "output-error") for p in parts)


async def test_no_stall_when_chunks_keep_coming() -> None:
    await warm_litellm()
    script = S([[S.text("x" * 40, chunk_size=1)]], delay=0.01)  # 0.4 s in all, never 0.2 s quiet
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2)
    result = await agent.send("go")
    assert result.status == "completed" and not result.interrupted


class Callback:
    """A `chat()` callback logging what it is called with; `on_interrupted` takes no argument
    (Think's `StreamCallback.onInterrupted()`)."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def on_start(self, info: dict) -> None:
        self.events.append("start")

    def on_event(self, raw: str) -> None:
        pass

    def on_done(self) -> None:
        self.events.append("done")

    def on_error(self, error: str) -> None:
        self.events.append("error")

    def on_interrupted(self) -> None:
        self.events.append("interrupted")


async def test_chat_caller_gets_on_interrupted_when_a_continuation_owns_the_answer() -> None:
    """Think: `routes a stream-stall watchdog abort into bounded recovery` — the interrupted
    attempt signals `onInterrupted()` exactly once (not done/error), and the scheduled
    continuation streams the turn to completion."""
    await warm_litellm()
    from think_nb import RecoveryDecision
    script = S([[S.text("a"), S.stall()], [S.text("and the rest.")]])
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2,
                           on_chat_recovery=lambda self, ctx: RecoveryDecision(continue_=True))
    callback = Callback()
    result = await agent.chat("go", callback)
    assert result.interrupted
    assert callback.events == ["start", "interrupted"]
    await settle_recovery(agent)
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("chat", "aborted"),
                                                                    ("recovery-continue", "completed")]
    assert callback.events == ["start", "interrupted"]  # the continuation's outcome does not arrive here


async def test_a_stall_nothing_continues_ends_the_chat_with_on_error() -> None:
    """`on_interrupted` means "a continuation owns the answer": with none scheduled (the default
    `on_chat_recovery` continues nothing; recovery off; attempts exhausted) the caller gets
    `on_error`, so it does not wait for an answer that never comes. A one-argument
    `on_interrupted(message)` is still accepted."""
    await warm_litellm()
    from think_nb import RecoveryDecision

    class OneArgument(Callback):
        def on_interrupted(self, error: str) -> None:
            self.events.append(f"interrupted: {error}")

    for name, attrs in (("default", {}), ("off", {"chat_recovery": False}),
                        ("exhausted", {"chat_recovery_max_attempts": 0,
                                       "on_chat_recovery": lambda self, ctx: RecoveryDecision(continue_=True)})):
        agent = scripted_agent(S([[S.text("a"), S.stall()]]), name=name, chat_stream_stall_timeout=0.2, **attrs)
        callback = OneArgument()
        result = await agent.chat("go", callback)
        await settle_recovery(agent)
        assert result.interrupted, name
        assert callback.events == ["start", "error"], name
        assert [t["trigger"] for t in agent.turns()] == ["chat"], name
    agent = scripted_agent(S([[S.text("a"), S.stall()], [S.text("b")]]), name="one-arg", chat_stream_stall_timeout=0.2,
                           on_chat_recovery=lambda self, ctx: RecoveryDecision(continue_=True))
    callback = OneArgument()
    await agent.chat("go", callback)
    assert callback.events == ["start", IsStr(regex="interrupted: .+")]
    await settle_recovery(agent)

    class NoInterrupted:  # a callback without on_interrupted still hears how its call ended
        def __init__(self) -> None:
            self.events: list[str] = []

        def on_error(self, error: str) -> None:
            self.events.append("error")

    agent = scripted_agent(S([[S.text("a"), S.stall()], [S.text("b")]]), name="no-method",
                           chat_stream_stall_timeout=0.2,
                           on_chat_recovery=lambda self, ctx: RecoveryDecision(continue_=True))
    plain = NoInterrupted()
    await agent.chat("go", plain)
    assert plain.events == ["error"]
    await settle_recovery(agent)


async def test_on_interrupted_is_not_called_on_a_completed_or_failed_turn() -> None:
    """Think #1644: `does not call onInterrupted on a normally-completing or terminally-erroring turn`."""
    for name, step, outcome in (("ok", S.text("hello"), "done"), ("err", S.error("boom under no-interrupt"), "error")):
        callback = Callback()
        await scripted_agent(S([[step]]), name=name).chat("hello", callback)
        assert callback.events == ["start", outcome], name


async def settle_recovery(agent: Think) -> None:
    """Wait for the recovery task and any it chained (a stalled recovery turn starts another)."""
    while agent.recovery_task is not None and not agent.recovery_task.done():
        await agent.recovery_task


async def test_a_stall_asks_on_chat_recovery_and_by_default_continues_nothing() -> None:
    await warm_litellm()
    seen: list = []
    agent = scripted_agent(S([[S.text("partial "), S.stall()]]), chat_stream_stall_timeout=0.2,
                           on_chat_recovery=lambda self, ctx: seen.append(ctx))
    result = await agent.send("go")
    await settle_recovery(agent)
    (ctx,) = seen
    assert (ctx.reason, ctx.request_id, ctx.trigger, ctx.attempt) == ("stalled", result.request_id, "send", 1)
    assert ctx.partial["metadata"]["interrupted"] is True and ctx.user_message["parts"][0]["text"] == "go"
    assert ctx.partial_text == "partial "  # Think's ChatRecoveryContext.partialText
    assert [p["type"] for p in ctx.partial_parts] == [p["type"] for p in ctx.partial["parts"]]
    assert [t["status"] for t in agent.turns()] == ["aborted"]
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]


async def test_a_stall_routed_into_recovery_continues_the_turn() -> None:
    await warm_litellm()
    from think_nb import RecoveryDecision
    script = S([[S.text("partial "), S.stall()], [S.text("and the rest.")]])
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2,
                           on_chat_recovery=lambda self, ctx: RecoveryDecision(continue_=True))
    await agent.send("go")
    await settle_recovery(agent)
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("send", "aborted"),
                                                                    ("recovery-continue", "completed")]
    texts = ["".join(p.get("text", "") for p in m["parts"]) for m in agent.messages]
    assert texts == ["go", "partial ", "and the rest."]
    assert agent.messages[1]["metadata"]["interrupted"] is True
    assert agent.messages[2]["metadata"]["continuation"] is True


async def test_stall_recovery_is_bounded_by_the_attempt_budget() -> None:
    await warm_litellm()
    from think_nb import RecoveryDecision
    seen: list = []

    def decide(self: Think, ctx: object) -> RecoveryDecision:
        seen.append(ctx)
        return RecoveryDecision(continue_=True)

    script = S([[S.text("try 0 "), S.stall()]] + [[S.stall()] for _ in range(4)])  # retries make no progress
    agent = scripted_agent(script, chat_stream_stall_timeout=0.2, chat_recovery_max_attempts=2,
                           on_chat_recovery=decide)
    await agent.send("go")
    await settle_recovery(agent)
    assert [(c.attempt, c.exhausted) for c in seen] == [(1, False), (2, False), (3, True)]
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [
        ("send", "aborted"), ("recovery-continue", "aborted"), ("recovery-continue", "aborted")]


# -- recovery when the agent is created again ------------------------------------------------------
def left_by_dead_process(agent: Think, monkeypatch: pytest.MonkeyPatch, request_id: str, chunks: list[dict],
                         trigger: str = "panel", user_text: str = "hi") -> None:
    """Write what a process that died mid-turn leaves: the user message, a `running` turn-log row and
    (if `chunks`) a `streaming` stream, all owned by another process."""
    from think_nb.messages import user_message
    from think_nb.store import owners

    runtime_of(agent).conversation.append(user_message(user_text))
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", "dead-process")
        runtime_of(agent).store.turn_log.start(request_id, trigger, False)
        if chunks:
            runtime_of(agent).store.streams.set_status(request_id, False, "streaming")
            runtime_of(agent).store.streams.append(request_id, chunks)


def partial_chunks(message_id: str = "m-partial", text: str = "half an ans", tool: bool = False) -> list[dict]:
    chunks: list[dict] = [{"type": "start", "messageId": message_id}, {"type": "start-step"}]
    if tool:
        chunks += [{"type": "tool-input-start", "toolCallId": "c1", "toolName": "add"},
                   {"type": "tool-input-available", "toolCallId": "c1", "toolName": "add", "input": {"a": 1, "b": 2}},
                   {"type": "tool-output-available", "toolCallId": "c1", "output": 3}]
    chunks += [{"type": "text-start", "id": "t1"}, {"type": "text-delta", "id": "t1", "delta": text}]
    return chunks


def agent_class(script: S, tools: list | None = None, **attrs: object) -> type[Think]:
    from agents import add
    return type("Recovering", (Think,), {"get_model": lambda self: script.model,
                                         "get_tools": lambda self: tools if tools is not None else [add], **attrs})


async def test_default_recovery_persists_the_partial_and_settles_the_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = agent_class(S([]))
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert agent.recovery_task is None  # default: persist, do not continue
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    reply = agent.messages[-1]
    assert reply["id"] == "m-partial" and reply["metadata"]["interrupted"] is True
    assert reply["parts"][-1]["text"] == "half an ans"
    assert runtime_of(agent).store.streams.meta("req-dead") == (False, "interrupted")
    assert [(t["request_id"], t["status"]) for t in agent.turns()] == [("req-dead", "interrupted")]
    assert cls("r", db=tmp_path / "a.sqlite").messages == agent.messages  # handled once


async def test_on_chat_recovery_sees_the_turn_and_may_continue_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []

    def on_chat_recovery(self: Think, ctx: object) -> object:
        seen.append(ctx)
        from think_nb import RecoveryDecision
        return RecoveryDecision(persist=True, continue_=True)

    script = S([[S.text("wer.")]])
    cls = agent_class(script, on_chat_recovery=on_chat_recovery)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks(), trigger="chat")
    agent = cls("r", db=tmp_path / "a.sqlite")
    (ctx,) = seen
    assert (ctx.request_id, ctx.trigger, ctx.attempt, ctx.exhausted) == ("req-dead", "chat", 1, False)
    assert ctx.partial["id"] == "m-partial" and ctx.user_message["parts"][0]["text"] == "hi"
    assert ctx.partial_text == "half an ans"  # Think: `fires onChatRecovery for an interrupted fiber` (partialText)
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed" and result.continuation
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "assistant"]
    assert agent.messages[-1]["metadata"]["continuation"] is True
    assert [t["trigger"] for t in agent.turns()] == ["chat", "recovery-continue"]
    # the model saw the partial reply, then the continue checkpoint
    sent = script.requests[0]["messages"]
    assert sent[-2] == {"role": "assistant", "content": "half an ans"} or "half an ans" in json.dumps(sent[-2])


async def test_a_turn_cut_before_it_streamed_is_retried_without_a_second_user_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = S([[S.text("hello")]])
    cls = agent_class(script, on_chat_recovery=lambda self, ctx: {"continue": True})
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", [])
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed"
    assert [(m["role"], m["parts"][-1].get("text")) for m in agent.messages] == [("user", "hi"), ("assistant", "hello")]
    assert [(t["trigger"], t["status"]) for t in agent.turns()] == [("panel", "interrupted"),
                                                                    ("recovery-retry", "completed")]
    assert sum(m["role"] == "user" for m in script.requests[0]["messages"]) == 1


async def test_persist_false_keeps_settled_tool_results_and_never_reruns_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb import tool
    runs: list = []

    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        runs.append((a, b))
        return a + b

    script = S([[S.text("It is 3.")]])
    cls = agent_class(script, tools=[add], on_chat_recovery=lambda self, ctx: {"persist": False, "continue": True})
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks(tool=True))
    agent = cls("r", db=tmp_path / "a.sqlite")
    kept = agent.messages[-1]
    assert [p["type"] for p in kept["parts"]] == ["step-start", "tool-add"]
    assert kept["parts"][1]["state"] == "output-available" and kept["parts"][1]["output"] == 3
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed" and runs == []
    sent = script.requests[0]["messages"]
    assert any(m["role"] == "tool" and m.get("tool_call_id") == "c1" for m in sent)
    assert "half an ans" not in json.dumps(sent)


async def test_recovery_attempts_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb.store import owners
    from think_nb.turns.recovery import _count, collect

    seen: list = []

    def on_chat_recovery(self: Think, ctx: object) -> object:
        seen.append(ctx)
        return {"continue": True}

    cls = agent_class(S([]), on_chat_recovery=on_chat_recovery, chat_recovery_max_attempts=1)
    first = cls("r", db=tmp_path / "a.sqlite")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    collect(runtime_of(first).store)  # an earlier reopen handled req-dead ...
    _count(runtime_of(first).store, "req-dead", "req-again")  # ... and started req-again to continue it ...
    with monkeypatch.context() as m:  # ... which was cut off too
        m.setattr(owners, "PROCESS", "dead-process")
        runtime_of(first).store.turn_log.start("req-again", "recovery-continue", True)
        runtime_of(first).store.streams.set_status("req-again", True, "streaming")
        runtime_of(first).store.streams.append("req-again", [{"type": "start", "messageId": "m-again"},
                                                             {"type": "start-step"}])  # no progress
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert [(c.request_id, c.attempt, c.exhausted, c.exhausted_reason) for c in seen] == [
        ("req-again", 2, True, "max_attempts_exceeded")]
    assert agent.recovery_task is None  # continue_ is ignored once the chain is exhausted
    assert agent.messages[-1]["id"] == "m-again" and agent.messages[-1]["metadata"]["interrupted"] is True
    assert {t["request_id"]: t["status"] for t in agent.turns()} == {"req-dead": "interrupted",
                                                                     "req-again": "interrupted"}


async def test_an_async_hook_runs_in_the_recovery_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def on_chat_recovery(self: Think, ctx: object) -> object:
        await asyncio.sleep(0)
        return {"persist": False}

    cls = agent_class(S([]), on_chat_recovery=on_chat_recovery)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert agent.recovery_task is not None
    assert await agent.recovery_task == []
    assert [m["role"] for m in agent.messages] == ["user"]  # nothing settled to keep: the partial is dropped


async def test_an_async_hook_never_answered_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The partial is stored (the default decision) before an async hook runs: a process that ends
    before the hook answers keeps it (stranger check: it was lost, and the rows already settled)."""
    never = asyncio.Event()

    async def on_chat_recovery(self: Think, ctx: object) -> object:
        await never.wait()
        return {"persist": False}

    cls = agent_class(S([]), on_chat_recovery=on_chat_recovery)
    left_by_dead_process(cls("r", db=tmp_path / "a.sqlite"), monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]  # before the hook answered
    assert agent.messages[-1]["metadata"]["interrupted"] is True
    assert agent.recovery_task is not None
    agent.recovery_task.cancel()  # the process "ends" here
    again = agent_class(S([]))("r", db=tmp_path / "a.sqlite")
    assert [m["parts"][-1].get("text") for m in again.messages] == ["hi", "half an ans"]


def test_a_script_exits_while_an_async_recovery_hook_is_pending(tmp_path: Path) -> None:
    """A script that opens the agent and ends at once exits (it hung at interpreter shutdown while
    litellm's import thread held the import lock)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from think_nb import Think, runtime_of
        from think_nb.store import owners
        from think_nb.messages import user_message
        from test_durable import partial_chunks

        class R(Think):
            async def on_chat_recovery(self, ctx):
                return None

        db = {str(tmp_path / "exit.sqlite")!r}
        a = R("r", db=db)
        runtime_of(a).conversation.append(user_message("hi"))
        owners.PROCESS = "dead-process"
        runtime_of(a).store.turn_log.start("req-dead", "panel", False)
        runtime_of(a).store.streams.set_status("req-dead", False, "streaming")
        runtime_of(a).store.streams.append("req-dead", partial_chunks())
        owners.PROCESS = "alive"
        b = R("r", db=db)
        print([m["role"] for m in b.messages], flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['user', 'assistant']"


# -- submissions ------------------------------------------------------------------------------------
async def test_submissions_are_accepted_durably_idempotent_and_fifo(tmp_path: Path) -> None:
    from think_nb.errors import UserError
    from think_nb.messages import user_message

    script = S([[S.text("one")], [S.text("two")]], delay=0.001)
    cls = agent_class(script)
    agent = cls("s", db=tmp_path / "s.sqlite")
    first = await agent.submit_messages([user_message("1")], submission_id="a")
    assert first["accepted"] is True and first["status"] == "pending" and first["submission_id"] == "a"
    assert agent.messages == []  # accepted, not applied before its turn starts
    again = await agent.submit_messages([user_message("1")], submission_id="a")
    assert again["accepted"] is False
    with pytest.raises(UserError, match="other messages"):
        await agent.submit_messages([user_message("other")], submission_id="a")
    second = await agent.submit_messages([user_message("2")], submission_id="b", idempotency_key="k")
    assert (await agent.submit_messages([user_message("2")], idempotency_key="k"))["accepted"] is False
    with pytest.raises(UserError, match="belongs to submission"):
        await agent.submit_messages([user_message("2")], submission_id="c", idempotency_key="k")
    assert second["accepted"]
    await eventually(lambda: [s["status"] for s in agent.list_submissions()] == ["completed", "completed"],
                     timeout=60, what="both submissions completed")
    assert [(m["role"], m["parts"][-1]["text"]) for m in agent.messages] == [
        ("user", "1"), ("assistant", "one"), ("user", "2"), ("assistant", "two")]
    inspected = agent.inspect_submission("a")
    assert inspected is not None and inspected["request_id"] and inspected["completed_at"] >= inspected["started_at"]
    assert [t["trigger"] for t in agent.turns()] == ["submission", "submission"]
    with pytest.raises(UserError):
        await agent.submit_messages([])


async def test_a_submission_of_stored_messages_is_skipped_and_says_why(tmp_path: Path) -> None:
    from think_nb.turns.result import SKIPPED

    agent = agent_class(S([[S.text("one")]]))("s", db=tmp_path / "s.sqlite")
    await agent.send("1")
    stored = agent.messages[0]
    await agent.submit_messages([stored], submission_id="again")  # a retry of a message already applied
    await eventually(lambda: agent.inspect_submission("again")["status"] == "skipped", timeout=60)
    assert agent.inspect_submission("again")["error"] == SKIPPED["no-new-messages"]
    assert len(agent.messages) == 2


async def test_cancel_pending_never_applies_and_cancel_running_is_not_overwritten(tmp_path: Path) -> None:
    from think_nb.messages import user_message

    script = S([[S.text("slow " * 50, chunk_size=1)], [S.text("never")]], delay=0.01)
    agent = agent_class(script)("s", db=tmp_path / "s.sqlite")
    await agent.submit_messages([user_message("run")], submission_id="run")
    await agent.submit_messages([user_message("queued")], submission_id="queued")
    await eventually(lambda: agent.inspect_submission("run")["status"] == "running"
                     and runtime_of(agent).streaming_turns(),
                     timeout=60, what="the first submission streams")
    assert agent.cancel_submission("queued")["status"] == "aborted"
    assert agent.cancel_submission("run")["status"] == "aborted"
    assert agent.submissions_task is not None
    await agent.submissions_task
    assert agent.inspect_submission("run")["status"] == "aborted"  # the turn's late outcome did not overwrite it
    assert "queued" not in json.dumps(agent.messages)
    assert agent.delete_submissions(status="aborted") == 2 and agent.list_submissions() == []
    assert agent.cancel_submission("unknown") is None


async def test_active_rows_are_never_deleted_and_clear_skips_pending(tmp_path: Path) -> None:
    from think_nb.messages import user_message

    agent = agent_class(S([]))("s", db=tmp_path / "s.sqlite")
    runtime_of(agent).store.submissions.accept("p", None, [user_message("x")], "[]", None)  # pending, no drain
    assert agent.delete_submissions() == 0 and agent.delete_submission("p") is False
    agent.clear_messages()
    assert agent.inspect_submission("p")["status"] == "skipped"
    assert agent.delete_submission("p") is True


async def test_submissions_of_a_dead_process_are_requeued_or_settled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb.messages import user_message
    from think_nb.store import owners

    script = S([[S.text("answered")]])
    cls = agent_class(script)
    first = cls("s", db=tmp_path / "s.sqlite")
    rows = runtime_of(first).store.submissions
    applied, unapplied = user_message("applied"), user_message("not yet")
    rows.accept("applied", None, [applied], "a", None)
    rows.accept("unapplied", None, [unapplied], "b", None)
    with monkeypatch.context() as m:
        m.setattr(owners, "PROCESS", "dead-process")
        rows.start("applied", "req-1")
        rows.start("unapplied", "req-2")
    runtime_of(first).conversation.append(applied)  # the dead process had applied the first one's messages
    agent = cls("s", db=tmp_path / "s.sqlite")
    assert agent.inspect_submission("applied")["status"] == "error"
    assert agent.submissions_task is not None
    await agent.submissions_task
    assert agent.inspect_submission("unapplied")["status"] == "completed"
    assert [m["parts"][-1]["text"] for m in agent.messages] == ["applied", "not yet", "answered"]


async def test_user_message_and_turn_row_are_stored_together_or_not_at_all(tmp_path: Path) -> None:
    """The window between appending the user message and the turn-log row is closed: both are one
    transaction. A real SQLite failure of the turn row (a trigger) leaves neither, and says so."""
    import sqlite3

    script = S([[S.text("hello")]])
    cls = agent_class(script)
    agent = cls("w", db=tmp_path / "w.sqlite")
    with sqlite3.connect(tmp_path / "w.sqlite") as conn:
        conn.execute("CREATE TRIGGER refuse BEFORE INSERT ON think_turns BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    result = await agent.send("first")
    assert result.status == "error" and "disk full" in (result.error or "")
    assert agent.messages == [] and runtime_of(agent).store.messages.count() == 0 and agent.turns() == []
    with sqlite3.connect(tmp_path / "w.sqlite") as conn:
        conn.execute("DROP TRIGGER refuse")
    result = await agent.send("second")
    assert result.status == "completed"
    assert [m["parts"][-1]["text"] for m in cls("w", db=tmp_path / "w.sqlite").messages] == ["second", "hello"]
