"""The `run_code` kernel tool's card in a real browser (issue 26), JupyterLab 4 and Notebook 7.

A scripted agent with `kernel_tools()` proposes code; the person approves it in the panel with
real clicks and keystrokes, and the kernel's own namespace (a notebook cell printing it, run
again afterwards) proves what ran: the edited code, the rebinding Undo put back. The figure a
run draws renders in the card, and Stop interrupts `while True: pass` through Jupyter Server
(the kernel reads no comm message while the code runs) and leaves the kernel usable.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from harness import wait_until
from jlab import run_cell
from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

pytestmark = pytest.mark.e2e

KERNEL_SETUP = '''
import pandas as pd
from think_nb.kernel import kernel_tools

df = pd.DataFrame({"a": [1, 2, 3]})

def kbot(steps, run="ask", name="analyst"):
    script = S(steps)
    class Analyst(Think):
        def get_model(self):
            return script.model
        def get_tools(self):
            return kernel_tools(run=run)
    return Analyst(name)
'''

# the last cell (after %load_ext, SETUP + KERNEL_SETUP, the agent's cell): what the namespace holds now
CHECK = 'print("X =", globals().get("x"), "SUM =", int(df["a"].sum()))'
CHECK_CELL = 3


def namespace_says(page, text: str) -> None:
    """Run the check cell again and wait for its output to read ``text``."""
    run_cell(page, CHECK_CELL)
    expect(page.locator(".jp-OutputArea-output", has_text=text)).to_be_visible(timeout=TURN_MS)


@pytest.fixture
def kernel_notebook(notebook):
    """``notebook`` with KERNEL_SETUP appended to panel_flows' SETUP cell (so CHECK is cell 3)."""
    def open_cells(cells: list[str]):
        load, setup, *rest = cells
        return notebook([load, setup + KERNEL_SETUP, *rest])
    return open_cells


def test_edit_then_approve_runs_the_edited_code(kernel_notebook, app: str) -> None:
    page, panel = open_panel(kernel_notebook, agent_cell("x = 1", "Set x."), extra=[CHECK])
    send(panel, "Set x")
    expect_status(panel, "awaiting-approval")
    card = panel.locator(".think-tool[data-tool-name=run_code]")
    expect(card).to_have_attribute("data-state", "approval-requested")
    expect(card.locator("pre.think-code code.hljs")).to_have_text("x = 1")
    card.locator("button.think-edit").click()
    box = card.locator("textarea.think-code-edit")
    expect(box).to_be_focused()
    page.keyboard.press("Control+a")
    page.keyboard.type("x = 40 + 2")
    expect(box).to_have_value("x = 40 + 2")
    card.locator("button.think-approve").click()
    expect(card).to_have_attribute("data-state", "output-available", timeout=TURN_MS)
    expect(card.locator(".think-run-edited")).to_have_text("edited")
    expect(card.locator("pre.think-code")).to_have_text("x = 40 + 2")
    expect(card.locator(".think-run-changes")).to_contain_text("bound x")
    expect(last_text(panel)).to_have_text("Set x.", timeout=TURN_MS)
    namespace_says(page, "X = 42 SUM = 6")


def agent_cell(code: str, reply: str, run: str = "ask") -> str:
    """The cell making an agent that proposes ``code`` then says ``reply``, and showing its panel."""
    return (f'agent = kbot([[S.tool_call("run_code", {{"code": {code!r}}})], [S.text({reply!r})]], run={run!r})\n'
            "agent.panel()")


PLOT = 'import matplotlib.pyplot as plt\ndf = df * 10\nfig, ax = plt.subplots()\nax.plot(df["a"])\nprint("plotted")'


def test_the_figure_renders_in_the_card_and_undo_puts_the_names_back(kernel_notebook, app: str) -> None:
    page, panel = open_panel(kernel_notebook, agent_cell(PLOT, "Plotted."), extra=[CHECK])
    send(panel, "Plot df")
    card = panel.locator(".think-tool[data-tool-name=run_code]")
    expect(card).to_have_attribute("data-state", "approval-requested", timeout=TURN_MS)
    card.locator("button.think-approve").click()
    expect(card).to_have_attribute("data-state", "output-available", timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("Plotted.", timeout=TURN_MS)
    expect(card).to_have_attribute("open", "")  # it holds a figure: it opens by itself (a stranger's run)
    expect(card.locator("pre.think-run-stdout")).to_have_text("plotted\n")
    img = card.locator("img.think-run-image")
    expect(img).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=img.element_handle())
    expect(card.locator(".think-run-changes")).to_contain_text("rebound df")
    namespace_says(page, "SUM = 60")
    undo = card.locator("button.think-undo")
    expect(undo).to_have_text("Undo")
    undo.click()
    expect(card).to_have_attribute("data-undone", "true", timeout=TURN_MS)
    expect(card.locator("button.think-undo")).to_have_text("Undone")
    expect(card.locator("button.think-undo")).to_be_disabled()
    namespace_says(page, "SUM = 6")


