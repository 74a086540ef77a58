"""Every exception a tool raises is that call's `output-error`, which the model reads (issue 28 §11).

The property: for any exception a tool function raises — coroutine signals (`GeneratorExit`,
`StopIteration`, `StopAsyncIteration`), `SystemExit`, a bare `BaseException` subclass, an
exception whose `__str__` raises or returns a non-string — from a sync, async or streaming tool,
called directly by the model or from `execute`'s code, the turn completes, the call is
`output-error` with a one-line text naming the exception's type, and the model's next step is
sent that text. Nothing blames the model or think_nb.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from think_nb import Think, tool
from think_nb.errors import describe
from think_nb.testing import FunctionModel, ModelCallInfo
from think_nb.testing import ScriptedModel as S
from think_nb.workspace.execute import execute_tool


class StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ broke")


class StrNotText(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class Custom(BaseException):
    pass


RAISES: dict[str, Callable[[], BaseException]] = {
    "GeneratorExit": GeneratorExit,
    "StopIteration": StopIteration,
    "StopAsyncIteration": StopAsyncIteration,
    "SystemExit": lambda: SystemExit(3),
    "Custom": lambda: Custom("base"),
    "StrRaises": StrRaises,
    "StrNotText": StrNotText,
    "Unprintable": Unprintable,
    "ZeroDivisionError": lambda: ZeroDivisionError("division by zero"),
}


def failing_tool(kind: str, make: Callable[[], BaseException]):
    if kind == "sync":
        def broken() -> str:
            """Always fails."""
            raise make()
    elif kind == "async":
        async def broken() -> str:
            """Always fails."""
            raise make()
    else:
        async def broken():  # a streaming tool: one preliminary value, then the failure
            """Always fails."""
            yield "partial"
            raise make()
    return tool(broken)


def agent_with(tools: list, model: str, path: Path) -> Think:
    cls = type("Failing", (Think,), {"get_model": lambda self: model, "get_tools": lambda self: tools})
    return cls("f", db=path)


@pytest.mark.parametrize("kind", ["sync", "async", "streaming"])
@pytest.mark.parametrize("raised", sorted(RAISES))
async def test_a_tool_that_raises_anything_is_its_calls_output_error(tmp_path: Path, kind: str, raised: str) -> None:
    seen: list[str] = []

    def reply(messages: list[dict], info: ModelCallInfo):
        if messages[-1]["role"] == "tool":
            seen.append(messages[-1]["content"])
            return "The tool failed; I will not retry."
        return S.tool_call("broken", {})

    fm = FunctionModel(reply)
    agent = agent_with([failing_tool(kind, RAISES[raised])], fm.model, tmp_path / "a.sqlite")
    result = await agent.send("go")

    assert (result.status, result.error) == ("completed", None)
    [part] = [p for m in agent.messages for p in m["parts"] if p["type"] == "tool-broken"]
    assert part["state"] == "output-error"
    assert part["errorText"].split(":")[0] == raised
    assert "\n" not in part["errorText"]
    assert seen and part["errorText"] in seen[0]  # the model was told
    assert agent.messages[-1]["parts"][-1]["text"] == "The tool failed; I will not retry."


@pytest.mark.parametrize("raised", sorted(RAISES))
async def test_a_tool_called_from_execute_that_raises_anything_is_an_exception_in_the_code(
        tmp_path: Path, raised: str) -> None:
    broken = failing_tool("sync", RAISES[raised])
    code = "try:\n    broken()\nexcept Exception as e:\n    print('caught', e)\n'went on'"
    script = S([[S.tool_call("execute", {"code": code})], [S.text("done")]])

    class Coder(Think):
        def get_model(self):
            return script.model

        def get_tools(self):
            return [broken, execute_tool(self)]

    agent = Coder("c", db=tmp_path / "c.sqlite")
    result = await agent.send("run it")
    assert (result.status, result.error) == ("completed", None)
    [part] = [p for m in agent.messages for p in m["parts"] if p["type"] == "tool-execute"]
    assert part["state"] == "output-available", part
    assert part["output"]["result"] == "went on"
    assert part["output"]["stdout"].startswith(f"caught broken: {raised}")


def test_describe_never_raises_and_names_the_type() -> None:
    for name, make in RAISES.items():
        text = describe(make())
        assert isinstance(text, str) and text.startswith(name), (name, text)
    assert describe(ValueError("bad")) == "ValueError: bad"
    assert describe(KeyError()) == "KeyError"
    assert describe(StrRaises()) == "StrRaises: StrRaises()"  # its repr, when its str raises
