"""Issue 11: every turn ends, settled and honest, whatever a tool, a hook or the model does.

- `BaseException`s from every place user code runs (each tool form, each hook, `get_model` /
  `get_tools` / `get_system_prompt`, `configure_session`, approval predicates) end the turn with
  the documented status; `send` returns, the turn log is settled, `on_chat_error` fires once for a
  failed turn, and the agent runs the next turn. A tool hook (`before_tool_call`,
  `after_tool_call`) that raises fails its call, never the turn.
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
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from agents import add, scripted_agent, texts
from test_jsonsafe import jsonish
from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.errors import InternalError
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
    with pytest.raises(UserError, match=r"the function is a generator .*must be an async generator"):
        tool(gen)
    assert tool(agen).streaming  # an async generator is a streaming tool (tests/test_streaming_tools.py)


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


TURN_HOOKS = ["before_turn", "before_step", "on_chunk", "on_step_finish"]
TOOL_HOOKS = ["before_tool_call", "after_tool_call"]  # they fail their call, not the turn (issue 30)
ASSEMBLY = ["get_model", "get_tools", "get_system_prompt", "configure_session"]


def hook_attrs(place: str, kind: str, script: S, form: str) -> dict:
    defaults: dict[str, Callable[..., Any]] = {
        "get_model": lambda self: script.model, "get_tools": lambda self: [add],
        "get_system_prompt": lambda self: "Be brief.", "configure_session": lambda self, session: session}
    method = once(kind, defaults.get(place, lambda *a: None))
    if form == "sync":
        return {place: method}

    async def async_method(*args: Any) -> Any:
        await asyncio.sleep(0)
        return method(*args)
    return {place: async_method}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("place", TURN_HOOKS + ASSEMBLY)
async def test_a_hook_or_get_method_that_raises_ends_the_turn_with_an_error_naming_it(
        place: str, form: str, kind: str) -> None:
    script = S([[S.text("adding "), S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    agent = counting_agent(script, tools=[add], **hook_attrs(place, kind, script, form))
    result = await send(agent, "go")
    assert result.status == "error"
    assert result.error == f"Scripted.{place}() raised {kind}: x"
    assert agent.turns()[-1]["status"] == "error"
    assert agent.turns()[-1]["error"] == result.error
    assert [type(e).__name__ for e in agent.chat_errors] == ["HookError"]
    assert agent.messages[-1]["role"] != "assistant" or agent.messages[-1]["metadata"]["error"] == result.error
    await next_turn_works(agent, script)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("place", TOOL_HOOKS)
async def test_a_tool_hook_that_raises_fails_its_call_and_the_turn_completes(place: str, form: str, kind: str) -> None:
    script = S([[S.text("adding "), S.tool_call("add", {"a": 1, "b": 2})], [S.text("It failed.")]])
    agent = counting_agent(script, tools=[add], **hook_attrs(place, kind, script, form))
    result = await send(agent, "go")
    assert (result.status, result.error) == ("completed", None)
    consequence = "the tool did not run" if place == "before_tool_call" else "the call's result was discarded"
    error = f"Scripted.{place}() for tool 'add' raised {kind}: x; {consequence}."
    assert agent.messages[-1]["parts"][2] == {"type": "tool-add", "toolCallId": "call_1_0", "state": "output-error",
                                              "input": {"a": 1, "b": 2}, "errorText": error}
    assert script.requests[1]["messages"][-1]["content"] == f"Error: {error}"
    assert [(t["status"], t["error"]) for t in agent.turns()] == [("completed", None)]
    assert agent.chat_errors == []
    await next_turn_works(agent, script)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_on_chat_error_that_raises_still_reports_the_error_once(kind: str) -> None:
    script = S([[S.text("partial "), S.error("model down")]])
    agent = counting_agent(script, on_chat_error=once(kind))
    result = await send(agent, "go")
    assert result.status == "error"
    assert "model down" in result.error and f"(Scripted.on_chat_error() also raised {kind}: x)" in result.error
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
    listener = type("L", (), {"on_chunk": lambda self, rid, chunk, cont: seen.append(chunk["type"])})()
    runtime_of(agent).subscribe(listener)
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


async def test_when_one_call_of_a_step_fails_the_turn_its_sibling_calls_are_cancelled() -> None:
    # the turn ends `error`; a sibling call still running is cancelled, so it never streams into a
    # turn that has already reported its end
    cancelled: list[str] = []
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Waits."""
        started.set()
        try:
            await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return "never"

    async def on_chunk(self: Any, chunk: dict) -> None:  # the turn's hook, failing on add's result
        if chunk["type"] == "tool-output-available" and chunk["toolCallId"] == "call_1_1":
            await started.wait()
            raise SystemExit("x")

    script = S([[S.tool_call("slow", {}), S.tool_call("add", {"a": 1, "b": 2})], [S.text("never")]])
    agent = counting_agent(script, tools=[slow, add], on_chunk=on_chunk)
    result = await send(agent, "go")
    assert (result.status, result.error) == ("error", "Scripted.on_chunk() raised SystemExit: x")
    assert cancelled == ["slow"]
    assert len(agent.chat_errors) == 1 and agent.turns()[-1]["status"] == "error"
    await next_turn_works(agent, script)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("event", ["on_chunk", "on_turn_end", "on_messages"])
