"""Source of notebooks/tools_and_approval.ipynb: run `python notebooks/make_tools_and_approval.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# Tools, approvals and client tools

A **tool** is something the model may ask the agent to do: look something up, compute, change
the world. The model never runs code itself; it answers with a *tool call* (a name and JSON
arguments), the agent runs the tool, and the result goes back to the model on its next call.
That loop is a **turn**.

This notebook shows the three kinds of tools a think_nb agent has:

1. **server tools**: Python functions that run in this kernel (sync or async);
2. **tools that need approval**: the turn pauses until a person says yes or no;
3. **client tools**: tools that run in the browser, in the chat panel.

To make every output here predictable, the agents use a `ScriptedModel`: a fake model
that plays back a script of replies and records every request it receives in `.requests`, so
you can see exactly what a model would be shown. At the end one agent runs on the real embedded
model. To use a hosted model instead, give the class one line:

```python
def get_model(self): return "openai/gpt-4o-mini"   # and set OPENAI_API_KEY
```"""),
    new_code_cell('''%load_ext think_nb
import asyncio
import json

import pandas as pd
from pydantic import BaseModel, Field

from think_nb import Think, client_tool, tool
from think_nb.testing import ScriptedModel'''),
    new_markdown_cell("""## 1. Server tools

A plain function is enough: its **type hints** become the JSON schema the model sees and its
**docstring** the description. Tools may be sync (they run on a worker thread, so the kernel
never blocks) or `async`. Arguments may be pydantic models: the model's JSON is validated
and converted before your function runs."""),
    new_code_cell('''@tool
def to_fahrenheit(celsius: float) -> float:
    """Convert a temperature from Celsius to Fahrenheit.

    Args:
        celsius: the temperature in degrees Celsius.
    """
    return celsius * 9 / 5 + 32


@tool
async def weather(city: str) -> dict:
    """Today's weather in a city (a fake service: it waits a little, as a real one would)."""
    await asyncio.sleep(0.1)
    return {"city": city, "celsius": 21.5, "sky": "sunny"}


class Order(BaseModel):
    item: str
    quantity: int = Field(ge=1, description="how many, at least 1")


@tool
def place_order(order: Order) -> str:
    """Order something from the shop."""
    return f"ordered {order.quantity} x {order.item}"


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


print(json.dumps(place_order.schema(), indent=1))'''),
    new_markdown_cell("""That is what the model receives for `place_order`: the pydantic model became a nested JSON
schema, with the `ge=1` constraint and its description.

Now an agent with these four tools, on a scripted model. The script has two **steps** (model
calls): in the first the model calls all four tools at once (calls of one step run
concurrently), including two mistakes: dividing by zero and ordering 0 items. In the second it
answers."""),
    new_code_cell('''script = ScriptedModel([
    [ScriptedModel.tool_call("weather", {"city": "Paris"}),
     ScriptedModel.tool_call("to_fahrenheit", {"celsius": 21.5}),
     ScriptedModel.tool_call("divide", {"a": 1, "b": 0}),
     ScriptedModel.tool_call("place_order", {"order": {"item": "umbrella", "quantity": 0}})],
    [ScriptedModel.text("Paris: sunny, 21.5 °C (70.7 °F). I could not divide by zero or order 0 umbrellas.")],
])


class Helper(Think):
    def get_model(self):
        return script.model      # a hosted model instead: return "openai/gpt-4o-mini"

    def get_tools(self):
        return [to_fahrenheit, weather, place_order, divide]


helper = Helper("tools-demo")
helper.clear_messages()  # Run All again starts this demo afresh
display(helper.panel())   # the chat panel: each call is a card that says done or failed
result = await helper.send("Weather in Paris in °F, 1/0, and order 0 umbrellas.")
result.status, result.message["parts"][-1]["text"]'''),
    new_markdown_cell("""Every call is in the transcript with its state. A tool that **raises** does not end the turn:
its error becomes the call's `output-error`, and so does input that fails validation."""),
    new_code_cell('helper.tool_calls_df()[["tool_name", "state", "input", "output", "error_text"]]'),
    new_markdown_cell("""What did the model see on its second call? The scripted model recorded it: each tool result is
a `tool` message, errors included, so a real model can apologise or try again."""),
    new_code_cell('''for message in script.requests[1]["messages"]:
    if message["role"] == "tool":
        print(message["content"])'''),
    new_markdown_cell("""## 2. Tools that need approval

Some tools should not run without a person's consent. `@tool(needs_approval=True)` always asks;
`needs_approval=<predicate>` asks only when the predicate says so for the model's input (here:
transfers over 100). When the model calls such a tool the turn **pauses** after that step; the
calls that need no approval still run."""),
    new_code_cell('''@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool(needs_approval=lambda input: input["amount"] > 100)
def transfer(amount: float, to: str) -> str:
    """Transfer money to someone."""
    return f"sent {amount} to {to}"


bank_script = ScriptedModel([
    [ScriptedModel.tool_call("transfer", {"amount": 20, "to": "Ann"}),
     ScriptedModel.tool_call("transfer", {"amount": 5000, "to": "Bob"}),
     ScriptedModel.tool_call("delete_file", {"path": "/tmp/report.txt"})],
    [ScriptedModel.text("Sent 20 to Ann and deleted the report; the 5000 transfer to Bob was refused.")],
])


class Bank(Think):
    def get_model(self):
        return bank_script.model

    def get_tools(self):
        return [transfer, delete_file]


bank = Bank("approvals")
bank.clear_messages()  # Run All again starts this demo afresh
display(bank.panel())     # the calls that wait show Approve / Deny here
result = await bank.send("Pay Ann 20 and Bob 5000, then delete /tmp/report.txt")
result   # completed, and waiting: for which calls'''),
    new_markdown_cell("""The turn completed its first step and stopped: two calls wait (`result.waiting` holds their
ids, `bank.has_pending_interaction()` is True). `pending_approvals()` lists
them (they are stored, so they survive a kernel restart); the 20 transfer already ran. (Clicked
**Approve** / **Deny** in the panel already? Then nothing waits and the list is empty; the cells
below still run: they decide only what still waits.)"""),
    new_code_cell('''pending = pd.DataFrame(bank.pending_approvals(), columns=["tool_call_id", "tool_name", "input"])
pending   # no rows (but the same columns) once you decided in the panel'''),
    new_code_cell('bank.tool_calls_df()[["tool_name", "input", "state", "output"]]'),
    new_markdown_cell("""Decide from Python with `approve(tool_call_id)` and `deny(tool_call_id, reason)`; the chat
panel's **Approve** / **Deny** buttons above call the same methods (clicked them? the next cell
only decides what still waits). While one call still waits nothing
happens (`None`); the last decision starts a **continuation** turn, which runs the approved calls
and lets the model answer. Its task is returned, so you can await it; `wait_until_stable()`
waits for it too, whoever started it."""),
    new_code_cell('''waiting = {p["tool_name"]: p["tool_call_id"] for p in bank.pending_approvals()}  # {}: clicked
if "transfer" in waiting:
    print("deny  →", bank.deny(waiting["transfer"], "Too much money at once."))
if "delete_file" in waiting:
    print("approve →", bank.approve(waiting["delete_file"]))
await bank.wait_until_stable()   # the continuation, started here or by the panel, has finished
print(bank.messages[-1]["parts"][-1]["text"])   # the model's answer after the decisions'''),
    new_code_cell('bank.tool_calls_df()[["tool_name", "input", "state", "output"]]'),
    new_markdown_cell("What the model was told about the denied call, on the continuation's model call:"),
    new_code_cell('''for message in bank_script.requests[-1]["messages"]:
    if message["role"] == "tool":
        print(message["content"])'''),
    new_markdown_cell("""The approved `delete_file` ran in the continuation, but its result was written into the
**original** assistant message, the one that asked for it, so the transcript reads naturally:"""),
    new_code_cell('''for m in bank.messages:
    print(m["role"], [p["text"] if p["type"] == "text" else f"{p['type']}: {p['state']}"
                      for p in m["parts"] if p["type"] != "step-start"])'''),
    new_markdown_cell("""## 3. Client tools

Some things only the browser knows: the user's time zone, their location, the clipboard. A
**client tool** is declared in Python with a JavaScript body (`js=`, the body of an async function of
`input`). The kernel never runs it: when the model calls it, the turn pauses, the chat panel runs the
JavaScript and sends the result back, and the agent continues."""),
    new_code_cell('''from think_nb import runtime_of  # the machinery behind an agent, for looking inside it

time_zone = client_tool(
    "time_zone", "The user's IANA time zone, from their browser.",
    js="return Intl.DateTimeFormat().resolvedOptions().timeZone;",
)

tz_script = ScriptedModel([
    [ScriptedModel.tool_call("time_zone", {})],
    [ScriptedModel.text("You are in Europe/Paris, so it is CET or CEST there.")],
])


class Clock(Think):
    def get_model(self):
        return tz_script.model

    def get_tools(self):
        return [time_zone]


clock = Clock("client-tools")
clock.clear_messages()  # Run All again starts this demo afresh
runtime_of(clock).client_tool_specs()   # what the panel receives: name, schema and the JavaScript'''),
    new_markdown_cell("""In a live notebook you would show the panel (`%think clock`) and it would answer the call by
itself. This notebook is also run by a test, where no browser runs the JavaScript, so we play
the panel's part from Python."""),
    new_code_cell('''result = await clock.send("Which time zone am I in?")
waiting = clock.tool_calls_df()
print(result.waiting_text, "| waiting for the browser:", clock.has_pending_interaction())
waiting[["tool_call_id", "tool_name", "state"]]'''),
    new_markdown_cell("""`add_tool_output(tool_call_id, output)` is what the panel sends when its JavaScript returns
(`error_text=` reports a failure instead). It completes the call and starts the continuation:"""),
    new_code_cell('''task = clock.add_tool_output(waiting["tool_call_id"][0], "Europe/Paris")
await task
print(clock.messages[-1]["parts"][-1]["text"])
clock.tool_calls_df()[["tool_name", "state", "output"]]'''),
    new_markdown_cell("""## 4. The same tools on a real model

Without `get_model()` an agent runs on the small model embedded in think_nb (SmolLM2-135M,
offline, a few seconds per call). It is not clever, but it calls tools for real, so its
answer may differ from run to run."""),
    new_code_cell('''class RealHelper(Think):
    max_steps = 3

    def get_system_prompt(self):
        return "You convert temperatures. Always use the to_fahrenheit tool."

    def get_tools(self):
        return [to_fahrenheit]


real = RealHelper("real")
real.clear_messages()  # Run All again starts this demo afresh
result = await real.send("What is 30 degrees Celsius in Fahrenheit?")
print(result.status)
real.tool_calls_df()[["tool_name", "input", "state", "output"]]'''),
    new_code_cell('print(real.messages[-1]["parts"][-1].get("text", ""))'),
    new_markdown_cell("""Next: `memory.ipynb` (context blocks the model can write), `sub_agents.ipynb` (agents that
delegate to agents), `hooks.ipynb` (every hook of a turn, and stepping through one)."""),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("tools_and_approval.ipynb").write_text(nbformat.writes(nb))
