"""FunctionModel (think_nb.testing): a model whose every call is answered by a function of the
messages and tools it is sent, run through real agent turns (real tools, real SQLite)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from dirty_equals import IsStr

from agents import add, mul, user
from think_nb import ModelConfig, Think
from think_nb.errors import ModelError, UserError
from think_nb.testing import FunctionModel, ModelCallInfo
from think_nb.testing import ScriptedModel as S

ARITHMETIC = re.compile(r"(-?\d+(?:\.\d+)?)\s*\+\s*(-?\d+(?:\.\d+)?)")


def calculator(messages: list[dict], info: ModelCallInfo) -> Any:
    """Adds with the `add` tool when asked for a sum, then answers with the result it was sent."""
    last = messages[-1]
    if last["role"] == "tool":  # step 2: the tool's result, as JSON text
        return f"The answer is {json.loads(last['content']):g}."
    match = ARITHMETIC.search(last["content"])
    if match:
        return [S.text("Let me add. "), S.tool_call("add", {"a": int(match[1]), "b": int(match[2])})]
    return "Ask me a sum."


def agent_on(fm: FunctionModel | ModelConfig, tools: list | None = None, name: str = "fn", db: Any = None,
             **hooks: Any) -> Think:
    """An agent on `fm` with `tools` (default `[add]`) and `hooks` as class attributes."""
    model = fm if isinstance(fm, ModelConfig) else fm.model

    class Calc(Think):
        include_workspace_tools = False  # the model sees exactly the tools passed

        def get_model(self) -> Any:
            return model

        def get_tools(self) -> list:
            return [add] if tools is None else tools

    for hook, value in hooks.items():
        setattr(Calc, hook, value)
    return Calc(name, db=db) if db is not None else Calc(name)


def meta(model: str) -> dict:
    """A finished reply's metadata; no usage item was returned, so its token counts are unknown."""
    unknown = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None, "source": None}
    return {"model": model, "usage": unknown, "requestId": IsStr(), "finishReason": "stop"}


async def test_a_function_calls_a_tool_then_answers_with_the_result_it_sees() -> None:
    fm = FunctionModel(calculator)
    agent = agent_on(fm)
    result = await agent.send("What is 2 + 40?")
    assert (result.status, result.error) == ("completed", None)
    assert agent.messages == [user("What is 2 + 40?"), {
        "id": IsStr(regex=r"msg_.*"), "role": "assistant", "metadata": meta(fm.model),
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Let me add. ", "state": "done"},
            {"type": "tool-add", "toolCallId": "call_1_0", "state": "output-available", "input": {"a": 2, "b": 40},
             "output": 42.0},
            {"type": "step-start"},
            {"type": "text", "text": "The answer is 42.", "state": "done"},
        ]}]
    assert fm.calls == 2
    assert fm.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1_0", "content": "42.0"}
    assert [t["function"]["name"] for t in fm.requests[0]["tools"]] == ["add"]
    # the same function reacts to a message that asks no sum: one step, no tool
    assert (await agent.send("Hello")).status == "completed"
    assert agent.messages[-1]["parts"] == [{"type": "step-start"},
                                           {"type": "text", "text": "Ask me a sum.", "state": "done"}]
    assert fm.calls == 3


async def test_a_function_picks_a_tool_from_the_tools_it_is_offered() -> None:
    seen: list[ModelCallInfo] = []

    def chooser(messages: list[dict], info: ModelCallInfo) -> Any:
        seen.append(info)
        if messages[-1]["role"] == "tool":
            return f"Done: {messages[-1]['content']}."
        wanted = messages[-1]["content"].split()[0]  # "mul 6 7": the tool named first, if offered
        if wanted not in info.tool_names:
            return f"I have no {wanted} tool; I have {', '.join(info.tool_names) or 'none'}."
        a, b = (int(x) for x in messages[-1]["content"].split()[1:])
        return S.tool_call(wanted, {"a": a, "b": b})

    fm = FunctionModel(chooser)
    agent = agent_on(fm, tools=[add, mul])
    assert (await agent.send("mul 6 7")).status == "completed"
    assert [p["type"] for p in agent.messages[-1]["parts"]] == ["step-start", "tool-mul", "step-start", "text"]
    assert agent.messages[-1]["parts"][1]["output"] == 42.0
    assert agent.messages[-1]["parts"][-1]["text"] == "Done: 42.0."
    assert seen[0].tool_names == ["add", "mul"]
    assert seen[0].tools == fm.requests[0]["tools"]
    assert seen[0].tools[1] == {"type": "function", "function": {
        "name": "mul", "description": "Multiply two numbers.", "parameters": IsPartialSchema("a", "b")}}
    assert (seen[0].model, seen[0].call, seen[1].call) == (fm.model, 1, 2)
    assert "tools" not in seen[0].options

    bare = agent_on(FunctionModel(chooser), tools=[], name="bare")
    assert (await bare.send("sub 6 7")).status == "completed"
    assert bare.messages[-1]["parts"][-1]["text"] == "I have no sub tool; I have none."
    assert seen[-1].tools == []
    with pytest.raises(AttributeError):
        seen[-1].call = 5  # type: ignore[misc]  # frozen


