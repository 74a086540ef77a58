"""The tool cards of the workspace batteries in a real browser (JupyterLab): a streaming tool's
card ticks its elapsed time and shows its partial output while it runs; an `execute` card shows
the code highlighted; each gated call inside the code asks in the approval card, which shows the
code, the inner call it is paused at and what it printed, and approving resumes the same run.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jlab import run_cell
from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

pytestmark = pytest.mark.e2e

CODE = "x = add(2, 40)\nprint('sum', x)\ndelete_file('/one')\ndelete_file('/two')\nx"

AGENT = f'''
import asyncio
from think_nb.workspace import execute_tool

release = asyncio.Event()

@tool
async def slow_count(n: int):
    """Count to n, one partial output per number."""
    release.clear()
    yield f"counted 1 of {{n}}"
    await release.wait()  # the test lets it finish (cell 3) once it saw the running card
    yield f"counted {{n}} of {{n}}"

@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

script = S([[S.tool_call("slow_count", {{"n": 3}})], [S.tool_call("execute", {{"code": {CODE!r}}})],
            [S.text("Counted, added, deleted both.")]])

class Coder(Think):
    def get_model(self):
        return script.model
    def get_tools(self):
        return [slow_count, add, delete_file, execute_tool(self)]

agent = Coder("coder")
agent.panel()
'''


def test_running_partial_output_highlighted_code_and_each_gated_inner_call_in_the_cards(notebook, app: str) -> None:
    page, panel = open_panel(notebook, AGENT, extra=["release.set()"])
    send(panel, "Count to 3, then add and delete")

    counting = panel.locator(".think-tool[data-tool-name=slow_count]")
    badge = counting.locator(".think-tool-badge")
    expect(badge).to_have_text(re.compile(r"^running… \d+\.\d s — partial output$"), timeout=TURN_MS)
    expect(counting.locator(".think-tool-output")).to_contain_text("counted 1 of 3")
    expect(badge).to_have_text(re.compile(r"^running… [1-9]\d*\.\d s — partial output$"))  # it ticks
    run_cell(page, 3)  # release.set(): the tool yields its last value
    expect(counting).to_have_attribute("data-state", "output-available", timeout=TURN_MS)
    expect(counting.locator(".think-tool-output")).to_contain_text("counted 3 of 3")

    card = panel.locator(".think-tool[data-tool-name=execute]")
    expect(card).to_have_attribute("data-state", "approval-requested", timeout=TURN_MS)
    code = card.locator(".think-tool-input code.hljs.language-python")
    expect(code).to_have_text(CODE)
    expect(code.locator("span.hljs-string").first).to_have_text("'sum'")  # highlighted, not plain text
    expect(code.locator("span.hljs-number").first).to_have_text("2")
    expect(card.locator(".think-approval-call")).to_have_text('The code is paused at delete_file({"path":"/one"})')
    expect(card.locator(".think-approval .think-tool-output")).to_contain_text("sum 42")
    expect_status(panel, "awaiting-approval")

    card.locator("button.think-approve").click()  # the run resumes and stops at the next gated call
    expect(card.locator(".think-approval-call")).to_have_text('The code is paused at delete_file({"path":"/two"})',
                                                              timeout=TURN_MS)
    expect(card).to_have_attribute("data-state", "approval-requested")
    expect(card.locator(".think-tool-input code.hljs")).to_have_text(CODE)
    expect(card.locator("button.think-approve")).to_be_enabled()  # this view may answer the new round
    expect_status(panel, "awaiting-approval")

    card.locator("button.think-approve").click()
    expect(card).to_have_attribute("data-state", "output-available", timeout=TURN_MS)
    expect(card.locator(".think-tool-output")).to_contain_text('"stdout": "sum 42\\n"')
    expect(last_text(panel)).to_have_text("Counted, added, deleted both.", timeout=TURN_MS)
    expect_status(panel, "ready")
