"""Source of notebooks/workspace.ipynb: run `python notebooks/make_workspace.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# The workspace: files, code and the web

Every think_nb agent has a **workspace**: a small file system stored in the notebook's SQLite
file, one per agent, that survives kernel restarts (Think's `this.workspace`). The model uses it
through seven tools it gets by default (`read`, `write`, `edit`, `list`, `find`, `grep`,
`delete`); you use the very same files from Python, because the workspace is an
[fsspec](https://filesystem-spec.readthedocs.io) file system.

Then two more tools you can give an agent:

- `execute`: the model writes Python that calls its tools, run in a sandbox (pydantic-monty);
- `fetch`: the model reads a web page, but only from hosts you allow.

As in the other notebooks, the model is a `ScriptedModel` (it plays back a script and records
what it was sent), so every output below is predictable."""),
    new_code_cell('''%load_ext think_nb
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fsspec

from think_nb import Think, tool
from think_nb.testing import ScriptedModel
from think_nb.workspace.execute import execute_tool
from think_nb.workspace.fetch import fetch_tool'''),
    new_markdown_cell("""## 1. The model writes, edits and searches a file

The script makes the model write a shopping list, fix one line with `edit` (which replaces
text that must occur exactly once), then `grep` for it."""),
    new_code_cell('''S = ScriptedModel
script = S([
    [S.tool_call("write", {"path": "/lists/shopping.md", "content": "- milk\\n- bread\\n- coffee\\n"})],
    [S.tool_call("edit", {"path": "/lists/shopping.md", "old_string": "- milk", "new_string": "- oat milk"})],
    [S.tool_call("grep", {"query": "milk"})],
    [S.text("Your list is in /lists/shopping.md, with oat milk.")],
])


class Assistant(Think):
    def get_model(self):
        return script.model      # a hosted model instead: return "openai/gpt-4o-mini"


agent = Assistant("files-demo")
agent.clear_messages()  # Run All again starts this demo afresh
result = await agent.send("Start a shopping list; I drink oat milk.")
print([t["function"]["name"] for t in script.requests[0]["tools"]])   # what the model was offered
agent.tool_calls_df()[["tool_name", "input", "output"]]'''),
    new_markdown_cell("""## 2. You open the same file with fsspec

`agent.workspace` is an `fsspec.AbstractFileSystem`: `ls`, `cat`, `open`, `glob`, `find`, `rm`
all work. `agent.workspace_df()` (or `%think files`) lists the files."""),
    new_code_cell('''fs = agent.workspace
print(fs.ls("/lists", detail=False))
with fs.open("/lists/shopping.md", "r") as f:
    print(f.read())
fs.pipe_file("/lists/todo.md", b"- call the plumber\\n")   # you write; the model can read it
print(fs.glob("/**/*.md"))
agent.workspace_df()'''),
    new_code_cell('%think files agent'),
    new_markdown_cell("""Nothing can address outside the workspace: `..`, NUL bytes, home directories, URLs and
Windows paths are refused with a one-line error. Large files (over 1 MiB) are kept in a folder
beside the SQLite file (`.think/<notebook>.files/`) instead of inside it."""),
    new_code_cell('''try:
    fs.cat("/../../etc/passwd")
except ValueError as error:
    print(error)'''),
    new_markdown_cell("""Any fsspec file system can replace the default one: a folder on disk, memory, a bucket.
The tools use whatever you assign."""),
    new_code_cell('''memory = fsspec.filesystem("memory", skip_instance_cache=True)
scratch_script = S([[S.tool_call("write", {"path": "/note.txt", "content": "kept in memory"})], [S.text("Done.")]])


class Scratch(Think):
    def get_model(self):
        return scratch_script.model


scratch = Scratch("scratch")
scratch.workspace = memory
await scratch.send("Take a note.")
memory.cat("/note.txt")'''),
    new_markdown_cell("""## 3. `execute`: code that calls tools

With `execute_tool(self)` among its tools, the model can write Python that calls its tools as
functions (`tools.add(a=1, b=2)` or `add(1, 2)`) and the workspace (`state.read(...)`,
`state.write(...)`). The code runs in a separate sandbox process: no files, network or
environment of this machine, and limits on time, memory and output. One `execute` call can
do what would otherwise take many model steps."""),
    new_code_cell('''@tool
def price(item: str) -> float:
    """The price of an item in euros."""
    return {"oat milk": 1.9, "bread": 2.5, "coffee": 7.0}.get(item, 0.0)


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


code = """
total = 0
for line in state.read('/lists/shopping.md').splitlines():
    item = line.removeprefix('- ')
    total = add(total, tools.price(item=item))
    print(item, price(item))
round(total, 2)
"""
exec_script = S([[S.tool_call("execute", {"code": code})], [S.text("That comes to 11.40 euros.")]])


class Coder(Think):
    def get_model(self):
        return exec_script.model

    def get_tools(self):
        return [price, add, execute_tool(self)]


coder = Coder("coder")
coder.workspace = agent.workspace   # each agent has its own workspace; this one shares the first agent's
await coder.send("How much will my shopping cost?")
coder.tool_calls_df()[["tool_name", "output"]].iloc[-1]["output"]'''),
    new_markdown_cell("""A tool that needs approval still needs it inside code. The run **pauses** at that call: the
sandbox's state is saved in SQLite and the turn waits, showing the code and the call. After
`approve()` the code continues from exactly where it stopped (nothing before it runs twice). Every
gated call the code reaches pauses again the same way (one approval each); `deny()` denies the
whole `execute` call, as it would a direct call. Calls made from code also go through
`before_tool_call` / `after_tool_call` (their context's `parent_tool_call_id` names the `execute`
call), so a hook that blocks a tool blocks it inside code too."""),
    new_code_cell('''@tool(needs_approval=True)
def clear_list(path: str) -> str:
    """Delete a list."""
    fs.rm(path)
    return f"cleared {path}"


gated_code = "print('checking')\\nn = len(state.list('/lists'))\\nclear_list('/lists/todo.md')\\nn"
gate_script = S([[S.tool_call("execute", {"code": gated_code})], [S.text("Cleared the to-do list.")]])


class Careful(Think):
    def get_model(self):
        return gate_script.model

    def get_tools(self):
        return [clear_list, execute_tool(self)]


careful = Careful("careful")
careful.clear_messages()  # Run All again starts this demo afresh
careful.workspace = agent.workspace
await careful.send("Clear my to-do list.")
pending = careful.pending_approvals()
print(pending[0]["tool_name"], careful.messages[-1]["parts"][-1]["approval"]["descriptor"]["call"])'''),
    new_code_cell('''await careful.approve(pending[0]["tool_call_id"])
careful.messages[1]["parts"][-1]["output"], fs.exists("/lists/todo.md")'''),
    new_markdown_cell("""## 4. `fetch`: the web, safely

`fetch_tool(allowed_hosts=[...])` reads pages with GET only, from the hosts you list (none by
default), refuses private and loopback addresses unless you allow them (so a model cannot reach
services inside your network), follows redirects only after checking them again, caps the size,
and turns HTML into markdown. Here a tiny server on this machine plays the web, so we allow
`127.0.0.1` explicitly."""),
    new_code_cell('''class Page(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<h1>Opening hours</h1><p>Open <b>9-18</b>, closed on Sunday.</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{server.server_address[1]}/hours"
web_script = S([[S.tool_call("fetch", {"url": url})], [S.text("The shop is open 9-18, closed Sundays.")]])


class Browser(Think):
    def get_model(self):
        return web_script.model

    def get_tools(self):
        return [fetch_tool(allowed_hosts=["127.0.0.1"], allow_private=["127.0.0.1"])]


browser = Browser("web")
await browser.send("When is the shop open?")
browser.tool_calls_df()[["tool_name", "output"]].iloc[0]["output"]'''),
    new_code_cell('''strict = fetch_tool(allowed_hosts=["127.0.0.1"])  # loopback not allowed: refused before connecting
print(await strict.invoke({"url": url}))
server.shutdown()
server.server_close()'''),
    new_markdown_cell("""Next: `tools_and_approval.ipynb` (approvals in the panel) and `hooks.ipynb` (every hook of a
turn, e.g. `before_tool_call` to block a tool)."""),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("workspace.ipynb").write_text(nbformat.writes(nb))
