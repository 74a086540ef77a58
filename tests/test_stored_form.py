"""What is kept in memory is exactly what is stored (issue 28 §1), as a property over hostile
values x every entry path: after a non-strict-JSON value (NaN, ±Infinity, a set, bytes, a tuple,
non-str dict keys, an `object()`, a lone surrogate in text, nested mixes) enters through `submit`,
`submit_messages`, `save_messages` (a list and a callable), `import_messages`, a panel frame,
`send`, `add_tool_output` or a tool's return value, `agent.messages` equals what a NEW agent on the
same SQLite file reads, and a following `save_messages(lambda cur: [*cur, m])` works (it failed
"a different message with this id is already stored" while memory held the raw value).

A message nested 3,000 or 100,000 containers deep is refused with one `UserError` line naming
the fix, never a `RecursionError`, and nothing stored is lost.
"""

from __future__ import annotations

import asyncio
import decimal
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import helpers_comm
from helpers_comm import custom_msgs, from_js
from panels import chat_request
from think_nb import Think, client_tool, tool
from think_nb.errors import UserError
from think_nb.panel import protocol
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S

_files = itertools.count()

TEXTS = st.lists(st.sampled_from(["a", "é", " ", "\ud800", "\udfff", "\U0001f600", "\x00", "<b>"]),
                 min_size=1, max_size=6).map("".join)
LEAVES = st.one_of(
    st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0, 1e308, decimal.Decimal("NaN")]),
    st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.booleans(), st.none(), TEXTS,
    st.binary(max_size=6), st.builds(object), st.sets(st.one_of(st.integers(), TEXTS), max_size=3),
    st.frozensets(st.integers(), max_size=3), st.integers(-(2**70), 2**70),
)
KEYS = st.one_of(TEXTS, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=True),
                 st.tuples(st.integers(), TEXTS))
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8)


@tool
def give(n: int) -> object:
    """Return the value under test."""
    return CURRENT[0]


CURRENT: list[Any] = [None]
tz = client_tool("time_zone", "The user's time zone.", js="return 'UTC';")


def make(db: Path, call: dict | None = None) -> Think:
    """An agent that answers "Done."; with `call` (a ScriptedModel tool call), its first step is that call."""
    script = S(([[call]] if call else []) + [[S.text("Done.")] for _ in range(12)])

    class Kept(Think):
        include_workspace_tools = False

        def get_model(self) -> str:
            return script.model

        def get_tools(self) -> list:
            return [give, tz]

    return Kept("kept", db=db)


def message(value: Any, text: str = "hi") -> dict:
    return {"role": "user", "metadata": {"v": value},
            "parts": [{"type": "text", "text": text}, {"type": "data-x", "data": value},
                      {"type": "x-unknown", "data": value, "more": [value]}]}


def settled(value: Any) -> list[dict]:
    """An exported-looking transcript holding `value` (a user message and a settled tool call)."""
    return [{**message(value), "id": "u1"},
            {"id": "a1", "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "tool-give", "toolCallId": "g1", "state": "output-available", "input": {"n": 1},
                 "output": value}]}]


async def via_submit(db: Path, value: Any) -> Think:
    agent = make(db)
    await agent.submit(message(value))
    return agent


async def via_submit_messages(db: Path, value: Any) -> Think:
    agent = make(db)
    await agent.submit_messages([message(value)])
    assert agent.submissions_task is not None
    await agent.submissions_task
    return agent


async def via_save_messages(db: Path, value: Any) -> Think:
    agent = make(db)
    await agent.save_messages([message(value)])
    return agent


async def via_save_messages_fn(db: Path, value: Any) -> Think:
    agent = make(db)
    await agent.save_messages(lambda current: [*current, message(value)])
    return agent


async def via_import(db: Path, value: Any) -> Think:
    agent = make(db)
    agent.import_messages(settled(value))
    return agent


async def via_panel_frame(db: Path, value: Any) -> Think:
    agent = make(db)
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r-kept", {**message(value), "id": "m-kept"}))
    assert await agent.wait_until_stable(timeout=30)
    errors = [c["errorText"] for f in custom_msgs(panel) if f["type"] == protocol.USE_CHAT_RESPONSE
              for c in f["chunks"] if c["type"] == "error"]
    panel.close()
    assert errors == []
    return agent


async def via_send(db: Path, value: Any) -> Think:
    agent = make(db)
    text = value if isinstance(value, str) else repr(value)  # send takes text: its lone surrogates are the point
    await agent.send(text + "\ud800")
    return agent


async def via_add_tool_output(db: Path, value: Any) -> Think:
    agent = make(db, S.tool_call("time_zone", {}, id="tz1"))
    await agent.send("where?")
    task = agent.add_tool_output("tz1", value)
    assert task is not None
    assert (await task).status == "completed"
    return agent


async def via_tool_return(db: Path, value: Any) -> Think:
    agent = make(db, S.tool_call("give", {"n": 1}, id="g1"))
    CURRENT[0] = value
    assert (await agent.send("give")).status == "completed"
    return agent


ENTRY_PATHS: list[Callable[[Path, Any], Awaitable[Think]]] = [
    via_submit, via_submit_messages, via_save_messages, via_save_messages_fn, via_import, via_panel_frame,
    via_send, via_add_tool_output, via_tool_return]


