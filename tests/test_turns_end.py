"""Issue 11: every turn ends, settled and honest, whatever a tool, a hook or the model does.

- `BaseException`s from every place user code runs (each tool form, each hook, `get_model` /
  `get_tools` / `get_system_prompt`, `configure_session`, approval predicates) end the turn with
  the documented status; `send` returns, the turn log is settled, `on_chat_error` fires once for a
  failed turn, and the agent runs the next turn.
- An abort does not need the awaited code's cooperation: nothing streamed after it is stored or
  broadcast, one `abort` chunk, the upstream stream is closed.
- Whatever a tool returns is stored as strict JSON and reads back from a reopened agent.
- A turn whose persistence fails ends `error`, settled, and the agent goes on.

`asyncio.wait_for(..., SAFETY)` only bounds a failure (a hang); no test waits on a timer.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from agents import add, eventually, scripted_agent, texts
from test_jsonsafe import jsonish
from think_nb import Think, tool
from think_nb.jsonsafe import to_json_value
from think_nb.models.litellm_env import register_provider
from think_nb.store.messages import MessageStore
from think_nb.testing import ScriptedModel as S
from think_nb.testing import _chunk

SAFETY = 120.0  # seconds; a bound on a hang, never a wait


class Stop(BaseException):
    """A user-defined BaseException (not an Exception): what a careless `raise` may throw."""


KINDS = {"SystemExit": lambda: SystemExit("x"), "Stop": lambda: Stop("x"), "ValueError": lambda: ValueError("x")}
INTERRUPT = {"KeyboardInterrupt": lambda: KeyboardInterrupt("x")}


async def send(agent: Think, text: str) -> Any:
    return await asyncio.wait_for(agent.send(text), SAFETY)


def once(kind: str, value: Callable[..., Any] = lambda *a, **k: None) -> Callable[..., Any]:
    """A callable that raises `KINDS[kind]()` the first time and then behaves like `value`."""
    state = {"raised": False}

    def call(*args: Any, **kwargs: Any) -> Any:
        if not state["raised"]:
            state["raised"] = True
            raise {**KINDS, **INTERRUPT}[kind]()
        return value(*args, **kwargs)

    return call


def counting_agent(script: S, tools: list | None = None, **attrs: Any) -> Think:
    """A scripted agent whose `on_chat_error` calls are counted in `agent.chat_errors` (an
    `on_chat_error` in `attrs` is wrapped, so it is counted too)."""
    inner = attrs.pop("on_chat_error", None)

    def on_chat_error(self: Any, error: BaseException) -> Any:
        self.chat_errors.append(error)
        return inner(self, error) if inner is not None else None

    agent = scripted_agent(script, tools=tools, name="end", on_chat_error=on_chat_error, **attrs)
    agent.chat_errors = []
    return agent


async def next_turn_works(agent: Think, script: S) -> None:
    script.steps[:] = [[S.text("again")]]
    result = await send(agent, "again")
    assert (result.status, result.error) == ("completed", None)
    assert texts(agent)[-1] == ("assistant", "again")
    assert agent.turns()[-1]["status"] == "completed"


def tool_script(name: str) -> S:
    return S([[S.text("calling "), S.tool_call(name, {})], [S.text("the tool failed")]])


# --- 1. a BaseException from every place user code runs ----------------------------------

def failing_tool(kind: str, form: str) -> Any:
    if form == "sync":
        def boom() -> str:
            """Fails."""
            raise KINDS[kind]()
        return tool(boom)

    async def aboom() -> str:
        """Fails."""
        await asyncio.sleep(0)
        raise KINDS[kind]()
    return tool(aboom)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["sync", "async"])
async def test_a_tool_that_raises_is_an_output_error_the_model_sees(kind: str, form: str) -> None:
    boom = failing_tool(kind, form)
    script = tool_script(boom.name)
    agent = counting_agent(script, tools=[boom])
    result = await send(agent, "go")
    assert (result.status, result.error) == ("completed", None)
    part = agent.messages[1]["parts"][2]
    assert (part["type"], part["state"], part["errorText"]) == (f"tool-{boom.name}", "output-error", f"{kind}: x")
    assert script.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": part["toolCallId"],
                                                 "content": f"Error: {kind}: x"}
    assert agent.turns()[-1]["status"] == "completed"
    assert agent.chat_errors == []
    await next_turn_works(agent, script)


def test_generator_tools_are_refused_when_made() -> None:
    def gen() -> Any:
        """Yields."""
        yield 1

    async def agen() -> Any:
        """Yields."""
        yield 1

    from think_nb.errors import UserError
    for fn, kind in ((gen, "a generator"), (agen, "an async generator")):
        with pytest.raises(UserError, match=f"the function is {kind} .*streaming tools are not supported"):
            tool(fn)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("predicate_form", ["sync", "async"])
async def test_an_approval_predicate_that_raises_fails_the_call_never_opens_it(kind: str, predicate_form: str) -> None:
    ran = []
    raise_once = once(kind, lambda arguments: True)

    async def async_predicate(arguments: dict) -> bool:
        return raise_once(arguments)

    predicate = raise_once if predicate_form == "sync" else async_predicate

    @tool(needs_approval=predicate)
    def guarded() -> str:
        """Guarded."""
        ran.append(1)
        return "ran"

    script = tool_script("guarded")
    agent = counting_agent(script, tools=[guarded])
    result = await send(agent, "go")
    assert (result.status, result.error) == ("completed", None)
    part = agent.messages[1]["parts"][2]
    assert part["state"] == "output-error"
    assert part["errorText"] == f"needs_approval('guarded') raised {kind}: x; the tool did not run."
    assert script.requests[1]["messages"][-1]["content"] == f"Error: {part['errorText']}"
    assert ran == [] and not agent.has_pending_interaction()
    assert agent.turns()[-1]["status"] == "completed"
    assert agent.chat_errors == []
    await next_turn_works(agent, script)


TURN_HOOKS = ["before_turn", "before_tool_call", "after_tool_call", "on_chunk", "on_step_finish"]
ASSEMBLY = ["get_model", "get_tools", "get_system_prompt", "configure_session"]


def hook_attrs(place: str, kind: str, script: S) -> dict:
    defaults: dict[str, Callable[..., Any]] = {
        "get_model": lambda self: script.model, "get_tools": lambda self: [add],
        "get_system_prompt": lambda self: "Be brief.", "configure_session": lambda self, session: session}
    return {place: once(kind, defaults.get(place, lambda *a: None))}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("place", TURN_HOOKS + ASSEMBLY)
async def test_a_hook_or_get_method_that_raises_ends_the_turn_with_an_error_naming_it(place: str, kind: str) -> None:
    script = S([[S.text("adding "), S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    agent = counting_agent(script, tools=[add], **hook_attrs(place, kind, script))
    result = await send(agent, "go")
    assert result.status == "error"
    assert result.error == f"{place}() raised {kind}: x"
    assert agent.turns()[-1]["status"] == "error"
    assert agent.turns()[-1]["error"] == result.error
    assert [type(e).__name__ for e in agent.chat_errors] == ["HookError"]
    assert agent.messages[-1]["role"] != "assistant" or agent.messages[-1]["metadata"]["error"] == result.error
    await next_turn_works(agent, script)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_on_chat_error_that_raises_still_reports_the_error_once(kind: str) -> None:
    script = S([[S.text("partial "), S.error("model down")]])
    agent = counting_agent(script, on_chat_error=once(kind))
    result = await send(agent, "go")
    assert result.status == "error"
    assert "model down" in result.error and f"(on_chat_error() also raised {kind}: x)" in result.error
    assert len(agent.chat_errors) == 1
    assert agent.turns()[-1]["status"] == "error"
    assert agent.messages[-1]["parts"][-1] == {"type": "text", "text": "partial ", "state": "done"}
    await next_turn_works(agent, script)


@pytest.mark.parametrize("kind", [*KINDS, *INTERRUPT])
async def test_an_on_chat_response_that_raises_leaves_the_turn_completed_and_logged(kind: str) -> None:
    script = S([[S.text("fine")]])
    agent = counting_agent(script, on_chat_response=once(kind))
    result = await send(agent, "go")
    assert (result.status, result.error) == ("completed", None)
    assert [(t["status"], t["error"]) for t in agent.turns()] == [("completed", None)]
    assert texts(agent)[-1] == ("assistant", "fine")
    assert agent.trace(result.request_id) is not None  # the trace was still saved
    assert agent.chat_errors == []
    await next_turn_works(agent, script)


def chunk_types(agent: Think) -> list[str]:
    seen: list[str] = []
    agent.subscribe(type("L", (), {"on_chunk": lambda self, rid, chunk, cont: seen.append(chunk["type"])})())
    return seen


def interrupting_tool(place: str) -> Any:
    """A tool whose function (sync or async) or approval predicate raises KeyboardInterrupt."""
    def interrupt(*args: Any) -> Any:
        raise KeyboardInterrupt

    async def ainterrupt() -> str:
        """Interrupted."""
        await asyncio.sleep(0)
        raise KeyboardInterrupt

    def sinterrupt() -> str:
        """Interrupted."""
        raise KeyboardInterrupt

    if place == "predicate":
        return tool(lambda: "ran", name="guarded", description="Guarded.", needs_approval=interrupt)
    return tool(sinterrupt if place == "sync" else ainterrupt)


@pytest.mark.parametrize("place", ["sync", "async", "predicate"])
async def test_keyboard_interrupt_from_a_tool_aborts_the_turn(place: str) -> None:
    boom = interrupting_tool(place)
    script = tool_script(boom.name)
    agent = counting_agent(script, tools=[boom])
    seen = chunk_types(agent)
    result = await send(agent, "go")
    assert result.status == "aborted"
    assert agent.turns()[-1]["status"] == "aborted"
    assert seen.count("abort") == 1 and seen[-1] == "abort"
    assert agent.messages[-1]["metadata"]["aborted"] is True
    assert agent.chat_errors == []
    await next_turn_works(agent, script)