class IsPartialSchema:
    """Equals an object JSON schema with (at least) these properties."""

    def __init__(self, *names: str) -> None:
        self.names = names

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict) and other.get("type") == "object" and all(
            n in other.get("properties", {}) for n in self.names)


async def test_an_async_function_is_awaited_and_may_report_usage() -> None:
    async def slow(messages: list[dict], info: ModelCallInfo) -> Any:
        await asyncio.sleep(0)
        return ["Thinking it over... ", "done.", S.usage(12, 5)]

    fm = FunctionModel(slow, stream_chunk_size=4)
    chunks: list[dict] = []
    agent = agent_on(fm, on_chunk=lambda self, chunk: chunks.append(chunk))
    result = await agent.send("hi")
    assert (result.status, result.error) == ("completed", None)
    assert agent.messages[-1]["parts"] == [{"type": "step-start"},
                                           {"type": "text", "text": "Thinking it over... done.", "state": "done"}]
    assert agent.messages[-1]["metadata"]["usage"] == {"prompt_tokens": 12, "completion_tokens": 5,
                                                       "total_tokens": 17, "source": "reported"}
    deltas = [c["delta"] for c in chunks if c["type"] == "text-delta"]
    assert deltas == ["Thin", "king", " it ", "over", "... ", "done", "."]  # strings stream 4 characters at a time


async def test_a_function_that_raises_ends_the_turn_with_an_error_naming_it_and_loses_nothing(tmp_path: Any) -> None:
    broken = {"on": True}
    errors: list[BaseException] = []

    def answer(messages: list[dict], info: ModelCallInfo) -> str:
        if broken["on"]:
            raise ValueError("cannot parse the question")
        return "Fine now."

    fm = FunctionModel(answer)
    db = tmp_path / "fn.sqlite"
    agent = agent_on(fm, db=db, on_chat_error=lambda self, exc: errors.append(exc))
    result = await agent.send("What is 2 + 40?")
    assert result.status == "error"
    assert result.error == "FunctionModel function 'answer' raised ValueError: cannot parse the question (call 1)."
    assert [type(e) for e in errors] == [ModelError]
    assert isinstance(errors[0].__cause__, ValueError)  # the function's own exception, with its traceback
    stored = agent_on(fm, db=db).messages  # a fresh object reads SQLite
    assert stored[0] == user("What is 2 + 40?")
    assert stored == agent.messages
    broken["on"] = False  # the agent goes on
    assert (await agent.send("again")).status == "completed"
    assert agent.messages[-1]["parts"][-1]["text"] == "Fine now."


@pytest.mark.parametrize(("reply", "what"), [
    (42, "42 (int)"),
    (None, "None (NoneType)"),
    (["ok", 7], "a list holding 7 (int)"),
    ({"text": "hi"}, "{'text': 'hi'} (dict)"),
])
async def test_a_function_returning_something_else_gets_one_line_naming_what_to_return(reply: Any, what: str) -> None:
    def garbage(messages: list[dict], info: ModelCallInfo) -> Any:
        return reply

    agent = agent_on(FunctionModel(garbage))
    result = await agent.send("hi")
    assert result.status == "error"
    assert result.error == (f"FunctionModel function 'garbage' returned {what}; return a str (the reply's text), "
                            "a ScriptedModel item (ScriptedModel.text(...), .tool_call(...), .usage(...), "
                            ".error(...)) or a list of them.")
    assert agent.messages[0] == user("hi")


