"""Sub-agents, chat() callbacks, cancel_chat, and delegation from a parent's tool."""

import asyncio
import json
import sqlite3

import pytest

from agents import eventually, scripted_agent, texts
from think_nb import Think
from think_nb.testing import ScriptedModel as S


class Callback:
    def __init__(self) -> None:
        self.calls: list = []

    def on_start(self, info):
        self.calls.append(("start", info))

    async def on_event(self, raw):
        self.calls.append(("event", json.loads(raw)["type"]))

    def on_done(self):
        self.calls.append(("done",))

    def on_error(self, message):
        self.calls.append(("error", message))


async def test_chat_streams_every_chunk_to_the_callback_then_done() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    agent = scripted_agent(script)
    callback = Callback()
    result = await agent.chat("1+2?", callback)
    assert callback.calls[0] == ("start", {"request_id": result.request_id})
    assert [c[1] for c in callback.calls[1:-1]] == [
        "start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-delta",
        "tool-input-available", "tool-output-available", "finish-step", "start-step", "text-start", "text-delta",
        "text-end", "finish-step", "finish"]
    assert callback.calls[-1] == ("done",)
    assert agent.turns()[-1]["trigger"] == "chat"


async def test_chat_reports_errors_and_ignores_tools_with_a_warning() -> None:
    agent = scripted_agent(S([[S.error("no capacity")]]))
    callback = Callback()
    with pytest.warns(UserWarning, match="chat\\(tools=...\\) is ignored"):
        await agent.chat("hi", callback, tools=[print])
    assert callback.calls[-1][0] == "error" and "no capacity" in callback.calls[-1][1]


async def test_cancel_chat_mid_stream_and_unknown_ids_are_a_no_op() -> None:
    agent = scripted_agent(S([[S.text("z" * 100, chunk_size=1)]], delay=0.01))
    callback = Callback()
    agent.cancel_chat("req_unknown", "nothing")  # no-op
    task = asyncio.ensure_future(agent.chat("go", callback))
    await eventually(lambda: ("event", "text-delta") in callback.calls, what="the chat streams")
    agent.cancel_chat(callback.calls[0][1]["request_id"], "stop")
    result = await task
    assert result.status == "aborted"
    assert callback.calls[-1] == ("error", "The turn ended: aborted.")
    assert 0 < len(texts(agent)[-1][1]) < 100


class Researcher(Think):
    script: S

    def get_model(self):
        return type(self).script.model

    def get_system_prompt(self):
        return "You research."


def lead_class(parent_script: S, child_name: str, child: type = Researcher) -> type:
    """A parent agent whose `research` tool delegates to the `child` sub-agent `child_name`."""

    class Lead(Think):
        def get_model(self):
            return parent_script.model

        def get_tools(self):
            return [self.research]

        async def research(self, question: str) -> str:
            """Ask the research sub-agent."""
            return await self.delegate(self.sub_agent(child, child_name), question)

    return Lead


async def test_parent_delegates_to_a_child_from_a_tool_and_sees_its_stream() -> None:
    Researcher.script = S([[S.text("Paris is the capital.")]])
    parent_script = S([[S.tool_call("research", {"question": "capital of France?"})], [S.text("It is Paris.")]])

    lead = lead_class(parent_script, "r1")("lead")
    result = await lead.send("What is the capital of France?")
    assert result.status == "completed"
    parts = lead.messages[-1]["parts"]
    assert parts[2]["type"] == "data-subagent"
    assert parts[2]["data"] == {"agent": "Lead:lead/Researcher:r1", "label": "Researcher · r1",
                                "request_id": parts[2]["id"],
                                "status": "completed", "text": "Paris is the capital.", "tools": []}
    assert parts[1] == {"type": "tool-research", "toolCallId": "call_1_0", "state": "output-available",
                        "input": {"question": "capital of France?"}, "output": "Paris is the capital."}
    child = lead.sub_agent(Researcher, "r1")
    assert texts(child) == [("user", "capital of France?"), ("assistant", "Paris is the capital.")]
    assert Researcher.script.requests[0]["messages"][0] == {"role": "system", "content": "You research."}
    with sqlite3.connect(lead.db_path) as db:  # same file, own key
        keys = {row[0] for row in db.execute("SELECT DISTINCT agent_key FROM think_messages")}
    assert keys == {"Lead:lead", "Lead:lead/Researcher:r1"}


async def test_cancelling_the_parent_cancels_the_child() -> None:
    Researcher.script = S([[S.text("y" * 200, chunk_size=1)]], delay=0.01)
    parent_script = S([[S.tool_call("research", {"question": "long"})]])

    chunks: list[str] = []

    class Streaming(Researcher):
        def on_chunk(self, chunk: dict) -> None:
            chunks.append(chunk["type"])

    lead = lead_class(parent_script, "r2", Streaming)("lead2")
    task = lead.submit("go")
    await eventually(lambda: "text-delta" in chunks, what="the child streams")
    lead.abort_all_requests()
    assert (await task).status == "aborted"
    child = lead.sub_agent(Streaming, "r2")
    await child.wait_until_stable(timeout=2)
    assert child.turns()[-1]["status"] == "aborted"
    assert 0 < len(texts(child)[-1][1]) < 200