def reread(agent: Think) -> list[dict]:
    """The branch as a NEW agent on the same file reads it (what survives a restart)."""
    return type(agent)(agent.name, db=agent.db_path).messages


async def check_kept(path: Callable[[Path, Any], Awaitable[Think]], db: Path, value: Any) -> None:
    agent = await path(db, value)
    assert len(agent.messages) >= 2
    assert agent.messages == reread(agent)
    follow = {"role": "user", "parts": [{"type": "text", "text": "and then?"}]}
    result = await agent.save_messages(lambda current: [*current, follow])
    assert result.status == "completed", result.error
    assert agent.messages == reread(agent)
    assert agent.messages[-2]["parts"][0]["text"] == "and then?"


@pytest.fixture
def comm(monkeypatch: pytest.MonkeyPatch) -> None:
    helpers_comm.install(monkeypatch)


@pytest.mark.usefixtures("comm")
@pytest.mark.parametrize("path", ENTRY_PATHS, ids=lambda p: p.__name__)
def test_memory_is_what_is_stored_for_any_value_through_any_entry_path(path: Any, tmp_path_factory: Any) -> None:
    folder = tmp_path_factory.mktemp("kept")

    @settings(max_examples=25, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(VALUES)
    def prop(value: Any) -> None:
        asyncio.run(check_kept(path, folder / f"k{next(_files)}.sqlite", value))

    prop()


@pytest.mark.usefixtures("comm")
@pytest.mark.parametrize("path", ENTRY_PATHS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("value", [float("nan"), {1, 2}, b"\x00\xff", (1, "a"), {1: "one", None: 2}, object(),
                                   "\ud800", [float("inf"), {"k": {3, 4}}]],
                         ids=["nan", "set", "bytes", "tuple", "keys", "object", "surrogate", "mixed"])
async def test_each_named_value_through_each_entry_path(path: Any, value: Any, tmp_path: Path) -> None:
    await check_kept(path, tmp_path / "k.sqlite", value)


def nested(depth: int) -> dict:
    top = inner = {}
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return top


async def deep_via_submit(agent: Think, value: Any) -> None:
    await agent.submit(message(value))


async def deep_via_submit_messages(agent: Think, value: Any) -> None:
    await agent.submit_messages([message(value)])


async def deep_via_save_messages(agent: Think, value: Any) -> None:
    await agent.save_messages([message(value)])


async def deep_via_save_messages_fn(agent: Think, value: Any) -> None:
    result = await agent.save_messages(lambda current: [*current, message(value)])
    if result.status == "error":
        raise UserError(result.error)


async def deep_via_import(agent: Think, value: Any) -> None:
    agent.create_session()  # an empty session of the same agent
    agent.import_messages(settled(value))


async def deep_via_panel_frame(agent: Think, value: Any) -> None:
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r-deep", {**message(value), "id": "m-deep"}))
    assert await agent.wait_until_stable(timeout=30)
    errors = [c["errorText"] for f in custom_msgs(panel) if f["type"] == protocol.USE_CHAT_RESPONSE
              for c in f["chunks"] if c["type"] == "error"]
    panel.close()
    if errors:
        raise UserError(errors[0])


DEEP_PATHS = [deep_via_submit, deep_via_submit_messages, deep_via_save_messages, deep_via_save_messages_fn,
              deep_via_import, deep_via_panel_frame]


DEEP = [3_000, pytest.param(100_000, marks=pytest.mark.allow_stall(
    "100,000 levels: the refusal and the bounded copy walk the whole nesting on the loop (~0.6 s CPU)"))]


@pytest.mark.usefixtures("comm")
@pytest.mark.parametrize("depth", DEEP)
@pytest.mark.parametrize("path", DEEP_PATHS, ids=lambda p: p.__name__)
async def test_a_deeply_nested_message_is_refused_in_one_line_and_loses_nothing(path: Any, depth: int,
                                                                                 tmp_path: Path) -> None:
    agent = make(tmp_path / "d.sqlite")
    await agent.send("kept")
    before, session = agent.messages, agent.session_id
    with pytest.raises(UserError) as refused:
        await path(agent, nested(depth))
    text = str(refused.value)
    assert "\n" not in text and "nested more than 200 levels deep" in text and "json.dumps" in text
    if path is deep_via_import:
        assert agent.messages == []  # the new session stayed empty
        agent.switch_session(session)
    assert agent.messages == before == reread(agent)
    assert (await agent.save_messages(lambda current: [*current, message(1)])).status == "completed"


@pytest.mark.parametrize("depth", DEEP)
@pytest.mark.parametrize("call", ["tool", "client"])
async def test_a_deeply_nested_tool_result_is_bounded_and_kept_as_stored(call: str, depth: int,
                                                                          tmp_path: Path) -> None:
    """A tool's (or client tool's) result is engine data, bounded where it enters
    (`jsonsafe.MAX_DEPTH`, "<too deep: dict>"), never a RecursionError; memory is what is stored."""
    db = tmp_path / "t.sqlite"
    if call == "tool":
        CURRENT[0] = nested(depth)
        await check_kept(via_tool_return, db, nested(depth))
    else:
        await check_kept(via_add_tool_output, db, nested(depth))
    text = repr(reread(make(db))[1]["parts"])
    assert "<too deep: dict>" in text
