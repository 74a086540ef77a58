"""The table of built-in tool families (`think_nb.tools.builtin`): it is well formed, each row's
factory offers exactly the names the row declares, a turn merges the families in the table's
slots and order, and `execute` code reaches only the families marked `in_execute`.

Adding a built-in family: its row is checked by the first two tests as it is; add a test of
what its tools do next to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import add
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.session.skills import Skill
from think_nb.testing import ScriptedModel as S
from think_nb.tools.builtin import BUILTINS, SLOTS, BuiltinContext, offered
from think_nb.tools.tool import valid_tool_name
from think_nb.workspace.execute import execute_tool

MATH = '''
def add(a, b):
    return {"result": a + b}

tools = {"add": {"description": "Add two numbers", "parameters": {"a": {"type": "number"}, "b": {"type": "number"}},
                 "required": ["a", "b"], "function": add}}
'''


class Docs:
    """A skill block's provider: a catalogue, and `load(key)`."""

    def get(self) -> str:
        return "- pandas"

    def load(self, key: str) -> str | None:
        return "Use df.groupby(...)." if key == "pandas" else None


def everything_on(script: S, tmp_path: Path) -> Think:
    """An agent for which every family that a turn merges offers all of its tools."""
    cls = type("AllOn", (Think,), {
        "get_model": lambda self: script.model, "include_workspace_tools": True, "include_extension_tools": True,
        "include_kernel_tools": True,
        "get_tools": lambda self: [add],
        "get_extensions": lambda self: [{"manifest": {"name": "math", "version": "1"}, "source": MATH}],
        "get_skills": lambda self: [Skill("sql", "SQL tips", "Prefer window functions.")],
        "configure_session": lambda self, s: (s.with_context("memory", description="Facts.")
                                              .with_context("docs", provider=Docs())
                                              .with_context("facts", provider=s.searchable("facts"))
                                              .with_searchable_history())})
    return cls("all-on", db=tmp_path / "all.sqlite")


def test_the_table_is_well_formed() -> None:
    families = [row.family for row in BUILTINS]
    names = [n for row in BUILTINS for n in row.names]
    assert len(set(families)) == len(families)
    assert len(set(names)) == len(names), "two families declare the same tool name"
    assert all(valid_tool_name(n) for n in names)
    assert all(row.slot in SLOTS and row.when and row.names for row in BUILTINS)
    assert all(row.slot == "first" for row in BUILTINS if row.in_execute)


@pytest.mark.parametrize("row", BUILTINS, ids=[row.family for row in BUILTINS])
async def test_each_family_offers_exactly_the_names_it_declares(row: object, tmp_path: Path) -> None:
    agent = everything_on(S([]), tmp_path)
    try:
        made = await row.make(BuiltinContext(runtime_of(agent)))  # type: ignore[attr-defined]
        assert tuple(made) == row.names  # type: ignore[attr-defined]
        assert all(tool.name == name for name, tool in made.items())
    finally:
        await agent.shutdown()


async def test_a_turn_merges_the_families_by_slot_in_table_order(tmp_path: Path) -> None:
    script = S([[S.text("ok")]])
    agent = everything_on(script, tmp_path)
    assert (await agent.send("hi")).status == "completed"
    sent = [t["function"]["name"] for t in script.requests[0]["tools"]]
    first = [n for row in BUILTINS if row.slot == "first" for n in row.names]
    memory = [n for row in BUILTINS if row.slot == "memory" for n in row.names]
    assert sent == [*first, "add", "math_add", *memory]  # get_tools(), then the loaded extension
    assert "execute" not in sent and "fetch" not in sent  # opt-in families are never merged
    await agent.shutdown()


async def test_execute_code_reaches_the_in_execute_families_and_get_tools(tmp_path: Path) -> None:
    agent = everything_on(S([]), tmp_path)
    agent.workspace.pipe_file("/a.txt", b"alpha")
    reached = await offered(BuiltinContext(runtime_of(agent)), "first", in_execute=True)
    assert tuple(reached) == next(row.names for row in BUILTINS if row.family == "workspace")
    code = ("try:\n    list_extensions()\n    seen = 'reached'\nexcept NameError:\n    seen = 'not reached'\n"
            "[tools.read(path='/a.txt')['content'], add(a=1, b=2), seen]")
    assert (await execute_tool(agent).invoke({"code": code}))["result"] == ["1\talpha", 3, "not reached"]
    await agent.shutdown()
