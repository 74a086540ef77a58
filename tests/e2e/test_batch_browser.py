"""`await agent.map(df, ...)` in a real browser (issue 33), JupyterLab 4 and Notebook 7.

A cell runs a scripted agent over 40 rows, two at a time; the model answers rows 0-4 and then
waits on a gate, so the run stands still with 5 rows settled and 2 running. tqdm's notebook bar
(an ipywidgets progress bar) shows in the cell and advances to 5/40 with its rate, errors and cost
so far. The person presses the toolbar's Stop (interrupt the kernel): the cell says what settled
and what was not run, `agent.runs()` says `stopped` with counts that match the conversations
stored, and the same call (same run id) run again finishes the 33 rows not run, never re-running
a row. (Before `think_nb.interrupts.loop_wakes_on_interrupt`, this Stop never reached a run whose
rows all waited: ipykernel#881.)
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

gate = asyncio.Event()  # rows from 5 on wait here until it is set
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
    if n >= 5:
        await gate.wait()
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

AGAIN = '''
gate.set()
results = await agent.map(df, "Double {n}", concurrency=2, run_id="watch")
print("AGAIN", {k: int(v) for k, v in results["status"].value_counts().items()},
      "ran", sorted(ran) == [*range(5), *range(7, 40)])  # each row once; the 2 stopped while running: never
'''


def run_by_hand(page, cell: int) -> None:
    """Click into cell `cell` and press Shift+Enter, as a person runs it."""
    page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def output(page, cell: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea-output")


def test_the_progress_bar_advances_and_stop_ends_the_run_settled(notebook, app: str) -> None:
    page = notebook([SETUP, MAP, CHECK, AGAIN])
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
        _pattern(r"5/40\s\[\d\d:\d\d<\d\d:\d\d,\s+\d+\.\d\drow/s,\serrors=0,\scost=\?\]"), timeout=RUN_MS)
    page.locator('[data-command="notebook:interrupt-kernel"]').first.click()  # the toolbar's Stop
    expect(output(page, 1).filter(has_text="stopped")).to_have_text(
        "map 'watch' stopped: 7 of 40 rows settled (5 completed, 0 error, 2 aborted: running at Stop), 33 not "
        "run; map(..., run_id='watch') again runs those.\n", timeout=RUN_MS)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-InputPrompt")).to_have_text(
        _pattern(r"\[\d+\]"), timeout=RUN_MS)  # the page has the cell's reply: it ended
    wait_kernel_idle(page)
    run_by_hand(page, 2)
    expect(output(page, 2)).to_have_text(
        "RUN stopped completed 5 error 0 aborted 2 pending 33 running 0 stored 7 ran [0, 1, 2, 3, 4]\n",
        timeout=RUN_MS)
    wait_kernel_idle(page)
    run_by_hand(page, 3)
    expect(output(page, 3).filter(has_text="AGAIN")).to_have_text(
        "AGAIN {'completed': 38, 'aborted': 2} ran True\n", timeout=RUN_MS)
    expect(output(page, 3).locator(".widget-html-content").last).to_have_text(_pattern(r"^\s*40/40\s\["))


def _pattern(regex: str):
    import re

    return re.compile(regex)
