"""Every stored-history situation the engine produces is a request real providers accept.

One table of situations × {OpenAI chat completions, Anthropic messages}: each situation is built
by real turns against a `FakeProvider` (litellm's real `openai/` or `anthropic/` provider over HTTP),
then one more turn sends the whole history. The fake refuses, with the provider's own 400, what the
provider refuses (unanswered tool calls, orphan tool results, broken alternation, empty text
blocks, invalid tool call ids...), so every request of every situation must be accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agents import add, eventually
from providers.agents import hosted_agent, server  # noqa: F401 - the fixture
from providers.anthropic_format import signature_for
from providers.server import Call, FakeProvider, Reply
from think_nb import Think, client_tool, tool
from think_nb.turns.signal import AbortController


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


STARTED: list[asyncio.Event] = []  # the running test's event (each test has its own loop)


@tool
async def slow(n: int) -> int:
    """Slow."""
    STARTED[-1].set()
    await asyncio.Event().wait()
    return n


time_zone = client_tool("time_zone", "The user's time zone.", js="return 'UTC';")
Build = Callable[[FakeProvider, Path], Awaitable[Think]]


async def denied_approval(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(text="I will delete it.", tool_calls=[Call("delete_file", {"path": "a.txt"})]),
                       Reply(text="Understood, I left it.")]
    agent = hosted_agent(fake, [delete_file])
    await agent.send("delete a.txt")
    [pending] = agent.pending_approvals()
    task = agent.deny(pending["tool_call_id"], "keep it")
    assert task is not None and (await task).status == "completed"
    return agent


async def superseded_approval(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(tool_calls=[Call("delete_file", {"path": "a.txt"})]), Reply(text="Sure.")]
    agent = hosted_agent(fake, [delete_file])
    await agent.send("delete a.txt")
    assert agent.pending_approvals()
    assert (await agent.send("never mind, say hi")).status == "completed"
    return agent


async def aborted_tool(fake: FakeProvider, tmp: Path) -> Think:
    STARTED.append(asyncio.Event())
    fake.replies += [Reply(text="Starting.", tool_calls=[Call("slow", {"n": 1})])]
    agent = hosted_agent(fake, [slow])
    controller = AbortController()
    task = asyncio.ensure_future(agent.save_messages([{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
                                                     signal=controller.signal))
    await asyncio.wait_for(STARTED[-1].wait(), 60)
    controller.abort("enough")
    assert (await task).status == "aborted"
    return agent


async def aborted_stream(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(text="A long answer that stops half way.", fault="stall_between")]
    chunks: list[str] = []
    agent = hosted_agent(fake, on_chunk=lambda self, chunk: chunks.append(chunk["type"]))
    controller = AbortController()
    task = asyncio.ensure_future(agent.save_messages([{"role": "user", "parts": [{"type": "text", "text": "go"}]}],
                                                     signal=controller.signal))
    await eventually(lambda: "text-delta" in chunks, what="the answer started streaming")
    controller.abort("enough")
    assert (await task).status == "aborted"
    await eventually(lambda: fake.disconnects == 1, what="the HTTP request was closed")
    return agent


async def error_mid_stream(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(text="Half an answer, then the connection drops.", fault="cut")]
    agent = hosted_agent(fake)
    assert (await agent.send("go")).status == "error"
    return agent


KILLED_CHILD = """
import time, pathlib, sys
from think_nb import Think, tool
from think_nb.testing import ScriptedModel as S
@tool
def slow(n: int) -> int:
    '''Slow.'''
    pathlib.Path(sys.argv[2]).write_text("x")
    time.sleep(60)
    return n
s = S([[S.text("Running it."), S.tool_call("slow", {"n": 1})]])
class Hosted(Think):
    def get_model(self): return s.model
    def get_tools(self): return [slow]
