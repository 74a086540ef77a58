"""A tool that arrives later with a gated tool's name never runs ungated (issue 28 §7).

Later sources win a name (Think's merge), but the property holds over every later source: a
call by the name of a tool that needs approval waits for approval, whichever tool serves it —
a model-written extension's tool, an MCP server's tool (`keep_gates`), or a client tool the panel
declares (refused: it would run in the browser, so the gated tool keeps the name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import scripted_agent
from helpers_comm import from_js
from panels import chat_request, until
from think_nb import Think, tool
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S
from think_nb.tools.tool import Tool
from think_nb.turns.assemble import keep_gates

MATH = '''
def add(a, b):
    return {"result": a + b}

tools = {"add": {"description": "Add two numbers",
                 "parameters": {"a": {"type": "number"}, "b": {"type": "number"}},
                 "required": ["a", "b"], "function": add}}
'''


def parts(agent: Think, name: str) -> list[dict]:
    return [p for m in agent.messages for p in m["parts"] if p["type"] == f"tool-{name}"]


async def test_an_extension_tool_over_a_gated_tool_keeps_the_gate(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(needs_approval=True)
    def math_add(a: float, b: float) -> str:
        """A gated local tool with the extension's tool name."""
        ran.append("local")
        return "local"

    script = S([[S.tool_call("math_add", {"a": 1, "b": 1})], [S.text("2")]])
    cls = type("Ext", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False,
                                 "get_tools": lambda self: [math_add]})
    agent = cls("x", db=tmp_path / "ext.sqlite")
    await agent.load_extension({"name": "math", "version": "1"}, MATH)  # as the model's load_extension would
    result = await agent.send("add")
    assert result.status == "completed"
    [call] = parts(agent, "math_add")
    assert call["state"] == "approval-requested"  # the extension's tool serves the name, gated
    await agent.approve(call["toolCallId"])
    await agent.wait_until_stable(timeout=60)
    assert parts(agent, "math_add")[0]["output"] == {"result": 2} and ran == []  # the extension's ran, approved
    await agent.shutdown()


async def test_a_client_tool_declared_by_the_panel_cannot_take_a_gated_tools_name(recording_comm: Any) -> None:
    ran: list[str] = []

    @tool(needs_approval=True)
    def page_title() -> str:
        """A gated kernel tool the panel tries to shadow."""
        ran.append("kernel")
        return "kernel title"

    script = S([[S.tool_call("page_title", {})], [S.text("done")]])
    agent = scripted_agent(script, tools=[page_title])
    panel = ChatPanel(agent)
    shadow = {"name": "page_title", "description": "The page title.",
              "parameters": {"type": "object", "properties": {}}}
    from_js(panel, chat_request("r", clientTools=[shadow]))
    await until(lambda: [t["status"] for t in agent.turns()] == ["completed"], "the turn to pause for approval", 60)
    [call] = parts(agent, "page_title")
    assert call["state"] == "approval-requested"
    assert [t["function"]["description"] for t in script.requests[0]["tools"]] == [
        "A gated kernel tool the panel tries to shadow."]
    await agent.approve(call["toolCallId"])
    await agent.wait_until_stable(timeout=60)
    assert ran == ["kernel"]


def test_keep_gates_over_any_gate_and_only_over_gates() -> None:
    def predicate(args: dict) -> bool:
        return bool(args.get("path", "").startswith("/"))

    earlier = {"rm": Tool("rm", "d", {"type": "object", "properties": {}}, lambda: None, needs_approval=predicate),
               "ls": Tool("ls", "d", {"type": "object", "properties": {}}, lambda: None)}
    empty = {"type": "object", "properties": {}}
    later = {name: Tool(name, "later", empty, lambda: None) for name in ("rm", "ls", "new")}
    kept = keep_gates(earlier, later, "MCP")
    assert kept["rm"].needs_approval is predicate and kept["rm"].description == "later"
    assert kept["ls"].needs_approval is False and kept["new"].needs_approval is False
    assert later["rm"].needs_approval is False  # a copy: the source's own tool is not changed


WRITER = '''
async def wipe(path):
    await delete_file(path)
    return "deleted"

tools = {"wipe": {"description": "Delete a file", "parameters": {"path": {"type": "string"}},
                  "required": ["path"], "function": wipe}}
'''


async def test_when_writes_are_gated_loading_an_extension_that_can_write_needs_approval(tmp_path: Path) -> None:
    """issue 28 §6: with `workspace_approval`, the model's `load_extension(workspace_access="read-write")`
    (or with network hosts) waits for approval; read-only extensions load at once."""
    def load(name: str, **extra: object) -> Any:
        return S.tool_call("load_extension", {"name": name, "version": "1", "source": WRITER, **extra})

    cases = [({"workspace_access": "read"}, "output-available"), ({"workspace_access": "read-write"},
             "approval-requested"), ({"network": ["example.com"]}, "approval-requested"), ({}, "output-available")]
    for n, (permissions, state) in enumerate(cases):
        script = S([[load(f"e{n}", **permissions)], [S.text("done")]])
        cls = type("Gated", (Think,), {"get_model": lambda self, s=script: s.model, "include_extension_tools": True,
                                       "workspace_approval": True})
        agent = cls(f"g{n}", db=tmp_path / "g.sqlite")
        assert (await agent.send("load it")).status == "completed"
        assert [p["state"] for p in parts(agent, "load_extension")] == [state], permissions
        assert list(agent.extensions()["name"]) == ([f"e{n}"] if state == "output-available" else [])
        await agent.shutdown()


async def test_a_real_mcp_servers_tool_over_a_gated_local_tool_keeps_the_gate(tmp_path: Path) -> None:
    """§7 over a real MCP server (tests/mcp_server.py over stdio): its `delete_file` arrives as
    `demo_delete_file`, the name of a gated local tool. The call waits for approval; approved, the
    MCP tool serves it (later sources win) and the local one never runs; denied, nothing runs."""
    import sys

    server = f"{sys.executable} {Path(__file__).with_name('mcp_server.py')} stdio"
    ran: list[str] = []

    @tool(needs_approval=True)
    def demo_delete_file(path: str) -> str:
        """A gated local tool with the MCP tool's name."""
        ran.append(path)
        return "local"

    script = S([[S.tool_call("demo_delete_file", {"path": "/a"})], [S.text("approved")],
                [S.tool_call("demo_delete_file", {"path": "/b"})], [S.text("denied")]])
    cls = type("McpGate", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False,
                                     "get_tools": lambda self: [demo_delete_file]})
    agent = cls("x", db=tmp_path / "mcp.sqlite")
    assert (await agent.add_mcp_server("demo", server))["state"] == "connected"
    assert (await agent.send("delete /a")).status == "completed"
    [first] = parts(agent, "demo_delete_file")
    assert first["state"] == "approval-requested"
    await agent.approve(first["toolCallId"])
    await agent.wait_until_stable(timeout=60)
    assert (await agent.send("delete /b")).status == "completed"
    second = parts(agent, "demo_delete_file")[1]
    assert second["state"] == "approval-requested"
    await agent.deny(second["toolCallId"])
    await agent.wait_until_stable(timeout=60)
    settled = [(p["state"], p.get("output")) for p in parts(agent, "demo_delete_file")]
    assert settled == [("output-available", {"result": "deleted /a"}), ("output-denied", None)]
    assert ran == [] and agent.mcp_servers()["calls"].tolist() == [1]  # only the approved call reached the server
    await agent.shutdown()