async def test_a_listener_that_raises_does_not_change_the_turn(event: str, kind: str) -> None:
    script = S([[S.text("fine")]])
    agent = counting_agent(script)
    runtime_of(agent).subscribe(type("Raising", (), {event: once(kind)})())
    result = await send(agent, "go")
    assert (result.status, result.error) == ("completed", None)
    assert agent.turns()[-1]["status"] == "completed" and agent.chat_errors == []
    await next_turn_works(agent, script)


class Unprintable:
    """A client tool result that is not JSON and whose repr raises (user code in the result path)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        raise KINDS[self.kind]()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_client_tool_result_that_cannot_be_shown_still_continues_the_turn(kind: str) -> None:
    from think_nb import client_tool

    where = client_tool("where", "Where the user is.", js="return location.href;")
    script = S([[S.tool_call("where", {})], [S.text("noted")]])
    agent = counting_agent(script, tools=[where])
    assert (await send(agent, "where?")).status == "completed"
    assert agent.has_pending_interaction()
    raised = task = None
    try:
        task = agent.add_tool_output("call_1_0", {"at": Unprintable(kind), "score": float("nan"), "tags": {"b", "a"}})
    except BaseException as exc:  # noqa: BLE001 - reported below, without the frames (pytest would repr them)
        raised = type(exc).__name__
    assert raised is None, f"add_tool_output let {raised} through"
    result = await asyncio.wait_for(task, SAFETY)
    assert (result.status, result.error) == ("completed", None)
    part = agent.messages[1]["parts"][1]
    assert part["state"] == "output-available"
    assert part["output"] == {"at": "<unrepresentable Unprintable>", "score": None, "tags": ["a", "b"]}
    assert [t["status"] for t in agent.turns()] == ["completed", "completed"]
    assert agent.chat_errors == []
    await next_turn_works(agent, script)


# --- 3. an abort does not depend on the awaited code's cooperation -------------------------

SWALLOW_PROVIDER = "think-test-swallow"


class SwallowingModel:
    """A model on its own litellm custom provider: streams `before`, then (when `waits`) waits for
    the abort and swallows its `CancelledError`, then streams `after` as if nothing happened.
    `closed` records when the stream's generator was finalized (the upstream request closed)."""

    models: ClassVar[dict[str, SwallowingModel]] = {}

    def __init__(self, before: list[str], after: list[str], waits: bool) -> None:
        self.before, self.after, self.waits = before, after, waits
        self.ready = asyncio.Event()
        self.swallowed: list[str] = []
        self.closed: list[float] = []
        self.model = f"{SWALLOW_PROVIDER}/m{len(self.models)}"
        self.models[self.model.split("/", 1)[1]] = self

    async def stream(self) -> Any:
        try:
            for text in self.before:
                yield _chunk(text=text)
            if self.waits:
                self.ready.set()
                try:
                    await asyncio.Event().wait()  # until the abort cancels the turn's task
                except asyncio.CancelledError:
                    self.swallowed.append("model")
            for text in self.after:
                yield _chunk(text=text)
            yield _chunk(is_finished=True, finish_reason="stop")
        finally:
            self.closed.append(time.perf_counter())


