"""Source of notebooks/quickstart.ipynb: run `python notebooks/make_quickstart.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# think_nb quickstart

**think_nb** gives you a chat agent that lives in this notebook's kernel. You write a small
class, show its chat panel, and talk to it; every turn streams into the panel, and every message is
saved in a SQLite file beside this notebook, so the conversation survives a kernel restart.

It follows Cloudflare's *Think* agent class: you override a few methods (`get_model`,
`get_system_prompt`, `get_tools`) and the framework runs the loop: call the model, run the tools it
asks for, feed the results back, repeat until it answers.

This notebook runs **offline**: without `get_model()` the agent uses a tiny model that ships
with think_nb (SmolLM2-135M, run in this process). It is small and not very clever, but it does
call tools. To use a hosted model instead, add one line to the class (see below) and set the
provider's API key."""),
    new_markdown_cell("## 1. Load the extension\n\n`%load_ext think_nb` adds the `%think` magic."),
    new_code_cell("%load_ext think_nb"),
    new_markdown_cell("""## 2. Define an agent with a tool

A tool is a plain Python function. Its type hints and docstring become the JSON schema the model
sees; `@tool` can also set the name, the description and whether it needs approval."""),
    new_code_cell('''from think_nb import Think, tool


@tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


class Calc(Think):
    max_steps = 4  # model calls per turn at most

    # To use a hosted model, uncomment one line (and set OPENAI_API_KEY):
    # def get_model(self): return "openai/gpt-4o-mini"

    def get_system_prompt(self):
        return "You are a careful calculator. Use the add tool for sums."

    def get_tools(self):
        return [add]


agent = Calc("quickstart")
agent.db_path  # the SQLite file beside this notebook'''),
    new_markdown_cell("""## 3. Show the chat panel

`%think agent` shows the panel of the agent held in the variable `agent` (`%think Calc` would
create or load `Calc("default")`). Type into it, or send a whole cell with `%%think`."""),
    new_code_cell("%think agent"),
    new_markdown_cell("""## 4. Send a message from a cell

`%%think agent` sends the cell's text as a user message. The cell returns **at once**: the turn
runs in the background and streams into the panel above, so you can keep working.

One limit comes from Jupyter itself: the kernel runs one cell at a time, on the same thread as the
agent's turn. A cell that keeps the kernel busy without awaiting (`time.sleep(25)`, a long pandas
computation) holds the streaming reply until it ends; the reply then catches up at once. Cells that
return quickly, or that `await` (`await asyncio.sleep(25)`), let it stream."""),
    new_code_cell("%%think agent\nWhat is 2 plus 40? Use the add tool."),
    new_code_cell('print("this cell ran while the agent was still thinking:", agent.is_running)'),
    new_markdown_cell("Wait for the turn to finish (in your own notebooks you rarely need to):"),
    new_code_cell("await agent.wait_until_stable(timeout=300)"),
    new_markdown_cell("""## 5. Look at the stored messages

`agent.messages` is the transcript as AI SDK **UIMessages**: each has an `id`, a `role` and a list
of `parts`. An assistant reply has a `step-start` part per model call, `text` parts, and one
`tool-<name>` part per tool call with its `input`, `output` (or `errorText`) and `state`."""),
    new_code_cell('''import json

for message in agent.messages:
    print(message["role"], json.dumps(message["parts"], indent=1)[:600])'''),
    new_markdown_cell("The same messages are rows in SQLite, as JSON, in a tree (`parent_id`), keyed by agent:"),
    new_code_cell('''import sqlite3

with sqlite3.connect(agent.db_path) as db:
    for row in db.execute("SELECT agent_key, role, parent_id, substr(content, 1, 80) FROM think_messages"):
        print(row)'''),
    new_markdown_cell("""After a kernel restart, `Calc("quickstart")` loads the same transcript and `%think` shows it
again. Next: `hooks.ipynb` shows every hook of a turn."""),
]

nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("quickstart.ipynb").write_text(nbformat.writes(nb))