Hosted("h", db=sys.argv[1]).run("go")
"""


@pytest.fixture(scope="module")
def killed_mid_tool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database left by a process killed while a tool ran (built once, copied per case)."""
    folder = tmp_path_factory.mktemp("killed")
    db, marker = folder / "killed.sqlite", folder / "tool-started"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(db), str(marker)])
    while not marker.exists() and proc.poll() is None:  # a synchronous fixture: wait on the file itself
        try:
            proc.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            continue
    proc.kill()
    proc.wait()
    assert marker.exists(), "the child never started its tool"
    return db


async def kernel_death_mid_tool(fake: FakeProvider, tmp: Path, killed: Path) -> Think:
    db = tmp / "copy.sqlite"
    with sqlite3.connect(killed) as source, sqlite3.connect(db) as copy:  # WAL included
        source.backup(copy)
    agent = type("Hosted", (Think,), {"get_model": lambda self: fake.model_config(),
                                      "get_tools": lambda self: [add]})("h", db=db)
    assert agent.messages[-1]["parts"][-1]["state"] == "input-available"  # as the kill left it
    return agent


async def compaction(fake: FakeProvider, tmp: Path) -> Think:
    from think_nb.session import create_compact_function

    def configure(self: Think, session: object) -> object:
        return session.on_compaction(create_compact_function(tail_token_budget=30))  # type: ignore[attr-defined]

    agent = hosted_agent(fake, configure_session=configure)
    for n in range(4):
        fake.replies += [Reply(text=f"Let me add {n}.", tool_calls=[Call("add", {"a": n, "b": 1})]),
                           Reply(text=f"Answer {n}: {n + 1}, details on topic {n}.")]
        assert (await agent.send(f"Question {n}: what is {n} + 1?")).status == "completed"
    fake.replies.append(Reply(text="## Topic\nAdding numbers 0 to 3."))
    assert await agent.compact() is not None
    assert any(m["id"].startswith("compaction_") for m in agent.session.history())
    return agent


async def client_tool_error(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(tool_calls=[Call("time_zone", {}), Call("add", {"a": 1, "b": 2})]),
                       Reply(text="I could not read your time zone.")]
    agent = hosted_agent(fake, [time_zone, add])
    await agent.send("where am I?")
    [call] = [p for p in agent.messages[-1]["parts"] if p["type"] == "tool-time_zone"]
    task = agent.add_tool_output(call["toolCallId"], error_text="Intl blocked")
    assert task is not None and (await task).status == "completed"
    return agent


async def continued(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(text="The first half"), Reply(text=" and the second half.")]
    agent = hosted_agent(fake)
    await agent.send("tell me")
    assert (await agent.continue_last_turn()).status == "completed"
    return agent


async def with_reasoning(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(reasoning="The user wants a sum.", tool_calls=[Call("add", {"a": 2, "b": 40})]),
                       Reply(reasoning="Now answer.", text="42.")]
    agent = hosted_agent(fake)
    assert (await agent.send("2 + 40?")).status == "completed"
    assert [p["type"] for p in agent.messages[-1]["parts"]].count("reasoning") == 2
    return agent


THINKING_ON = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
THINKING_MODEL = "claude-haiku-4-5"


