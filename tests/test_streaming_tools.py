"""Streaming tools (Think's `async function*` tools): each value an async generator tool yields is a
preliminary `tool-output-available`; the last one is the call's output, the one stored and sent
to the model. A function that returns an async iterable instead does not stream: its output is the
last value the iterable yields (Think's `_wrapToolsWithDecision` collapses it)."""

from __future__ import annotations

import pytest

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


async def _echo_parts(message: str):
    yield f"echo-prelim-1: {message}"
    yield f"echo-prelim-2: {message}"
    yield f"echo: {message}"


class EchoParts:
    """An async iterable that is no generator (`__aiter__` / `__anext__`)."""

    def __init__(self, message: str) -> None:
        self.values = iter(["echo-prelim-1", "echo-prelim-2", f"echo: {message}"])

    def __aiter__(self) -> EchoParts:
        return self

    async def __anext__(self) -> str:
        try:
            return next(self.values)
        except StopIteration:
            raise StopAsyncIteration from None


@tool(name="echo")
async def async_returning_an_iterable(message: str):
    """Echo (an async function returning an async iterable: Think's Promise<AsyncIterable>)."""
    return _echo_parts(message)


@tool(name="echo")
def sync_returning_an_iterable(message: str):
    """Echo (a plain function returning an async iterable that is no generator)."""
    return EchoParts(message)


@pytest.mark.parametrize("echo", [async_returning_an_iterable, sync_returning_an_iterable], ids=["async", "sync"])
async def test_a_returned_async_iterable_is_collapsed_to_its_last_value(echo) -> None:
    # Think hooks.test.ts: "collapses Promise<AsyncIterable> returns to the last yielded value",
    # "collapses sync AsyncIterable returns ...", "collapses a Promise<AsyncIterable> execute"
    chunks: list[dict] = []
    after: list = []
    script = S([[S.tool_call("echo", {"message": "hello"})], [S.text("Echoed.")]])
    agent = scripted_agent(script, tools=[echo], on_chunk=lambda self, chunk: chunks.append(chunk),
                           after_tool_call=lambda self, ctx: after.append((ctx.success, ctx.output)))
    assert (await agent.send("echo hello")).status == "completed"
    assert not echo.streaming
    assert not any(c.get("preliminary") for c in chunks)  # no synthetic preliminary output
    assert [c["output"] for c in chunks if c["type"] == "tool-output-available"] == ["echo: hello"]
    assert after == [(True, "echo: hello")]  # not the iterator object
    assert agent.messages[-1]["parts"][1]["output"] == "echo: hello"
    assert script.requests[1]["messages"][-1]["content"] == "echo: hello"
    assert await echo.invoke({"message": "again"}) == "echo: again"