async def test_a_function_changing_what_it_was_sent_changes_nothing_stored_or_recorded() -> None:
    def vandal(messages: list[dict], info: ModelCallInfo) -> str:
        messages[-1]["content"] = "changed"
        messages.append({"role": "user", "content": "extra"})
        info.tools.clear()
        return "ok"

    fm = FunctionModel(vandal)
    agent = agent_on(fm)
    assert (await agent.send("original")).status == "completed"
    assert agent.messages[0] == user("original")
    assert fm.requests[0]["messages"][-1] == {"role": "user", "content": "original"}
    assert len(fm.requests[0]["tools"]) == 1


async def test_an_item_error_fails_the_call_as_a_scripted_one_does() -> None:
    fm = FunctionModel(lambda messages, info: [S.text("Partial"), S.error("upstream exploded")])
    agent = agent_on(fm)
    result = await agent.send("hi")
    assert result.status == "error" and "upstream exploded" in (result.error or "")
    assert agent.messages[-1]["parts"] == [{"type": "step-start"},
                                           {"type": "text", "text": "Partial", "state": "done"}]


def test_bad_constructor_arguments_are_one_line_errors() -> None:
    with pytest.raises(UserError, match=r"FunctionModel\(fn\) takes a function \(messages, info\) -> reply, not 42"):
        FunctionModel(42)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="stream_chunk_size must be a positive int, not 0"):
        FunctionModel(calculator, stream_chunk_size=0)
    first, second = FunctionModel(calculator), FunctionModel(calculator)
    assert first.model != second.model and first.model.startswith("think-scripted/function-")
    assert repr(first) == f"FunctionModel(calculator, model={first.model!r}, calls=0)"


async def test_through_litellm_the_same_function_gives_the_same_transcript(tmp_path: Any) -> None:
    transcripts, sent = [], []
    for via in (False, True):
        fm = FunctionModel(calculator)
        agent = agent_on(ModelConfig(fm.model, via_litellm=via), name=f"via{via}", db=tmp_path / f"{via}.sqlite")
        result = await agent.send("What is 2 + 40?")
        assert (result.status, result.error) == ("completed", None)
        transcripts.append(json.loads(json.dumps(agent.messages).replace(fm.model, "MODEL")))
        sent.append([r["messages"] for r in fm.requests])
        assert [t["function"]["name"] for t in fm.requests[0]["tools"]] == ["add"]
    for transcript in transcripts:
        for message in transcript:
            message["id"] = "ID"
            message.get("metadata", {}).pop("requestId", None)
            message.get("metadata", {}).pop("usage", None)  # litellm estimates what the function did not report
    assert transcripts[0] == transcripts[1]
    assert transcripts[1][-1]["parts"][-1]["text"] == "The answer is 42."
    assert sent[0] == sent[1]


async def test_through_litellm_a_function_that_raises_still_names_it() -> None:
    def answer(messages: list[dict], info: ModelCallInfo) -> str:
        raise ValueError("cannot parse the question")

    fm = FunctionModel(answer)
    agent = agent_on(ModelConfig(fm.model, via_litellm=True))
    result = await agent.send("hi")
    assert result.status == "error"
    assert result.error == "FunctionModel function 'answer' raised ValueError: cannot parse the question (call 1)."
    assert agent.messages[0] == user("hi")


async def test_a_non_streamed_call_such_as_a_compaction_summary_asks_the_function_too() -> None:
    from think_nb.session.compaction import summarize_with_model

    fm = FunctionModel(lambda messages, info: ["Summary of: ", messages[-1]["content"]])
    assert await summarize_with_model(ModelConfig(fm.model), "the old turns") == "Summary of: the old turns"
    assert fm.calls == 1 and fm.requests[0]["messages"][-1] == {"role": "user", "content": "the old turns"}


async def test_a_function_model_unknown_to_this_process_says_how_to_make_one() -> None:
    agent = agent_on(ModelConfig("think-scripted/function-999999"))
    result = await agent.send("hi")
    assert result.status == "error"
    assert result.error == ("Model 'think-scripted/function-999999' failed: RuntimeError: No FunctionModel named "
                            "'think-scripted/function-999999' in this process; create it with FunctionModel(fn).")
