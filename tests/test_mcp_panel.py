"""The panel's view of MCP servers (issue 15 item 2): the `mcp_servers` frame (Think's
`cf_agent_mcp_servers`), pushed to every panel when a server changes and sent to a view that
attaches; against a real stdio server (tests/mcp_server.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agents import eventually
from helpers_comm import custom_msgs, from_js
from think_nb import Think
from think_nb.panel import protocol
from think_nb.testing import ScriptedModel as S

SERVER = Path(__file__).with_name("mcp_server.py")
STDIO = f"{sys.executable} {SERVER} stdio"
TOOLS = ["demo_add", "demo_delete_file", "demo_echo_env", "demo_fail", "demo_slow"]


def frames(panel: Any) -> list[dict]:
    return [f for f in custom_msgs(panel) if f["type"] == protocol.MCP_SERVERS]


async def test_panels_hear_each_state_change_and_a_new_view_gets_the_list(recording_comm: Any, tmp_path: Path,
                                                                          monkeypatch: Any) -> None:
    monkeypatch.setenv("THINK_NB_MCP_HANDSHAKE_TIMEOUT", "300")  # room for a loaded machine's slow start
    script = S([[S.text("hi")]])
    cls = type("McpPanel", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False})
    agent = cls("p", db=tmp_path / "p.sqlite")
    panel = agent.panel()
    await agent.add_mcp_server("demo", STDIO, connect_timeout=300)  # returns once connected: room for a loaded machine
    await eventually(lambda: frames(panel) and frames(panel)[-1]["servers"][0]["state"] == "connected",
                     what="the connected state pushed")
    states = [f["servers"][0]["state"] for f in frames(panel)]
    assert states[0] == "connecting" and states[-1] == "connected"
    last = frames(panel)[-1]
    assert protocol.parse_frame(last) == last
    [server] = last["servers"]
    assert {**server, "tool_names": sorted(server["tool_names"])} == {
        "name": "demo", "transport": "stdio", "state": "connected", "tools": 5, "tool_names": TOOLS,
        "last_error": None}

    late = agent.panel()  # a view displayed later asks to resume and gets the list at once
    from_js(late, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v2"})
    assert frames(late) == [last]

    await agent.remove_mcp_server("demo")
    assert frames(panel)[-1] == {"type": protocol.MCP_SERVERS, "servers": []}
    await agent.shutdown()
