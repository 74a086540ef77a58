"""The built-in tools: every tool family think_nb itself gives the model, one `Builtin` row each.

    BUILTINS                                    # the rows, in merge order
    await offered(BuiltinContext(agent), "first")   # {name: Tool} of one slot's families, now

A row names a family and the tools it may offer (`names`), says where a turn merges it (`slot`)
and when it is offered (`when`; its factory returns `{}`, or fewer tools, otherwise), and makes
it (`make(ctx)`, async, reading the agent through `BuiltinContext`). A turn's tools
(`think_nb.turns.assemble.tools`), later sources winning a clash:

    slot "first" → get_tools() → loaded extensions' tools → slot "memory" → MCP tools → client tools

Rows with `in_execute` are also the tools `execute` code reaches (`tools.<name>`, before
`get_tools()`). Slot "opt-in" families are never merged by a turn: an agent returns them from its
`get_tools()` (`execute_tool(self)`, `fetch_tool(allowed_hosts=...)`, `DEMO_TOOLS`); their row
makes them with defaults, so the table and its test cover them too.

Adding a built-in tool: a row here (and its factory, importing its module lazily) and a test
in `tests/test_builtin_tools.py`; that test also checks every row's names against its factory.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from think_nb.tools.tool import Tool

Session = Any
"""The agent's `think_nb.session.builder.Session` (not imported: the session offers these tools,
so this module must not import it back, not even for types)."""

Slot = Literal["first", "memory", "opt-in"]
SLOTS: tuple[Slot, ...] = ("first", "memory", "opt-in")


class BuiltinContext:
    """What the factories read for one assembly: the agent (`host`, an `AgentHost`), and, fetched
    once on first use, its session and its extension tools (`host.extension_tools()`: the
    model's `load_extension`/`list_extensions` and the loaded extensions' tools)."""

    def __init__(self, host: Any, session: Session | None = None) -> None:
        self.host = host
        self._session = session
        self._extension_tools: dict[str, Tool] | None = None

    async def session(self) -> Session:
        if self._session is None:
            self._session = await self.host.session_ready()
        return self._session

    async def extension_tools(self) -> dict[str, Tool]:
        if self._extension_tools is None:
            self._extension_tools = await self.host.extension_tools()
        return self._extension_tools


@dataclass(frozen=True)
class Builtin:
    """One family of built-in tools.

    Attributes:
        family: its name (unique).
        names: every tool name it may offer, in the order it offers them.
        slot: "first" (before `get_tools()`), "memory" (after the loaded extensions' tools) or
            "opt-in" (not merged: the agent returns it from `get_tools()`).
        when: when it is offered, one line.
        make: `async make(ctx) -> {name: Tool}`, the tools it offers now (`{}`: none).
        in_execute: also given to `execute` code as `tools.<name>`.
    """

    family: str
    names: tuple[str, ...]
    slot: Slot
    when: str
    make: Callable[[BuiltinContext], Awaitable[dict[str, Tool]]]
    in_execute: bool = False


# -- the factories -------------------------------------------------------------------------------
WORKSPACE_TOOLS = ("read", "write", "edit", "list", "find", "grep", "delete")
KERNEL_TOOLS = ("list_variables", "notebook_history", "describe_variable", "run_code")
EXTENSION_TOOLS = ("load_extension", "list_extensions")


async def _workspace(ctx: BuiltinContext) -> dict[str, Tool]:
    return dict(await ctx.host.aworkspace_tools())  # the agent decides (include_workspace_tools) and caches


async def _kernel(ctx: BuiltinContext) -> dict[str, Tool]:
    return dict(ctx.host.kernel_tools())  # the agent decides (include_kernel_tools) and caches


async def _extensions(ctx: BuiltinContext) -> dict[str, Tool]:
    given = await ctx.extension_tools()  # the agent includes them when include_extension_tools
    return {n: given[n] for n in EXTENSION_TOOLS if n in given}


async def _context(ctx: BuiltinContext) -> dict[str, Tool]:
    from think_nb.session.tools import context_tools

    session = await ctx.session()
    return context_tools(session, await session.ablocks())


async def _skills(ctx: BuiltinContext) -> dict[str, Tool]:
    from think_nb.session.skills import skill_tools

    session = await ctx.session()
    registry = session.skill_registry()
    return skill_tools(registry, session.skill_state) if registry else {}


async def _session_search(ctx: BuiltinContext) -> dict[str, Tool]:
    from think_nb.session.tools import history_search_tool

    session = await ctx.session()
    return {"session_search": history_search_tool(session)} if session.searchable_history else {}


async def _execute(ctx: BuiltinContext) -> dict[str, Tool]:
    from think_nb.workspace.execute import execute_tool

    return {"execute": execute_tool(ctx.host.agent)}


async def _fetch(ctx: BuiltinContext) -> dict[str, Tool]:
    from think_nb.workspace.fetch import fetch_tool

    return {"fetch": fetch_tool()}


async def _demo(ctx: BuiltinContext) -> dict[str, Tool]:
    from think_nb.tools.demo import DEMO_TOOLS
    from think_nb.tools.toolset import resolve_tools

    return resolve_tools(DEMO_TOOLS)


BUILTINS: tuple[Builtin, ...] = (
    Builtin("workspace", WORKSPACE_TOOLS, "first", "include_workspace_tools (None: unless the model is the "
            "embedded LOCAL_MODEL); workspace_approval gates delete and overwrites", _workspace, in_execute=True),
    Builtin("kernel", KERNEL_TOOLS, "first", "include_kernel_tools = True / 'ask' (run_code needs approval), "
            "'allow' or 'off' (no run_code); or get_tools() returns kernel_tools(run=...)", _kernel),
    Builtin("extensions", EXTENSION_TOOLS, "first", "include_extension_tools = True", _extensions),
    Builtin("context", ("set_context", "load_context", "unload_context", "search_context"), "memory",
            "set_context for writable blocks, load/unload_context for skill blocks, search_context for "
            "search blocks (configure_session)", _context),
    Builtin("skills", ("activate_skill", "read_skill_resource"), "memory", "get_skills() returns skills", _skills),
    Builtin("session_search", ("session_search",), "memory", "session.with_searchable_history()",
            _session_search),
    Builtin("execute", ("execute",), "opt-in", "get_tools() returns execute_tool(self)", _execute),
    Builtin("fetch", ("fetch",), "opt-in", "get_tools() returns fetch_tool(allowed_hosts=[...])", _fetch),
    Builtin("demo", ("add", "multiply", "current_time"), "opt-in", "get_tools() returns DEMO_TOOLS "
            "(think-nb chat)", _demo),
)


async def offered(ctx: BuiltinContext, slot: Slot, *, in_execute: bool = False) -> dict[str, Tool]:
    """`{name: Tool}` the families of `slot` offer now, in table order (a later family wins a
    clash); with `in_execute`, only the families `execute` code reaches."""
    out: dict[str, Tool] = {}
    for row in BUILTINS:
        if row.slot == slot and (row.in_execute or not in_execute):
            out.update(await row.make(ctx))
    return out
