"""Source of notebooks/time_travel.ipynb: run `python notebooks/make_time_travel.py` after editing."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell("""# Time travel: fork a past turn, change what it saw, compare

Step mode pauses a turn that runs *now*. Time travel goes back to a turn that ran *before*:
`agent.fork(turn, at=SITE)` stands at any hook of a stored turn again, with the context as it
was, and hands you the same stepper step mode gives. Change anything step mode can change (the
system prompt, the messages, a tool's arguments or result, the model) and run the rest.

* Everything **before** the fork point is reproduced from the turn's record: no model call, no
  tool run, so it is exactly what happened.
* Everything **after** it runs live, on the agent's model (or `model=`), with the tools run
  again (or `tools="recorded"`: reuse a recorded result when name and arguments match).
* The new reply is a **sibling** of the original, like a regenerate: the original is never changed.
* `agent.compare(a, b)` shows two replies side by side.

The agent below runs on a `FunctionModel`, a fake model that reacts to what it is sent, so the
forks really answer differently. On a hosted model, `get_model` returns e.g.
`"openai/gpt-4o-mini"` instead."""),
    new_code_cell('''%load_ext think_nb
from think_nb import Think, tool
from think_nb.errors import UserError
from think_nb.testing import FunctionModel
from think_nb.testing import ScriptedModel as S


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def reply(messages, info):
    """The fake model: call `add` first, then say the sum, in French when the prompt asks."""
    last = messages[-1]
    if last["role"] != "tool":
        return S.tool_call("add", {"a": 2, "b": 40})
    if "French" in messages[0]["content"]:
        return f"La somme est {last['content']}."
    return f"The sum is {last['content']}."


model = FunctionModel(reply)


class Calc(Think):
    include_workspace_tools = False

    def get_model(self):
        return model.model      # a hosted model instead: return "openai/gpt-4o-mini"

    def get_tools(self):
        return [add]


agent = Calc("time-travel")
agent.clear_messages()          # a clean start when the notebook runs again
original = await agent.send("What is 2 plus 40?")
original.message["parts"][-1]["text"]'''),
    new_markdown_cell("""## 1. The turns and their hook sites

`%think history AGENT` lists the turns, the hook sites each can be forked at, and whether it can
be forked (a turn recovered after a kill, from another session, or run on an older version of
the class cannot; the column says why)."""),
    new_code_cell('''history = %think history agent
history'''),
    new_markdown_cell("""## 2. Fork before the turn, with another system prompt

`agent.fork(-1, at="before_turn")` returns a stepper paused at `before_turn` of the latest turn.
`stepper.paused.ctx` is the context `before_turn` saw; change its system prompt and run the rest."""),
    new_code_cell('''stepper = agent.fork(-1, at="before_turn")
stepper.paused'''),
    new_code_cell('''stepper.paused.ctx.system = "Answer in French."
french = stepper.run()
french.message["parts"][-1]["text"]'''),
    new_code_cell('''agent.compare(original, french)   # the word diff, then every aspect side by side'''),
    new_markdown_cell("""## 3. Fork after the tool call, with another result

The site `after_tool_call:<call id>` stands just after `add` returned 42. The model's first step
is played back from the record (no model call, `add` does not run again); set the result to 0
and the model's next step runs live on it."""),
    new_code_cell('''site = next(s for s in history.sites[0] if s.startswith("after_tool_call"))
stepper = agent.fork(original.request_id, at=site)
stepper.paused.ctx.output = 0
zero = stepper.run()
zero.message["parts"][-1]["text"], zero.message["metadata"]["fork"]["label"]'''),
    new_code_cell('''comparison = agent.compare(original, zero)
comparison.frame            # also a DataFrame'''),
    new_markdown_cell("""## 4. Three versions of one reply

Each fork is a sibling of the original reply, as a regenerate is (the panel's versions switcher,
`< 1 / 3 >`, shows them); the original is unchanged."""),
    new_code_cell('''versions = agent.get_branches(original.message["id"])
[(m["id"] == original.message["id"], m["parts"][-1]["text"]) for m in versions]'''),
    new_markdown_cell("""## 5. Reusing recorded tool results

With `tools="recorded"` a call after the fork point whose tool name and arguments match a
recorded call gets the recorded result instead of running; `stepper.reused` says which."""),
    new_code_cell('''stepper = agent.fork(original.request_id, at="before_turn", tools="recorded")
again = stepper.run()
stepper.reused, again.message["parts"][-1]["text"]'''),
    new_markdown_cell("""A site the turn never reached is refused in one line naming the sites it has:"""),
    new_code_cell('''try:
    agent.fork(original.request_id, at="before_tool_call:nowhere")
except UserError as exc:
    print(exc)'''),
]

for n, cell in enumerate(cells):  # stable ids: regenerating gives the same file
    cell.id = f"cell-{n:02d}"
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}})
Path(__file__).with_name("time_travel.ipynb").write_text(nbformat.writes(nb))
