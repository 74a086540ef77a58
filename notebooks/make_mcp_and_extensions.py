"""Source of notebooks/mcp_and_extensions.ipynb: run `python notebooks/make_mcp_and_extensions.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# MCP servers

The **Model Context Protocol** (MCP) is how tools are shared between AI applications: a *server*
offers tools (and resources, prompts); any *client* can list and call them. A think_nb agent is an
MCP client (as Cloudflare's Think is): `add_mcp_server` connects a server, and its tools join every
turn next to the agent's own, named `<server>_<tool>`.

This notebook:

1. writes an MCP server in a few lines with the official SDK (`mcp`) and connects it over
   **stdio** (the agent starts it as a subprocess);
2. lets a model call its tools, and gates one of them behind an approval;
3. shows what is stored: the server is reconnected when the agent is created again, and a secret
   is stored only as a `${VAR}` reference.

The model is a `ScriptedModel` (a fake that plays back a script), so the notebook runs offline."""),
    new_code_cell('''%load_ext think_nb
import os
import sys

from think_nb import Think
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S'''),
    new_markdown_cell("""## 1. A server in a few lines

`MCPServer` (the SDK's high-level server) turns typed functions into MCP tools, like `@tool` does
for think_nb. `server.run()` speaks MCP over stdin/stdout."""),
    new_code_cell('''%%writefile shop_server.py
from mcp.server.mcpserver import MCPServer

server = MCPServer("shop")
stock = {"apple": 12, "pear": 0}


@server.tool()
def check_stock(item: str) -> int:
    """How many of an item are in stock."""
    return stock.get(item, 0)


@server.tool()
def cancel_order(order_id: str) -> str:
    """Cancel an order (irreversible)."""
    return f"order {order_id} cancelled"


if __name__ == "__main__":
    server.run()'''),
    new_markdown_cell("""## 2. Connect it, call it, gate one tool

`needs_approval` takes `True`, a list of the server's tool names, or a function
`(server, tool, input) -> bool`. Here cancelling an order needs a person's yes."""),
    new_code_cell('''script = S([
    [S.tool_call("shop_check_stock", {"item": "apple"}), S.tool_call("shop_cancel_order", {"order_id": "A-17"})],
    [S.text("12 apples in stock, and order A-17 is cancelled.")],
])


class Clerk(Think):
    wait_for_mcp_connections = True   # a turn waits (up to 10 s) for servers still connecting

    def get_model(self):
        return script.model      # a hosted model instead: return "openai/gpt-4o-mini"


clerk = Clerk("mcp-demo")
clerk.clear_messages()
await clerk.add_mcp_server("shop", f"{sys.executable} shop_server.py", needs_approval=["cancel_order"],
                           connect_timeout=60)
clerk.mcp_servers()'''),
    new_markdown_cell("""The model sees the server's tools with their JSON schemas, like any other tool:"""),
    new_code_cell('''sorted(clerk.mcp_tools())'''),
    new_code_cell('''clerk.panel()'''),
    new_code_cell('''result = await clerk.send("How many apples, and cancel order A-17 please.")
print(result.status, "— waiting for:", [(p["tool_name"], p["input"]) for p in clerk.pending_approvals()])'''),
    new_markdown_cell("""`check_stock` ran at once; `cancel_order` waits for Approve/Deny in the panel above, or in
Python:"""),
    new_code_cell('''clerk.approve(clerk.pending_approvals()[0]["tool_call_id"])
await clerk.wait_until_stable(timeout=60)
clerk.tool_calls_df()[["tool_name", "state", "output"]]'''),
    new_markdown_cell("""## 3. What is stored

The server's configuration is in the notebook's SQLite file, so a new `Clerk("mcp-demo")` (after a
kernel restart, say) reconnects it in the background. Secrets never go there: an environment value
under a credential name must be a `${VAR}` reference, read from the environment when connecting."""),
    new_code_cell('''os.environ["SHOP_TOKEN"] = "not-a-real-token"
await clerk.add_mcp_server("shop", f"{sys.executable} shop_server.py", env={"SHOP_TOKEN": "${SHOP_TOKEN}"})
try:
    await clerk.add_mcp_server("leaky", f"{sys.executable} shop_server.py", env={"SHOP_TOKEN": "plain-text"})
except UserError as exc:
    print(type(exc).__name__, ":", exc)'''),
    new_code_cell('''again = Clerk("mcp-demo")
await again.mcp_ready()          # what a turn does before its first model call (wait_for_mcp_connections)
again.mcp_servers()'''),
    new_code_cell('''await clerk.shutdown()
await again.shutdown()'''),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("mcp_and_extensions.ipynb").write_text(nbformat.writes(nb))