async def signed_thinking(fake: FakeProvider, tmp: Path) -> Think:
    """Anthropic with thinking enabled: every request answering a `tool_use` sends its signed
    thinking block first, within a turn (step 2) and after an approval (a continuation turn
    resumes the stored reply); then the history goes to this format's provider (an OpenAI one
    gets no `thinking_blocks`: it would refuse the unknown field)."""
    async with contextlib.AsyncExitStack() as stack:
        source = fake if fake.format == "anthropic" else await stack.enter_async_context(FakeProvider("anthropic"))
        source.model_name = THINKING_MODEL  # litellm refuses `thinking` for a model it does not know to think
        thoughts = ["Delete it first.", "Now add.", "Answer."]
        source.replies += [Reply(reasoning=thoughts[0], tool_calls=[Call("delete_file", {"path": "a.txt"})]),
                           Reply(reasoning=thoughts[1], tool_calls=[Call("add", {"a": 2, "b": 40})]),
                           Reply(reasoning=thoughts[2], text="Deleted; 42.")]
        agent = hosted_agent(source, [delete_file, add], options=THINKING_ON)
        await agent.send("delete a.txt, then add 2 and 40")
        [pending] = agent.pending_approvals()
        task = agent.approve(pending["tool_call_id"])
        assert task is not None and (await task).status == "completed"
        assert source.rejections == []
        for request, thought in zip(source.requests[1:], thoughts[:2], strict=True):  # those answering a tool_use
            assert request["messages"][-2]["content"][0] == {"type": "thinking", "thinking": thought,
                                                             "signature": signature_for(thought)}
        assert [p["providerMetadata"] for m in agent.messages for p in m["parts"] if p["type"] == "reasoning"] == [
            {"anthropic": {"signature": signature_for(t)}} for t in thoughts]  # stored with the reasoning
    agent.model = fake.model_config(**(THINKING_ON if fake.format == "anthropic" else {}))  # type: ignore[attr-defined]
    return agent


async def model_switch(fake: FakeProvider, tmp: Path) -> Think:
    async with FakeProvider("openai", "kimi-like") as other:  # an OpenAI-compatible fake with its own ids
        other.replies += [Reply(tool_calls=[Call("add", {"a": 1, "b": 2}, id="functions.add:0"),
                                            Call("add", {"a": 3, "b": 4}, id="call_" + "x" * 60)]),
                          Reply(text="3 and 7.")]
        agent = hosted_agent(fake)
        agent.model = other.model_config()  # type: ignore[attr-defined]
        result = await agent.send("1+2 and 3+4?")
        assert (result.status, result.error) == ("completed", None)
        assert other.rejections == []
    agent.model = fake.model_config()  # type: ignore[attr-defined]
    return agent


async def regenerated(fake: FakeProvider, tmp: Path) -> Think:
    fake.replies += [Reply(tool_calls=[Call("add", {"a": 1, "b": 1})]), Reply(text="2."),
                       Reply(tool_calls=[Call("add", {"a": 1, "b": 1})]), Reply(text="Two.")]
    agent = hosted_agent(fake)
    await agent.send("1+1?")
    assert (await agent.regenerate()).status == "completed"
    return agent


SITUATIONS: dict[str, Callable[..., Awaitable[Think]]] = {
    "denied approval": denied_approval,
    "approval superseded by a new message": superseded_approval,
    "aborted tool": aborted_tool,
    "aborted stream": aborted_stream,
    "stream error with a partial": error_mid_stream,
    "kernel death mid-tool, repaired": kernel_death_mid_tool,
    "compaction": compaction,
    "client tool error": client_tool_error,
    "continue_last_turn": continued,
    "reasoning parts": with_reasoning,
    "Anthropic thinking (signed) with tool use and an approval": signed_thinking,
    "model switch mid-conversation": model_switch,
    "regenerate": regenerated,
}


@pytest.mark.parametrize("situation", list(SITUATIONS))
async def test_every_history_situation_is_accepted_by_the_provider(
        situation: str, server: FakeProvider, tmp_path: Path, killed_mid_tool: Path) -> None:  # noqa: F811
    build = SITUATIONS[situation]
    args = (server, tmp_path, killed_mid_tool) if build is kernel_death_mid_tool else (server, tmp_path)
    agent = await build(*args)
    server.replies.append(Reply(text="All good."))
    result = await agent.send("And now?")
    assert server.rejections == []
    assert (result.status, result.error) == ("completed", None)
    assert agent.messages[-1]["parts"][-1] == {"type": "text", "text": "All good.", "state": "done"}
    last = json.dumps(server.requests[-1])
    assert "And now?" in last
