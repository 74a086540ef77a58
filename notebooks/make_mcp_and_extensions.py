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


# the command is stored: an absolute path lets the agent reconnect from any working directory
SHOP = f"{sys.executable} {os.path.abspath('shop_server.py')}"
clerk = Clerk("mcp-demo")
clerk.clear_messages()  # Run All again starts this demo afresh:
await clerk.remove_mcp_server("shop")  # the server as stored by the last run (its env, below) goes too
await clerk.add_mcp_server("shop", SHOP, needs_approval=["cancel_order"],
                           connect_timeout=60)
clerk.mcp_servers()'''),
    new_markdown_cell("""The model sees the server's tools with their JSON schemas, like any other tool
(`think_nb.runtime_of(agent)` is the machinery behind an agent, for looking inside it):"""),
    new_code_cell('''from think_nb import runtime_of

sorted(runtime_of(clerk).mcp_tools())'''),
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
await clerk.add_mcp_server("shop", SHOP, env={"SHOP_TOKEN": "${SHOP_TOKEN}"})
try:
    await clerk.add_mcp_server("leaky", SHOP, env={"SHOP_TOKEN": "plain-text"})
except UserError as exc:
    print(type(exc).__name__, ":", exc)'''),
    new_code_cell('''again = Clerk("mcp-demo")
await runtime_of(again).mcp_ready()   # what a turn does before its first model call (wait_for_mcp_connections)
again.mcp_servers()'''),
    new_code_cell('''await clerk.shutdown()
await again.shutdown()'''),
    new_markdown_cell("""# Extensions the model writes

An **extension** is a small piece of Python that adds tools (and, optionally, context blocks and
hooks) to an agent. Cloudflare's Think runs extensions in sandboxed Workers; think_nb runs them in
**pydantic-monty**, the same sandbox as the `execute` tool: a Python subset in a separate process,
with no host files, network, environment or imports. What an extension may reach is written in its
**manifest**: `workspace` access (`read`, `read-write`) and `network` hosts (only those the agent
also allows in `extension_allowed_hosts`).

With `include_extension_tools = True` the model gets two tools, `load_extension` and
`list_extensions`: it can write an extension, load it, and use the new tool in the next turn.
Extensions can also be declared by the class (`get_extensions()`, loaded each time the agent is
created)."""),
    new_code_cell('''UNITS = \'\'\'
def to_celsius(fahrenheit):
    return {"celsius": round((fahrenheit - 32) * 5 / 9, 1)}

tools = {"to_celsius": {"description": "Convert a temperature from Fahrenheit to Celsius",
                        "parameters": {"fahrenheit": {"type": "number"}},
                        "required": ["fahrenheit"], "function": to_celsius}}
\'\'\'

script = S([
    # turn 1: the model writes the extension and loads it
    [S.tool_call("load_extension", {"name": "units", "version": "1.0.0", "source": UNITS,
                                    "description": "Unit conversions"})],
    [S.text("I wrote a `units` extension; its tool `units_to_celsius` is ready.")],
    # turn 2: it calls the new tool
    [S.tool_call("units_to_celsius", {"fahrenheit": 98.6})],
    [S.text("98.6 °F is 37.0 °C.")],
])


class Builder(Think):
    include_extension_tools = True        # the model may write and load extensions
    extension_timeout = 2.0               # seconds an extension may run to load or answer a call
    include_workspace_tools = False

    def get_model(self):
        return script.model


builder = Builder("ext-demo")
builder.clear_messages()
for name in builder.extensions()["name"]:   # start from nothing when the notebook is re-run
    await builder.unload_extension(name)
result = await builder.send("Make yourself a tool that converts Fahrenheit to Celsius.")
print(result.status, "→", builder.messages[-1]["parts"][-1]["text"])'''),
    new_markdown_cell("""The extension's tool is in the model's tool list from now on, named `<extension>_<tool>`:"""),
    new_code_cell('''result = await builder.send("What is 98.6 °F in Celsius?")
print(builder.messages[-1]["parts"][-1]["text"])
builder.tool_calls_df()[["tool_name", "state", "output"]]'''),
    new_markdown_cell("""`extensions()` shows each extension: where it came from, its state, its tools, how long it
took to load and how often it was called. A broken extension (code that raises, or loops past
`extension_timeout`) shows `state == "error"` with the error, and the agent keeps working."""),
    new_code_cell('''builder.extensions()[["name", "version", "origin", "state", "tools", "load_ms", "calls",
                      "error"]]'''),
    new_code_cell('''await builder.load_extension({"name": "broken", "version": "0.1"}, "while True:\\n    pass\\n")
builder.extensions()[["name", "state", "error"]]'''),
    new_markdown_cell("""Loaded extensions are stored in the notebook's SQLite file and loaded again when the agent is
created (a failed load is not stored):"""),
    new_code_cell('''restored = Builder("ext-demo")
sorted(await runtime_of(restored).extension_tools())   # the tools a turn merges from extensions'''),
    new_code_cell('''await builder.shutdown()
await restored.shutdown()'''),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("mcp_and_extensions.ipynb").write_text(nbformat.writes(nb))
