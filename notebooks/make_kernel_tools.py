"""Source of notebooks/kernel_tools.ipynb: run `python notebooks/make_kernel_tools.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# The agent in your kernel: variables, code, approval, undo

An agent lives in this kernel, so it can look at what you are working on. With the **kernel
tools** it can:

- `list_variables()`: the notebook's names, with type, shape and a short preview;
- `notebook_history(last=10)`: the cells you ran so far;
- `describe_variable(name)`: the same bounded description `--with df` attaches (a DataFrame's
  shape, dtypes, first and last rows, `describe()`);
- `run_code(code)`: run Python **here**, in your namespace, as a cell would — but only once you
  approve it. The card in the chat panel shows the code highlighted; **Edit** lets you change it
  before it runs, and the model is told exactly what ran. A finished run shows what it printed,
  its tables and figures, which names it changed, and an **Undo** button.

The agent here runs on a `ScriptedModel` (a model that plays back a script), so every output is
predictable; give the class `def get_model(self): return "openai/gpt-4o-mini"` for a real one."""),
    new_code_cell('''%load_ext think_nb
import pandas as pd

from think_nb import Think
from think_nb.kernel import kernel_tools
from think_nb.testing import ScriptedModel as S

sales = pd.DataFrame({
    "month": ["Jan", "Feb", "Mar", "Apr", "May", "Jun"],
    "revenue": [120, 135, 90, 160, 175, 150],
    "cost": [80, 85, 70, 95, 100, 90],
})
sales'''),
    new_markdown_cell("""## 1. Give the agent the kernel tools

`kernel_tools(run="ask")` returns the four tools; `run="ask"` (the default) makes every
`run_code` wait for your approval, `"allow"` runs without asking, `"off"` leaves `run_code` out.
(`include_kernel_tools = True` as a class attribute is the same, without writing `get_tools`.)

The script below is what the model will "say", turn by turn: first it looks at the variables,
then it proposes code."""),
    new_code_cell('''PLOT = """import matplotlib.pyplot as plt
ax = sales.plot(x="month", y=["revenue", "cost"], marker="o", title="Sales")
plt.show()"""

script = S([
    # turn 1: look around, then answer
    [S.tool_call("list_variables", {}), S.tool_call("describe_variable", {"name": "sales"})],
    [S.text("You have one DataFrame, `sales`: 6 months of revenue and cost.")],
    # turn 2: a plot (needs approval)
    [S.tool_call("run_code", {"code": PLOT})],
    [S.text("Revenue dips in March and peaks in May.")],
    # turn 3: code you will edit before approving it
    [S.tool_call("run_code", {"code": "top = sales.nlargest(2, 'revenue')\\ntop"})],
    [S.text("Those are the best months.")],
    # turn 4: code you will undo
    [S.tool_call("run_code", {"code": "sales = sales[sales.revenue > 100]\\nlen(sales)"})],
    [S.text("I kept the months above 100.")],
])


class Analyst(Think):
    def get_model(self):
        return script.model

    def get_tools(self):
        return kernel_tools(run="ask")


analyst = Analyst("analyst")
analyst.clear_messages()  # Run All again starts this demo afresh
analyst.panel()'''),
    new_markdown_cell("""## 2. Ask about the data

The read tools need no approval: they only read names and bounded descriptions."""),
    new_code_cell('''result = await analyst.send("What data do I have?")
print(result.status)
analyst.tool_calls_df()[["tool_name", "input", "state"]]'''),
    new_code_cell('print(analyst.tool_calls_df()["output"].iloc[1]["markdown"][:400])'),
    new_markdown_cell("""## 3. Approve a `run_code` that plots

The turn stops at the `run_code` call: the panel's card shows the code and **Approve** / **Deny**.
Click Approve there, or approve from Python as below (the same thing; the cell after next
approves only if you have not clicked). The figure the code draws shows **in the card** (the
panel above), not under this cell."""),
    new_code_cell('''result = await analyst.send("Plot revenue and cost by month")
pending = analyst.pending_approvals()
print(result)   # completed, waiting for the approval: the turn paused at the call
print(pending[0]["input"]["code"])'''),
    new_code_cell('''if analyst.pending_approvals():   # not clicked in the panel yet
    await analyst.approve(pending[0]["tool_call_id"])
await analyst.wait_until_stable()   # the run and the model's answer, started here or by the panel
row = analyst.tool_calls_df().iloc[-1]
print(row["state"], row["duration_ms"] is not None)
print([o["mime"] for o in row["output"]["outputs"]])   # image/png: the figure in the card'''),
    new_markdown_cell("""## 4. Edit the code before it runs

In the panel, **Edit** turns the code into a text box; what you approve is what runs, and the
card says "edited". From Python: `approve(id, code=...)`. The model is told the edited code and
that you edited it; `tool_calls_df()` keeps both."""),
    new_code_cell('''await analyst.send("Which months were best?")
call = analyst.pending_approvals()[0]
print("the model proposed:", call["input"]["code"], sep="\\n")
await analyst.approve(call["tool_call_id"], code="top = sales.nlargest(3, 'revenue')\\ntop")
row = analyst.tool_calls_df().iloc[-1]
print("edited:", row["edited"], "| ran:", row["code"].splitlines()[0])
top  # noqa: F821 - bound by the code the agent ran'''),
    new_markdown_cell("""## 5. Undo a run

Each run records which of your names it bound, rebound or deleted, and keeps what they held.
The card's **Undo** button (or `agent.undo(call_id)`) puts them back. A change made *inside* an
object (`df.drop(..., inplace=True)`, a list appended to) cannot be undone by rebinding: the card
says so ("changed in place: df — cannot be undone") rather than pretending."""),
    new_code_cell('''await analyst.send("Keep only the months above 100")
call = analyst.pending_approvals()[0]
await analyst.approve(call["tool_call_id"])
print("after the run:", len(sales), "rows")
report = analyst.undo(call["tool_call_id"])
print(report)
print("after undo:", len(sales), "rows")'''),
    new_code_cell('analyst.tool_calls_df()[["tool_name", "state", "edited", "changed", "undone"]]'),
    new_markdown_cell("""## 6. Into a cell

Code the agent ran is often worth keeping. A `run_code` card's **into a cell** button puts its
code into a new cell below the panel's cell (JupyterLab 4 and Notebook 7; where the front end
cannot, it copies the code and says so).

`%think kernel analyst` shows what the agent can see of this kernel (its `list_variables` view)."""),
    new_code_cell("%think kernel analyst"),
    new_markdown_cell("""Next: `tools_and_approval.ipynb` (approvals for any tool), `hooks.ipynb`
(`before_tool_call` can inspect or block a `run_code` call before you are even asked)."""),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("kernel_tools.ipynb").write_text(nbformat.writes(nb))
