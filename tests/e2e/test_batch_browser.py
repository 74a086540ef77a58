"""`await agent.map(df, ...)` in a real browser (issue 33), JupyterLab 4 and Notebook 7.

A cell runs a scripted agent over 40 rows, two at a time, each row a tool call and an answer on a
model slow enough to watch. tqdm's notebook bar (an ipywidgets progress bar) shows in the cell and
ends at 40/40 with its elapsed/remaining time, rate, errors and cost so far; `agent.runs()` then
says `completed` with counts that match the conversations stored.

Not here: Stop. Interrupting the kernel while a cell awaits a coroutine whose tasks all wait
(ipykernel's SIGINT handler only schedules the cancel, ipython/ipykernel#881,
jupyterlab/jupyterlab#12194) did not cancel the cell here (ipykernel 7.4), so a Stop in the
browser cannot be tested against a run that stands still; `tests/test_batch.py` stops a run by
cancelling its task, as the kernel does once it acts on the interrupt.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jlab import run_cell, wait_kernel_idle

pytestmark = pytest.mark.e2e

RUN_MS = 90_000  # the first turn imports litellm in the kernel (4-7 s here, more under load)

SETUP = '''
import asyncio
import pandas as pd
from think_nb import Think, tool
from think_nb.testing import FunctionModel, ScriptedModel as S

ran = []

@tool
def double(x: int) -> int:
    """Double x."""
    ran.append(x)
    return 2 * x

async def answer(messages, info):
    last = messages[-1]
    if last["role"] == "tool":
        return f"double is {last['content']}"
    n = int(last["content"].split()[-1] if isinstance(last["content"], str) else last["content"][0]["text"].split()[-1])
    await asyncio.sleep(0.05)  # slow enough to watch
    return S.tool_call("double", {"x": n})

model = FunctionModel(answer)

class Doubler(Think):
    include_workspace_tools = False
    def get_model(self):
        return model.model
    def get_tools(self):
        return [double]

agent = Doubler("doubler")
df = pd.DataFrame({"n": range(40)})
print("ready")
'''

MAP = 'results = await agent.map(df, "Double {n}", concurrency=2, run_id="watch")'

# what the ledger says beside what is stored: the conversations of the run's lanes that hold messages
CHECK = '''
line = agent.runs().iloc[0]
stored = sum(1 for i in range(2) for s in agent.sub_agent(Doubler, f"map-watch-{i}").list_sessions()
             if s["id"] and s["messages"])
print("RUN", line["status"], "completed", line["completed"], "error", line["error"], "aborted", line["aborted"],
      "pending", line["pending"], "running", line["running"], "stored", stored, "ran", sorted(ran))
'''



def output(page, cell: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea-output")


def test_the_progress_bar_shows_done_total_rate_eta_errors_and_cost(notebook, app: str) -> None:
    page = notebook([SETUP, MAP, CHECK])
    run_cell(page, 0)
    expect(output(page, 0)).to_have_text("ready\n", timeout=RUN_MS)
    wait_kernel_idle(page)
    run_cell(page, 1)
    expect(output(page, 1).locator(".widget-hprogress")).to_be_visible(timeout=RUN_MS)  # tqdm's widget bar
    texts = output(page, 1).locator(".widget-html-content")
    expect(texts.first).to_contain_text("map watch")
    # done/total, elapsed<remaining (ETA), rate, then errors and cost so far (unknown here: "?"); tqdm's
    # widget writes its spaces as &nbsp;
    expect(texts.last).to_have_text(
        _pattern(r"40/40\s\[\d\d:\d\d<\d\d:\d\d,\s+\d+\.\d\drow/s,\serrors=0,\scost=\?\]"), timeout=RUN_MS)
    wait_kernel_idle(page)
    run_cell(page, 2)
    expect(output(page, 2)).to_have_text(
        f"RUN completed completed 40 error 0 aborted 0 pending 0 running 0 stored 40 ran {list(range(40))}\n",
        timeout=RUN_MS)


def _pattern(regex: str):
    import re

    return re.compile(regex)
