""""Into a cell" in a real browser: a run_code card's button puts the code into a new cell below the
panel's cell, in JupyterLab 4 and Notebook 7, through the think-nb-cells labextension the install put in
share/jupyter/labextensions (no Node at the user's end).

The model is scripted; `run_code` is think_nb's kernel tool (`include_kernel_tools = "allow"`: it runs in
this kernel without asking). What is tested is the card, the extension and the notebook: the new cell
sits right below the panel's cell, holds exactly the code that ran, and runs.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from jlab import run_all
from panel_flows import TURN_MS, expect_status, last_text, open_card, send

pytestmark = pytest.mark.e2e

CODE = 'import math\nlabel = "π ≈"  # a comment, quotes \' and "\nprint(label, round(math.pi, 3))'

SETUP = f'''
from think_nb import Think
from think_nb.testing import ScriptedModel as S

CODE = {json.dumps(CODE)}
script = S([[S.tool_call("run_code", {{"code": CODE}})], [S.text("Here is the code.")]])

class Coder(Think):
    include_kernel_tools = "allow"
    def get_model(self):
        return script.model
'''
PANEL = 'agent = Coder("coder")\nagent.panel()'
AFTER = 'print("the cell after")'

SOURCES = """() => {
    const nb = Array.from(window.jupyterapp.shell.widgets("main")).find((w) => w.content?.model?.cells);
    const cells = nb.content.model.cells;
    return Array.from({length: cells.length}, (_, i) => [cells.get(i).type, cells.get(i).sharedModel.getSource()]);
}"""


def test_into_a_cell_inserts_the_code_below_the_panels_cell(notebook, app: str) -> None:
    cells = ["%load_ext think_nb", SETUP, PANEL, AFTER]
    page = notebook(cells)
    run_all(page)
    panel = page.locator(".think-panel").first
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    send(panel, "Show me pi")
    expect(last_text(panel)).to_have_text("Here is the code.", timeout=TURN_MS)
    expect_status(panel, "ready")
    card = panel.locator(".think-tool[data-tool-name=run_code]")
    expect(card).to_have_attribute("data-state", "output-available")
    open_card(panel, card)  # a settled card is collapsed: open it, as a person does
    expect(card.locator(".think-tool-output")).to_contain_text("π ≈ 3.142")  # it ran in the kernel
    button = card.locator("button.think-into-cell")
    expect(button).to_have_text("Into a cell")
    button.click()
    expect(card).to_have_attribute("data-into-cell", "inserted")
    expect(card.locator(".think-into-cell-note")).to_have_text("added as a new cell below the panel")
    assert page.evaluate(SOURCES) == [["code", c] for c in [cells[0], cells[1], cells[2], CODE, cells[3]]]
    new_cell = page.locator(".jp-Notebook .jp-Cell").nth(3)
    expect(new_cell).to_have_class(re.compile(r"\bjp-CodeCell\b"))
    expect(new_cell.locator(".jp-InputArea-editor")).to_contain_text("print(label, round(math.pi, 3))")
    expect(new_cell.locator(".jp-OutputArea-output")).to_have_count(0)  # inserted, never run
    new_cell.locator(".jp-InputArea-editor").click()  # the person runs it: it is the code, and it runs
    page.keyboard.press("Shift+Enter")
    expect(new_cell.locator(".jp-OutputArea-output")).to_have_text("π ≈ 3.142", timeout=30_000)


@pytest.mark.parametrize("app", ["lab"])
def test_where_no_notebook_cell_holds_the_panel_the_code_is_copied(notebook, app: str) -> None:
    """A panel in JupyterLab's "Create New View for Cell Output" is in no notebook cell: the extension
    leaves the request alone, and the button copies the code and says so (as in marimo or VS Code)."""
    cells = ["%load_ext think_nb", SETUP, PANEL]
    page = notebook(cells)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    run_all(page)
    panel = page.locator(".jp-Notebook .think-panel").first
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    send(panel, "Show me pi")
    expect(last_text(panel)).to_have_text("Here is the code.", timeout=TURN_MS)
    page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea").click(button="right")
    page.locator(".lm-Menu-item:visible", has_text="Create New View for Cell Output").click()
    view = page.locator(".jp-LinkedOutputView .think-panel")
    card = view.locator(".think-tool[data-tool-name=run_code]")
    expect(card).to_have_attribute("data-state", "output-available", timeout=30_000)
    open_card(view, card)
    card.locator("button.think-into-cell").click()
    expect(card).to_have_attribute("data-into-cell", "copied")
    expect(card.locator(".think-into-cell-note")).to_have_text("copied — paste it into a cell")
    assert page.evaluate("() => navigator.clipboard.readText()") == CODE
    assert page.evaluate(SOURCES) == [["code", c] for c in cells]  # no cell was added
