"""A failed turn names its source (think_nb.errors): the model, user code, or think_nb itself.

- Every user-overridable method and hook a turn calls, raising `KeyError('boom')`, ends the
  turn with `<Class>.<method>() raised KeyError: 'boom'` (never `Model ... failed`), in the
  result, the `error` chunk, the turn log, and `on_chat_error`'s `HookError` (cause: the KeyError).
  `on_chat_response` runs after the turn ended: the turn stays `completed`, the error is logged.
- A model that fails (a scripted error, a script with no step left; called directly or through
  litellm) still says `Model '<model>' failed: ...`, `on_chat_error` gets a `ModelError`.
- think_nb's own code failing (an internal function patched to raise) says `think_nb internal
  error in <where>: ...; please report it`, with the traceback logged.
- A tool that raises is still an `output-error` the model reads; the turn completes. So does a
  `before_tool_call` / `after_tool_call` that raises: its error, naming it, is the call's.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest

from agents import add
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.errors import HookError, InternalError, ModelError, UserError
from think_nb.messages.accumulator import MessageAccumulator
from think_nb.testing import ScriptedModel as S
from think_nb.turns import runner

SAFETY = 120.0  # seconds; a bound on a hang, never a wait


def boom(*args: Any, **kwargs: Any) -> Any:
    raise KeyError("boom")


async def aboom(*args: Any, **kwargs: Any) -> Any:
    await asyncio.sleep(0)
    raise KeyError("boom")


class Broken:
    """A context provider whose `get` raises."""

    def get(self) -> str:
        raise KeyError("boom")


def count_tokens(text: str) -> int:
    raise KeyError("boom")


def calc(script: S, **attrs: Any) -> Think:
    """An instance of a fresh `Calc(Think)` on `script` with `add` as its tool; `on_chat_error`
    records what it receives in `agent.chat_errors`; `attrs` become class attributes."""

    def on_chat_error(self: Any, error: BaseException) -> None:
        self.chat_errors.append(error)

    base = {"get_model": lambda self: script.model, "get_tools": lambda self: [add],
            "include_workspace_tools": False, "on_chat_error": on_chat_error}
    agent = type("Calc", (Think,), {**base, **attrs})("calc")
    agent.chat_errors = []
    agent.heard = []
    runtime_of(agent).subscribe(type("L", (), {"on_chunk": lambda self, rid, chunk, cont: agent.heard.append(chunk)})())
    return agent


# (class attributes that make the method raise, the message's `<who>`); a tool hook that raises fails
# its call, not the turn (tests/test_turns_end.py::test_a_tool_hook_that_raises_fails_its_call_and_the_turn_completes)
FAILING: dict[str, tuple[dict, str]] = {
    "get_model": ({"get_model": boom}, "Calc.get_model()"),
    "get_model (async)": ({"get_model": aboom}, "Calc.get_model()"),
    "get_system_prompt": ({"get_system_prompt": boom}, "Calc.get_system_prompt()"),
    "get_tools": ({"get_tools": boom}, "Calc.get_tools()"),
    "get_tools (async)": ({"get_tools": aboom}, "Calc.get_tools()"),
    "configure_session": ({"configure_session": boom}, "Calc.configure_session()"),
    "configure_session (async)": ({"configure_session": aboom}, "Calc.configure_session()"),
    "get_skills": ({"get_skills": boom}, "Calc.get_skills()"),
    "a context provider": ({"configure_session": lambda self, s: s.with_context("memory", provider=Broken())},
                           "Broken.get() for context block 'memory'"),
    "the session's token counter": (
        {"configure_session": lambda self, s: s.compact_after(10, token_counter=count_tokens)},
        "count_tokens() for compact_after(token_counter=)"),
    "before_turn": ({"before_turn": boom}, "Calc.before_turn()"),
    "before_turn (async)": ({"before_turn": aboom}, "Calc.before_turn()"),
    "on_chunk": ({"on_chunk": boom}, "Calc.on_chunk()"),
    "on_step_finish": ({"on_step_finish": boom}, "Calc.on_step_finish()"),
}
BEFORE_THE_MODEL = {"get_model", "get_model (async)", "get_system_prompt", "get_tools", "get_tools (async)",
                    "configure_session", "configure_session (async)", "get_skills", "a context provider",
                    "the session's token counter", "before_turn", "before_turn (async)", "on_chunk"}


@pytest.mark.parametrize("place", FAILING)
async def test_a_method_or_hook_that_raises_names_its_class_and_itself_not_the_model(place: str) -> None:
    script = S([[S.text("adding "), S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    attrs, who = FAILING[place]
    agent = calc(script, **attrs)
    result = await asyncio.wait_for(agent.send("go"), SAFETY)
    expected = f"{who} raised KeyError: 'boom'"
    assert (result.status, result.error) == ("error", expected)
    assert not result.error.startswith("Model")
    assert [(t["status"], t["error"]) for t in agent.turns()] == [("error", expected)]
    assert agent.heard[-1] == {"type": "error", "errorText": expected}
    [error] = agent.chat_errors
    assert type(error) is HookError and str(error) == expected
    assert type(error.__cause__) is KeyError and error.__cause__.args == ("boom",)
    if place in BEFORE_THE_MODEL:
        assert script.calls == 0


async def test_a_failing_repair_interrupted_tool_part_names_it() -> None:
    script = S([[S.text("fine")]])
    agent = calc(script, repair_interrupted_tool_part=boom)
    runtime_of(agent).conversation.append({"id": "m-user", "role": "user", "parts": [{"type": "text", "text": "add"}]})
    runtime_of(agent).conversation.append({"id": "m-left", "role": "assistant", "parts": [
        {"type": "tool-add", "toolCallId": "c1", "state": "input-available", "input": {"a": 1, "b": 2}}]})
    result = await asyncio.wait_for(agent.send("go"), SAFETY)
    assert (result.status, result.error) == ("error", "Calc.repair_interrupted_tool_part() raised KeyError: 'boom'")
    assert script.calls == 0


@pytest.mark.parametrize("value", ["repaired", {"type": "tool-add", "toolCallId": "c1", "state": "input-available"},
                                   {"type": "tool-add", "toolCallId": "other", "state": "output-error"}])
async def test_a_repair_interrupted_tool_part_returning_no_settled_part_names_it(value: object) -> None:
    """Stored as returned, such a part failed every later turn as think_nb's internal error; the
    turn that meets it now fails naming the method, and the part is left to repair again."""
    script = S([[S.text("fine")]])
    agent = calc(script, repair_interrupted_tool_part=lambda self, part: value)
    runtime_of(agent).conversation.append({"id": "m-user", "role": "user", "parts": [{"type": "text", "text": "add"}]})
    runtime_of(agent).conversation.append({"id": "m-left", "role": "assistant", "parts": [
        {"type": "tool-add", "toolCallId": "c1", "state": "input-available", "input": {"a": 1, "b": 2}}]})
    result = await asyncio.wait_for(agent.send("go"), SAFETY)
    assert result.status == "error" and script.calls == 0
    assert re.fullmatch(r"Calc\.repair_interrupted_tool_part\(\) returned .* for tool call 'c1'; return the part "
                        r"settled .*, or None for the default", result.error or "")
    assert agent.messages[1]["parts"][0]["state"] == "input-available"


async def test_a_failing_save_messages_function_names_it() -> None:
    script = S([[S.text("fine")]])
    agent = calc(script)

    def next_messages(messages: list[dict]) -> list[dict]:
        raise KeyError("boom")

    result = await asyncio.wait_for(agent.save_messages(next_messages), SAFETY)
    assert (result.status, result.error) == ("error", "next_messages() for save_messages raised KeyError: 'boom'")


async def test_on_chat_response_that_raises_is_logged_with_its_name_and_the_turn_stays_completed(
        caplog: pytest.LogCaptureFixture) -> None:
    agent = calc(S([[S.text("fine")]]), on_chat_response=boom)
    with caplog.at_level(logging.ERROR, logger="think_nb"):
        result = await asyncio.wait_for(agent.send("go"), SAFETY)
    assert (result.status, result.error) == ("completed", None)
    assert [(t["status"], t["error"]) for t in agent.turns()] == [("completed", None)]
    assert any("Calc.on_chat_response() raised KeyError: 'boom'" in r.getMessage() and r.exc_info
               for r in caplog.records)
    assert agent.chat_errors == []


async def test_on_chat_error_that_raises_is_named_after_the_first_error() -> None:
    script = S([[S.error("model down")]])
    agent = calc(script, on_chat_error=boom)
    result = await asyncio.wait_for(agent.send("go"), SAFETY)
    assert result.error == (f"Model {script.model!r} failed: RuntimeError: model down "
                            "(Calc.on_chat_error() also raised KeyError: 'boom')")


@pytest.mark.parametrize("via_litellm", [False, True], ids=["direct", "via litellm"])
@pytest.mark.parametrize("failure", ["error", "no step left"])
async def test_a_model_that_fails_is_still_the_model(failure: str, via_litellm: bool) -> None:
    script = S([[S.text("partial "), S.error("model down")]] if failure == "error" else [])
    agent = calc(script)
    if via_litellm:
        from think_nb import ModelConfig

        type(agent).get_model = lambda self: ModelConfig(script.model, via_litellm=True)  # type: ignore[method-assign]
    result = await asyncio.wait_for(agent.send("go"), SAFETY)
    words = "model down" if failure == "error" else (
        f"ScriptedModel {script.model!r} has no step left (call 1): this demo's script is used up; run the cell "
        "that made the agent again, or give the agent a real model (get_model).")
    kind = "APIConnectionError" if via_litellm else "RuntimeError"  # litellm wraps it in its own type
    assert result.status == "error"
    assert result.error == f"Model {script.model!r} failed: {kind}: {words}"
    assert [(t["status"], t["error"]) for t in agent.turns()] == [("error", result.error)]
    assert agent.heard[-1] == {"type": "error", "errorText": result.error}
    [error] = agent.chat_errors
    assert type(error) is ModelError and str(error) == result.error
    assert type(error.__cause__).__name__ == kind and words in str(error.__cause__)



def raise_on_text_delta(original: Any) -> Any:
    def apply(self: MessageAccumulator, chunk: dict) -> Any:
        if chunk.get("type") == "text-delta":
            raise KeyError("boom")
        return original(self, chunk)
    return apply


INTERNAL = {
    # the message accumulator, while the model streams: think_nb's bug, not the model's
    "the accumulator": ("think_nb.turns.runner.Turn.emit", lambda mp: mp.setattr(
        MessageAccumulator, "apply", raise_on_text_delta(MessageAccumulator.apply))),
    # the history conversion, before the model is called
    "the history conversion": ("think_nb.turns.runner.Turn._history_messages",
                               lambda mp: mp.setattr(runner, "to_model_messages", boom)),
}


@pytest.mark.parametrize("place", INTERNAL)
async def test_think_nb_failing_is_an_internal_error_with_its_traceback_logged(
        place: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    where, patch = INTERNAL[place]
    agent = calc(S([[S.text("an answer")]]))
    patch(monkeypatch)
    with caplog.at_level(logging.ERROR, logger="think_nb"):
        result = await asyncio.wait_for(agent.send("go"), SAFETY)
    expected = f"think_nb internal error in {where}: KeyError: 'boom'; please report it"
    assert (result.status, result.error) == ("error", expected)
    assert [(t["status"], t["error"]) for t in agent.turns()] == [("error", expected)]
    assert agent.heard[-1] == {"type": "error", "errorText": expected}
    [error] = agent.chat_errors
    assert type(error) is InternalError and str(error) == expected and error.where == where
    assert type(error.__cause__) is KeyError
    [record] = [r for r in caplog.records if expected in r.getMessage()]
    assert record.exc_info is not None and record.exc_info[1] is error.__cause__


async def test_a_tool_that_raises_is_still_an_output_error_the_model_reads() -> None:
    script = S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("it failed")]])
    agent = calc(script, get_tools=lambda self: {"add": boom_tool})
    result = await asyncio.wait_for(agent.send("go"), SAFETY)
    assert (result.status, result.error) == ("completed", None)
    [part] = [p for p in agent.messages[-1]["parts"] if p["type"] == "tool-add"]
    assert (part["state"], part["errorText"]) == ("output-error", "KeyError: 'boom'")
    assert script.requests[1]["messages"][-1]["content"] == "Error: KeyError: 'boom'"
    assert agent.chat_errors == []


def _boom_tool() -> Any:
    from think_nb import tool

    @tool(name="add")
    def failing_add(a: float, b: float) -> float:
        """Add two numbers (fails)."""
        raise KeyError("boom")
    return failing_add


boom_tool = _boom_tool()


@pytest.mark.parametrize(("method", "value", "expected"), [
    ("get_tools", 42, "get_tools() returned 42; return a list of functions / Tools, or a dict name -> tool."),
    ("get_system_prompt", 42, "Calc.get_system_prompt() returned 42; return the system prompt as a string."),
    ("get_skills", 42, "get_skills() returned 42; return a list of SkillDirectory(path) or Skill(...)."),
])
async def test_a_method_returning_the_wrong_shape_is_the_users_not_think_nbs(method: str, value: object,
                                                                           expected: str) -> None:
    script = S([[S.text("never")]])
    cls = type("Calc", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False,
                                  method: lambda self: value})
    result = await cls(f"shape-{method}").send("hi")
    assert (result.status, result.error) == ("error", expected)
    assert script.calls == 0


@pytest.mark.parametrize("method", ["get_extensions", "get_scheduled_tasks"])
def test_a_creation_time_method_that_fails_is_named_at_creation(method: str) -> None:
    """`get_scheduled_tasks()` is a best-effort start-up step (Think's `scheduled-task-reconcile`,
    `think_nb.startup`): the agent is created and the warning names the method; `get_extensions()`
    raises from the constructor."""
    from think_nb.startup import DegradedStartWarning

    def boom(self: Think) -> object:
        raise KeyError("x")

    cls = type("Calc", (Think,), {method: boom})
    named = re.escape(f"Calc.{method}() raised KeyError: 'x'")
    if method == "get_scheduled_tasks":
        with pytest.warns(DegradedStartWarning, match=named):
            agent = cls(f"create-{method}")
        assert [d["step"] for d in agent.get_on_start_degradations()] == ["scheduled-task-reconcile"]
        return
    with pytest.raises(HookError, match=named):
        cls(f"create-{method}")
    if method == "get_extensions":
        bad = type("Calc", (Think,), {method: lambda self: 42})
        with pytest.raises(UserError, match=re.escape("get_extensions() returned 42; return a list of")):
            bad("create-bad")