def test_stop_interrupts_a_busy_loop_and_the_kernel_stays_usable(kernel_notebook, app: str, tmp_path) -> None:
    started = tmp_path / "loop-started"
    cell = agent_cell(f"open({str(started)!r}, 'w').close()\nx = 7\nwhile True: pass", "never", run="allow")
    page, panel = open_panel(kernel_notebook, cell, extra=[CHECK])
    send(panel, "Loop")
    card = panel.locator(".think-tool[data-tool-name=run_code]")
    expect(card).to_have_attribute("data-state", "input-available", timeout=TURN_MS)
    expect(card).to_have_attribute("data-outcome", "running")
    # the code itself has begun, so this checks an interrupt inside it (the namespace then holds x = 7).
    # A Stop in the instant between the card showing "running" and the code starting is latched and
    # stops the call before it runs: tests/kernel/test_kernel_tools_kernel.py holds the call there
    wait_until(started.exists, "the kernel's code began (it creates its marker file first)")
    panel.locator("button.think-stop").click()
    expect(card).to_have_attribute("data-state", "output-error", timeout=TURN_MS)
    expect(card.locator(".think-tool-error")).to_contain_text("Interrupted")
    expect_status(panel, "ready")
    expect(panel.locator(".think-notice")).to_be_hidden()
    expect(panel.locator(".think-text", has_text="never")).to_have_count(0)
    namespace_says(page, "X = 7 SUM = 6")  # the kernel runs cells again; the code ran until Stop


def test_stop_after_approve_ends_the_card_interrupted_as_without_approval(kernel_notebook, app: str,
                                                                           tmp_path) -> None:
    """Approve, then Stop while the approved loop runs: the card ends `output-error` with run_code's
    interrupted text (as with run="allow"), not "approved — running"; the next message keeps it so
    (no "already started once")."""
    started = tmp_path / "approved-loop-started"
    cell = agent_cell(f"open({str(started)!r}, 'w').close()\nv0 = 7\nwhile True: pass", "after")
    _page, panel = open_panel(kernel_notebook, cell)
    send(panel, "Loop")
    card = panel.locator(".think-tool[data-tool-name=run_code]")
    expect(card).to_have_attribute("data-state", "approval-requested", timeout=TURN_MS)
    card.locator("button.think-approve").click()
    wait_until(started.exists, "the approved code began (it creates its marker file first)")
    panel.locator("button.think-stop").click()
    expect(card).to_have_attribute("data-state", "output-error", timeout=TURN_MS)
    error = card.locator(".think-tool-error")
    expect(error).to_contain_text("Interrupted after")
    expect(error).to_contain_text("the user stopped the code; the turn was stopped.")
    expect_status(panel, "ready")
    send(panel, "Next")
    expect(last_text(panel)).to_have_text("after", timeout=TURN_MS)
    expect(card).to_have_attribute("data-state", "output-error")
    expect(error).to_contain_text("Interrupted after")
    expect(error).not_to_contain_text("already started once")


def test_stop_clicked_as_soon_as_approve_shows_it_stops_the_approved_code(kernel_notebook, app: str) -> None:
    """Approve, then Stop the instant it shows (the panel turns busy as the kernel starts the
    continuation, still handling the Approve frame): the Stop is not lost, wherever it lands: the
    approved loop never runs, or is interrupted; the card ends `output-error` and the kernel runs
    cells again (the loop would hold it for ever)."""
    cell = agent_cell("v0 = 7\nwhile True: pass", "after")
    page, panel = open_panel(kernel_notebook, cell, extra=[CHECK])
    send(panel, "Loop")
    card = panel.locator(".think-tool[data-tool-name=run_code]")
    expect(card).to_have_attribute("data-state", "approval-requested", timeout=TURN_MS)
    card.locator("button.think-approve").click()
    panel.locator("button.think-stop").click()  # waits only until it shows: the turn is busy
    expect(card).to_have_attribute("data-state", "output-error", timeout=TURN_MS)
    expect(card.locator(".think-tool-error")).to_contain_text("Interrupted")
    expect_status(panel, "ready")
    namespace_says(page, "SUM = 6")  # the kernel is not stuck in the loop
