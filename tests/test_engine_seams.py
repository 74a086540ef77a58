"""The engine's declared seams: one hook site, a readable live trace, the stream recorded without
any view, sync readers of async overridables, and the structure rules (no SQL outside store/, no
module reaching into an agent's privates)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from agents import scripted_agent
from think_nb import Think, client_tool
from think_nb.binding import runtime_of
from think_nb.testing import ScriptedModel as S

PACKAGE = Path(__file__).resolve().parent.parent / "think_nb"


def test_the_trace_of_a_paused_turn_is_readable_while_it_waits() -> None:
    agent = scripted_agent(S([[S.text("Adding."), S.tool_call("add", {"a": 2, "b": 40})], [S.text("42")]]),
                           name="live")
    stepper = agent.step("2+40?")
    event = stepper.next()
    while event.hook != "before_tool_call":
        event = stepper.next()
    live = agent.trace()
    assert live.attrs["request_id"] == stepper.request_id
    assert "before_turn" in live["hook"].tolist()
    assert "text-delta" in live["hook"].tolist()  # the chunks streamed so far
    assert stepper.run().status == "completed"
    assert agent.trace()["hook"].tolist()[-1] == "on_chat_response"
    tools = agent.trace()["tool"].tolist()  # a row without a tool says None (pandas 3 would print NaN)
    assert "add" in tools and None in tools and all(t is None or isinstance(t, str) for t in tools)


def test_on_chat_error_fires_through_the_hook_site_traced_and_pausable() -> None:
    calls = []

    def on_chat_error(self: Think, error: BaseException) -> str:
        calls.append(error)
        return "Replaced."

    agent = scripted_agent(S([[S.error("upstream exploded")]]), name="err", on_chat_error=on_chat_error)
    stepper = agent.step("go")
    hooks = []
    event = stepper.next()
    while event.hook != "done":
        hooks.append(event.hook)
        event = stepper.next()
    assert "on_chat_error" in hooks  # a pause, like every other hook
    assert event.result.status == "error" and event.result.error == "Replaced."
    assert len(calls) == 1
    row = agent.trace().query("hook == 'on_chat_error'")
    assert len(row) == 1 and "Replaced." in row["summary"].iloc[0]


async def test_on_chunk_is_traced_on_its_chunk_rows() -> None:
    seen = []
    agent = scripted_agent(S([[S.text("hello world", chunk_size=2)]]), name="chunky",
                           on_chunk=lambda self, chunk: seen.append(chunk["type"]))
    await agent.send("hi")
    deltas = agent.trace().query("hook == 'text-delta'")
    assert seen.count("text-delta") == 6
    assert "on_chunk ×6" in deltas["summary"].iloc[0]


async def test_the_engine_records_the_stream_with_no_view_attached() -> None:
    agent = scripted_agent(S([[S.text("recorded without a panel")]]), name="noview")
    assert not runtime_of(agent).has_listeners()
    result = await agent.send("hi")
    replay = runtime_of(agent).replay_stream(result.request_id)
    assert replay is not None
    chunks, continuation, finished = replay
    assert finished and not continuation
    assert "".join(c.get("delta", "") for c in chunks if c["type"] == "text-delta") == "recorded without a panel"


async def test_sync_readers_see_what_an_async_get_model_and_get_tools_gave_the_last_turn() -> None:
    script = S([[S.text("ok")]])
    where = client_tool("where_am_i", "The page's URL.", {"type": "object", "properties": {}},
                        js="return location.href;")

    class Async(Think):
        async def get_model(self) -> str:
            return script.model

        async def get_tools(self) -> list:
            return [where]

    agent = Async("async")
    assert runtime_of(agent).client_tool_specs() == []  # nothing resolved yet: a sync caller cannot run them
    await agent.send("hi")
    assert [s["name"] for s in runtime_of(agent).client_tool_specs()] == ["where_am_i"]
    assert agent.session.model_name() == script.model


def _python_files(exclude: tuple[str, ...]) -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if not any(part in exclude for part in p.relative_to(PACKAGE).parts)]


def test_no_sql_outside_the_store() -> None:
    sql = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE FROM|CREATE TABLE)\b[^\n]*\b(FROM|INTO|SET|WHERE|TABLE)\b")
    offenders = []
    for path in _python_files(("store",)):
        offenders.extend(f"{path.relative_to(PACKAGE)}:{node.lineno}" for node in ast.walk(ast.parse(path.read_text()))
                         if isinstance(node, ast.Constant) and isinstance(node.value, str) and sql.search(node.value))
    assert offenders == []


def test_no_module_reaches_into_an_agents_privates() -> None:
    """Only agent.py (Think) and binding.py (where the runtime is kept) touch an agent's private
    attributes; everything else uses the declared seams (`runtime_of(agent)`, the protocols)."""
    offenders = []
    for path in _python_files(()):
        if path.name in ("agent.py", "binding.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if name in ("agent", "_agent", "host", "child", "parent", "runtime"):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}.{node.attr}")
    assert offenders == []


def test_think_holds_no_machinery() -> None:
    """No internal hook is on the class users subclass: nothing the engine, the hub or a subsystem
    calls (their protocols' members) is a name of Think, but the agent's `name`; Think's own
    namespace is its declared names (`think_nb.names`) and dunders only."""
    from think_nb import names
    from think_nb.panel.hub import PanelSource
    from think_nb.turns.host import AgentHost

    machinery = set()
    for protocol in (AgentHost, PanelSource):
        machinery |= {n for n in dir(protocol) if not n.startswith("_")}
    assert machinery - {"name", "messages", "is_running", "session", "max_steps", "message_concurrency",
                        "include_mcp_tools", "chat_stream_stall_timeout", "get_model", "get_system_prompt",
                        "get_tools", "repair_interrupted_tool_part", "switch_session", "get_branches",
                        "list_sessions", "send_reasoning"} & set(dir(Think)) == set()
    own = {n for n in vars(Think) if not n.startswith("__")}
    assert own == set(names.RESERVED) | names.OVERRIDABLE | names.SETTINGS


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The think_nb modules `path` imports: every import, at the top, in a function or under
    TYPE_CHECKING (a type-checking import is an edge too)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = package.removesuffix(".__init__") if package.endswith(".__init__") else package.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in modules:
                target = target.rsplit(".", 1)[0] if "." in target else ""
            if target and target.startswith("think_nb"):
                found.add(target)
    return found


def test_no_import_cycle_between_modules() -> None:
    """The modules of think_nb form no cycle, type-checking-only and function-level imports
    included (a package's `__init__` importing its own modules is not an edge back)."""
    files = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in PACKAGE.rglob("*.py")}
    graph = {m: {t for t in _imports(p, set(files)) if t != m and not (p.name == "__init__.py" and
                                                                        t.startswith(m + "."))}
             for m, p in files.items()}
    cycles, seen = [], set()
    for start in graph:  # a depth-first search from every module; report each cycle once
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    key = frozenset(path)
                    if key not in seen:
                        seen.add(key)
                        cycles.append(" -> ".join([*path, start]))
                elif nxt not in path and nxt > start:
                    stack.append((nxt, [*path, nxt]))
    assert cycles == []


def test_the_conversation_is_the_only_writer_of_messages() -> None:
    writes = re.compile(r"\bmessages\.(append_to_leaf|append|extend|update|set_leaf|clear)\(")
    offenders = []
    for path in _python_files(("store",)):
        if path.name == "conversation.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if writes.search(line) and "store" in line:
                offenders.append(f"{path.relative_to(PACKAGE)}:{n}")
    assert offenders == []


def test_subsystems_never_see_think_or_the_runtime() -> None:
    """The runtime composes the subsystems from above: none of them (session, MCP, extensions,
    schedules, submissions, recovery, the turn engine, the hub, workspace, tools, store, models,
    messages, kernel tools) imports `think_nb.agent` or `think_nb.runtime`, not even for types."""
    below = ("session", "mcp", "extensions", "schedules", "turns", "workspace", "tools", "store", "models",
             "messages", "kernel")
    files = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in PACKAGE.rglob("*.py")}
    offenders = []
    for module, path in files.items():
        top = path.relative_to(PACKAGE).parts[0]
        if top in below or path.name in ("submissions.py", "hub.py", "conversation.py", "binding.py", "names.py"):
            bad = _imports(path, set(files)) & {"think_nb.agent", "think_nb.runtime"}
            offenders += [f"{module} imports {b}" for b in sorted(bad)]
    assert offenders == []
