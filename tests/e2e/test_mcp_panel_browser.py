"""MCP state in a real browser (JupyterLab): an agent connects a real stdio MCP server
(tests/mcp_server.py, written with the SDK); the Context tab lists it with its status and tool
count (an `mcp_servers` frame, Think's `cf_agent_mcp_servers`), and a tool card of a call the
model makes through it names the server."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jlab import REPO_ROOT
from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

pytestmark = pytest.mark.e2e

SERVER = REPO_ROOT / "tests" / "mcp_server.py"

AGENT = f'''
import sys
script = S([[S.tool_call("demo_add", {{"a": 2, "b": 40}})], [S.text("It is 42.")]], delay=0.02)

class McpE2E(Think):
    include_workspace_tools = False
    def get_model(self):
        return script.model

agent = McpE2E("mcp-e2e")
info = await agent.add_mcp_server("demo", f"{{sys.executable}} {SERVER} stdio", connect_timeout=120)  # loaded runners
assert info["state"] == "connected", info
agent.panel()
'''


def test_context_tab_lists_the_mcp_server_and_tool_cards_name_it(notebook, app: str) -> None:
    _page, panel = open_panel(notebook, AGENT)
    panel.locator(".think-tab[data-tab=context]").click()
    server = panel.locator(".think-mcp-server[data-name=demo]")
    expect(server).to_be_visible()
    expect(server).to_have_attribute("data-state", "connected")
    expect(server.locator(".think-mcp-state")).to_have_text("connected · stdio · 5 tools")

    panel.locator(".think-tab[data-tab=chat]").click()
    send(panel, "What is 2 + 40?")
    expect(last_text(panel)).to_have_text("It is 42.", timeout=TURN_MS)
    expect_status(panel, "ready")
    card = panel.locator(".think-tool[data-tool-name=demo_add]")
    expect(card).to_have_attribute("data-server", "demo")
    expect(card.locator(".think-tool-server")).to_have_text("MCP demo")