def _swallow_handler() -> Any:
    from litellm import CustomLLM

    class Handler(CustomLLM):
        async def astreaming(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            stream = SwallowingModel.models[model.split("/")[-1]].stream()  # litellm drops the provider
            try:
                async for chunk in stream:
                    yield chunk
            finally:  # closing this generator closes the model's at once
                await stream.aclose()

    return Handler()


register_provider(SWALLOW_PROVIDER, _swallow_handler)


def merged_deltas(chunks: list[dict]) -> list[dict]:
    out: list[dict] = []
    for chunk in chunks:
        if out and chunk["type"].endswith("-delta") and out[-1]["type"] == chunk["type"] \
                and out[-1].get("id") == chunk.get("id"):
            out[-1] = {**out[-1], "delta": out[-1]["delta"] + chunk["delta"]}
        else:
            out.append(dict(chunk))
    return out


@pytest.mark.parametrize("swallower", ["model", "on_chunk"])
async def test_an_abort_keeps_nothing_streamed_after_it_even_when_the_code_swallows_it(
        swallower: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")  # a custom provider: no network
    before, after = ["one ", "two ", "three "], ["AFTER ", "ABORT"]
    model = SwallowingModel(before, after, waits=swallower == "model")
    hook_swallowed: list[str] = []
    attrs: dict[str, Any] = {"get_model": lambda self: model.model, "get_tools": lambda self: []}
    if swallower == "on_chunk":
        async def on_chunk(self: Any, chunk: dict) -> None:
            if chunk.get("delta") == before[-1]:
                model.ready.set()
                try:
                    await asyncio.Event().wait()  # until the abort cancels the turn's task
                except asyncio.CancelledError:
                    hook_swallowed.append("on_chunk")
        attrs["on_chunk"] = on_chunk
    errors: list = []
    cls = type("Swallow", (Think,), {**attrs, "on_chat_error": lambda self, e: errors.append(e)})
    agent = cls("swallow")
    heard: list[tuple[float, dict]] = []
    runtime_of(agent).subscribe(type("L", (), {"on_chunk": lambda self, rid, chunk, cont: heard.append(
        (time.perf_counter(), chunk))})())
    task = agent.submit("stream")
    ready = asyncio.ensure_future(model.ready.wait())
    await asyncio.wait([ready, task], timeout=SAFETY, return_when=asyncio.FIRST_COMPLETED)
    assert ready.done(), f"the turn ended before streaming {before}: {task.result() if task.done() else task}"
    request_id = runtime_of(agent).streaming_turns()[0]
    agent.abort_all_requests()  # what streamed before it reaches the listeners inside this call
    aborted_at = time.perf_counter()
    result = await asyncio.wait_for(task, SAFETY)

    assert (result.status, result.error) == ("aborted", None)
    assert (model.swallowed + hook_swallowed) == [swallower]  # the cancellation really was swallowed
    assert [c for t, c in heard if t >= aborted_at] == [{"type": "abort", "reason": "cancelled"}]
    assert [c["type"] for _, c in heard].count("abort") == 1
    stored_stream = [c for segment in runtime_of(agent).store.streams.segments(request_id) for c in segment]
    # nothing stored that was not broadcast, and vice versa (the buffer stores runs of deltas merged)
    assert merged_deltas(stored_stream) == merged_deltas([c for _, c in heard])
    text = "".join(p.get("text", "") for p in agent.messages[-1]["parts"])
    assert text == "".join(before)
    assert "AFTER" not in str(cls("swallow").messages)  # reopened from SQLite
    assert agent.messages[-1]["metadata"]["aborted"] is True
    assert agent.turns()[-1]["status"] == "aborted"
    assert errors == []
    # the upstream stream was closed by the turn, before it reported the abort (not later, by GC)
    [abort_heard_at] = [t for t, c in heard if c["type"] == "abort"]
    assert len(model.closed) == 1 and model.closed[0] < abort_heard_at


# --- 6. the turn log never lies: persistence fails -----------------------------------------

@pytest.mark.parametrize("times", ["once", "every time"])
@pytest.mark.parametrize("write", ["append_to_leaf", "update"])
async def test_a_turn_whose_persistence_fails_ends_error_settled_and_the_agent_goes_on(
        write: str, times: str, monkeypatch: pytest.MonkeyPatch) -> None:
    script = S([[S.text("adding "), S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]])
    agent = counting_agent(script, tools=[add])
    failures: list[str] = []
    armed = {"on": True}
    original = getattr(MessageStore, write)

    def failing(self: MessageStore, message: dict, *args: Any) -> Any:
        if armed["on"] and message["role"] == "assistant":
            if times == "once":
                armed["on"] = False
            failures.append(message["id"])
            raise sqlite3.OperationalError("database or disk is full")
        return original(self, message, *args)

    monkeypatch.setattr(MessageStore, write, failing)
    seen = chunk_types(agent)
    result = await send(agent, "go")
    armed["on"] = False
    assert failures
    assert result.status == "error"
    assert result.error.startswith("think_nb internal error in ")  # not the model's: think_nb's storage failed
    assert result.error.endswith(": OperationalError: database or disk is full; please report it")
    assert [(t["status"], t["error"]) for t in agent.turns()] == [("error", result.error)]
    assert len(agent.chat_errors) == 1 and isinstance(agent.chat_errors[0], InternalError)
    assert isinstance(agent.chat_errors[0].__cause__, sqlite3.OperationalError)
    assert seen.count("error") == 1
    assert runtime_of(agent).streaming_turns() == []
    await next_turn_works(agent, script)


# --- 4. strict JSON: whatever a tool returns completes, and reads back from SQLite ----------

_RETURN: dict[str, Any] = {}


@tool
def give() -> Any:
    """Return the value under test."""
    return _RETURN["value"]


def _strict(text: str) -> Any:
    import json

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


@seed(11)
@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(value=jsonish, nested=st.booleans())
def test_any_tool_output_completes_and_round_trips_through_a_reopened_agent(
        value: Any, nested: bool, tmp_path_factory: pytest.TempPathFactory) -> None:
    # the jsonsafe unit property (tests/test_jsonsafe.py) checks the mapping; this one runs it end to
    # end: the stream, the SQLite row, the model's tool message and a reopened agent agree
    _RETURN["value"] = {"result": value, "rows": [value, (value,)]} if nested else value
    expected = to_json_value(_RETURN["value"])
    db = tmp_path_factory.mktemp("values") / "v.sqlite"
    script = S([[S.tool_call("give", {})], [S.text("Done.")]])
    cls = type("Giver", (Think,), {"get_model": lambda self: script.model, "get_tools": lambda self: [give]})

    async def turn() -> tuple[Any, list[dict]]:
        agent = cls("g", db=db)
        heard: list[dict] = []
        runtime_of(agent).subscribe(type("L", (), {"on_chunk": lambda self, rid, chunk, cont: heard.append(chunk)})())
        result = await asyncio.wait_for(agent.send("give"), SAFETY)
        return result, heard

    result, heard = asyncio.run(turn())
    assert (result.status, result.error) == ("completed", None)
    [output] = [c["output"] for c in heard if c["type"] == "tool-output-available"]
    assert output == expected
    tool_message = script.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert (tool_message["content"] if isinstance(expected, str) else _strict(tool_message["content"])) == expected
    reopened = cls("g", db=db)
    part = reopened.messages[1]["parts"][1]
    assert (part["state"], part["output"]) == ("output-available", expected)
    db = runtime_of(reopened).store.db
    [(raw,)] = db.read("SELECT content FROM think_messages WHERE id = ?", (reopened.messages[1]["id"],))
    assert _strict(raw)["parts"][1]["output"] == expected  # the row itself is strict JSON
    assert [t["status"] for t in reopened.turns()] == ["completed"]


async def test_a_turn_stopped_before_its_task_first_ran_ends_aborted_and_leaves_nothing_queued() -> None:
    """Stop pressed as a panel's message reaches the kernel (both frames handled before the turn's
    task first runs: a busy kernel, issue 27 §2/§4): cancelling a task that has not started runs none
    of its code, so the turn never ended; its message stayed "queued" in every panel, the status
    `submitted`, and `await` raised CancelledError (seen in a real Lab run of
    test_stop_before_anything_streamed_never_says_streaming). With nothing ahead of it, it now ends as
    a turn stopped as it starts: its message stored, an `abort` chunk, `aborted`; behind another turn,
    as a turn stopped in the queue: nothing stored."""
    agent = scripted_agent(S([[S.text("Answered.")], [S.text("Second.")]]))
    runtime = runtime_of(agent)
    ended: list[tuple[str, str]] = []
    chunks: list[str] = []

    class View:
        def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
            ended.append((request_id, status))

        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            chunks.append(chunk["type"])

    runtime.subscribe(View())
    task = agent.submit("Take your time", trigger="panel")
    agent.abort_request(task.request_id)  # before the loop first ran the task
    result = await task
    assert (result.status, ended) == ("aborted", [(task.request_id, "aborted")])
    assert "abort" in chunks and "text-delta" not in chunks
    assert runtime.queued_messages() == [] and runtime.pending_turns() == [] and not agent.is_running
    assert texts(agent) == [("user", "Take your time")]  # as a turn stopped before the model answered
    assert (await agent.send("Again")).status == "completed"
    assert texts(agent)[1:] == [("user", "Again"), ("assistant", "Answered.")]  # the model was not called before

    first = agent.submit("Slow one", trigger="panel")
    behind = agent.submit("Behind it", trigger="panel")
    agent.abort_request(behind.request_id)  # stopped in the queue before its task ran
    assert ((await behind).status, (await first).status) == ("aborted", "completed")
    assert [t for _, t in texts(agent)][-2:] == ["Slow one", "Second."] and runtime.queued_messages() == []
