"""Source of notebooks/batch.ipynb: run `python notebooks/make_batch.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# Batch runs: an agent over every row of a DataFrame

You made an agent work on one support ticket; now you want it on all of them. `agent.map` runs
**one full turn per row** (the agent's tools, hooks and approvals included), several rows at
once, and returns a table of results on the DataFrame's index:

```python
results = await agent.map(df, prompt="Label this ticket: {text}", concurrency=8)
```

Each row is a stored conversation you can open, search and export. The run has an id: calling
`map` again with the same `run_id` skips the rows already settled, so a kernel that died halfway
finishes the rest (no row runs twice). `max_cost=` / `max_tokens=` bound what a run spends, and
`rpm=` / `tpm=` pace it.

The agent here uses a `FunctionModel`, a fake model written as a Python function, so this
notebook runs offline; put `return "openai/gpt-4o-mini"` in `get_model` for a real one."""),
    new_code_cell('''%load_ext think_nb
import pandas as pd
from pydantic import BaseModel

from think_nb import Think, tool
from think_nb.testing import FunctionModel
from think_nb.testing import ScriptedModel as S

tickets = pd.DataFrame({"text": [
    "The printer on floor 3 is on fire",
    "I forgot my password again",
    "Please add a dark mode to the app",
    "Server room door does not lock",
    "How do I change my password?",
    "The invoice PDF is blank",
]}, index=[f"T-{n}" for n in range(101, 107)])
tickets'''),
    new_markdown_cell("""## 1. The agent, with a tool and a typed answer

`Label` is the answer we want per row: `output_type=Label` asks the model for it through a
hidden final-answer tool and validates it, so each field becomes a column. The fake model first
calls `priority_of` (a real tool: it runs), then answers."""),
    new_code_cell('''class Label(BaseModel):
    category: str
    priority: int


@tool
def priority_of(category: str) -> int:
    """How urgent a category is, 1 (now) to 3 (some day)."""
    return {"safety": 1, "account": 2}.get(category, 3)


def triage(messages, info):
    """The fake model: call priority_of, then give the final answer."""
    ticket = next(m["content"] for m in messages if m["role"] == "user")
    ticket = ticket if isinstance(ticket, str) else ticket[0]["text"]
    category = ("safety" if any(w in ticket for w in ("fire", "lock")) else
                "account" if "password" in ticket else "product")
    if messages[-1]["role"] != "tool":
        return [S.tool_call("priority_of", {"category": category}), S.usage(120, 10)]
    return [S.tool_call("think_final_answer", {"category": category, "priority": int(messages[-1]["content"])}),
            S.usage(140, 12)]


model = FunctionModel(triage)


class Triage(Think):
    include_workspace_tools = False

    def get_model(self):
        return model.model          # a hosted model instead: return "openai/gpt-4o-mini"

    def get_tools(self):
        return [priority_of]


agent = Triage("triage")'''),
    new_markdown_cell("""## 2. Run it over every row

A progress bar shows rows done, the rate, errors and cost so far (`?`: the fake model has no
price, and an unknown cost is never shown as 0)."""),
    new_code_cell('''results = await agent.map(tickets, "Label this ticket: {text}", output_type=Label, concurrency=3,
                          run_id="triage-v1")
results'''),
    new_markdown_cell("""Each row ran as its own conversation (`conversation_id`); open one to see its turn: the
user's message, the tool call and the answer. (`.panel()` on it shows it in the chat panel.)"""),
    new_code_cell('''from think_nb.batch import conversation_agent

row = conversation_agent(agent, results.loc["T-101", "conversation_id"])
[(m["role"], [p["type"] for p in m["parts"]]) for m in row.messages]'''),
    new_markdown_cell("""## 3. The same run id again: nothing runs twice

The rows are in a durable ledger in the notebook's SQLite file. Calling `map` again with the same
`run_id` (after a crash, a restart, or just by re-running the cell) returns the stored results
and runs only the rows that are not settled; here, none: the model is not called."""),
    new_code_cell('''calls = model.calls
again = await agent.map(tickets, "Label this ticket: {text}", output_type=Label, run_id="triage-v1")
assert model.calls == calls
again[["category", "priority", "status"]]'''),
    new_markdown_cell("""## 4. Score a run, compare two prompts

`evaluate=[fn, ...]` adds a column per function `fn(row, result)` and a summary of their means.
`agent.compare_runs(a, b)` puts two runs side by side; `agent.runs()` lists every run."""),
    new_code_cell('''def urgent_first(row, result):
    return result["priority"] == 1 if ("fire" in row["text"] or "lock" in row["text"]) else True


v2 = await agent.map(tickets, "Triage: {text}", output_type=Label, run_id="triage-v2", evaluate=[urgent_first])
print(v2.attrs["summary"])
agent.compare_runs("triage-v1", "triage-v2")'''),
    new_code_cell('''agent.runs()'''),
    new_markdown_cell("""## 5. Bounds

`max_tokens=` (or `max_cost=` with a priced model) stops taking rows once reached; the rows not
run say why, and the same `run_id` without the bound finishes them. (From a line:
`%think map agent tickets --prompt "Label this ticket: {text}"` starts a run and returns its
task.)"""),
    new_code_cell('''bounded = await agent.map(tickets, "Label this ticket: {text}", output_type=Label, concurrency=1,
                          run_id="triage-v3", max_tokens=600, progress=False)
bounded[["category", "status", "error"]]'''),
    new_code_cell('''finished = await agent.map(tickets, "Label this ticket: {text}", output_type=Label,
                           run_id="triage-v3", progress=False)
finished[["category", "status"]]'''),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("batch.ipynb").write_text(nbformat.writes(nb))
