"""Streaming tools (Think's `async function*` tools): each value an async generator tool yields is a
preliminary `tool-output-available`; the last one is the call's output, the one stored and sent
to the model."""

from __future__ import annotations

from agents import scripted_agent
from think_nb import tool
from think_nb.testing import ScriptedModel as S


@tool
async def countdown(n: int):
    """Count down from n, reporting each step."""
    for i in range(n, 0, -1):
        yield {"remaining": i}
    yield {"done": True}


async def test_each_yield_is_a_preliminary_output_and_the_last_is_the_result() -> None:
    chunks: list[dict] = []
    script = S([[S.tool_call("countdown", {"n": 2})], [S.text("Lift-off.")]])
    agent = scripted_agent(script, tools=[countdown], on_chunk=lambda self, chunk: chunks.append(chunk))
    result = await agent.send("count")
    assert result.status == "completed"
    outputs = [c for c in chunks if c["type"] == "tool-output-available"]
    assert outputs == [
        {"type": "tool-output-available", "toolCallId": "call_1_0", "output": {"remaining": 2}, "preliminary": True},
        {"type": "tool-output-available", "toolCallId": "call_1_0", "output": {"remaining": 1}, "preliminary": True},
        {"type": "tool-output-available", "toolCallId": "call_1_0", "output": {"done": True}, "preliminary": True},
        {"type": "tool-output-available", "toolCallId": "call_1_0", "output": {"done": True}}]
    part = agent.messages[-1]["parts"][1]
    assert part == {"type": "tool-countdown", "toolCallId": "call_1_0", "state": "output-available",
                    "input": {"n": 2}, "output": {"done": True}}
    assert script.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1_0",
                                                  "content": '{"done":true}'}


async def test_invoke_returns_the_last_value() -> None:
    assert countdown.streaming
    assert await countdown.invoke({"n": 1}) == {"done": True}
