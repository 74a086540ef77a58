"""No key pressed in the panel reaches the notebook (issue 27 §1), in JupyterLab 4 and Notebook 7.

A person clicks into the panel's message box and types with real keystrokes: Shift+Enter makes a
new line, the arrows, Escape, and the command-mode letters `a`, `b`, `d d` stay in the box, Tab
leaves it, Enter and Ctrl+Enter send. Throughout, the notebook keeps its cells, its active cell
and every execution count (nothing re-ran, nothing was inserted or deleted), and the panel shown
is the same element. The deny-reason field of an approval card gets the same keys. The kernel's
agents are scripted; only reading the notebook's state uses `page.evaluate`.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from panel_flows import TURN_MS, expect_status, last_text, open_panel

pytestmark = pytest.mark.e2e

# What the notebook is doing: its cells, the active cell, the mode, every execution count, and
# whether the panel element is the one first drawn (a re-run cell draws a new one).
NOTEBOOK_STATE = '''() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const panel = document.querySelector(".think-panel");
  if (panel && panel.dataset.keysMark === undefined) panel.dataset.keysMark = "first";
  return {
    cells: nb.widgets.length,
    active: nb.activeCellIndex,
    mode: nb.mode,
    selected: nb.widgets.filter((c) => nb.isSelected(c)).length,
    counts: nb.widgets.map((c) => c.model.type === "code" ? c.model.executionCount : null),
    sources: nb.widgets.map((c) => c.model.sharedModel.getSource()),
    panels: document.querySelectorAll(".think-panel").length,
    samePanel: panel !== null && panel.dataset.keysMark === "first",
  };
}'''

AGENT = ('agent = bot([[S.text("First reply.")], [S.text("Second reply.")], '
         '[S.tool_call("delete_file", {"path": "notes.txt"})], [S.text("Kept it.")]])\nagent.panel()')


def state(page: Any) -> dict:
    return page.evaluate(NOTEBOOK_STATE)


EVERY_CELL_RAN = """() => window.jupyterapp.shell.currentWidget.content.widgets.every(
  (c) => c.model.type !== "code" || c.model.executionCount !== null)"""


def open_ran(notebook: Any, agent_cell: str, extra: list[str]) -> tuple[Any, Any]:
    """`open_panel`, then wait until every code cell has run (Run All queues the cells after the panel's:
    the panel can be ready before `y = 2` has its count, which then changed under the test's feet)."""
    page, panel = open_panel(notebook, agent_cell, extra=extra)
    page.wait_for_function(EVERY_CELL_RAN, timeout=TURN_MS)
    return page, panel


def test_keys_typed_in_the_panel_stay_in_the_panel(notebook, app: str) -> None:
    page, panel = open_ran(notebook, AGENT, extra=["x = 1", "y = 2"])
    expect(page.locator(".jp-Cell").nth(4).locator(".jp-OutputArea-output")).to_have_count(0)  # x = 1 shows nothing
    page.locator(".jp-Cell").nth(4).locator(".jp-InputArea-editor").click()  # editing another cell
    box = panel.locator("textarea.think-input")
    box.click()
    before = state(page)
    assert before["panels"] == 1 and before["samePanel"], before

    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")  # a new line in the box, not "run the cell"
    page.keyboard.type("second line ")
    for key in ["a", "b", "d", "d"]:  # command-mode letters: insert above/below, delete the cell
        page.keyboard.press(key)
    for key in ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Escape", "Escape"]:
        page.keyboard.press(key)
    expect(box).to_have_value("first line\nsecond line abdd")
    expect(box).to_be_focused()
    assert state(page) == before, (state(page), before)

    page.keyboard.press("Enter")  # sends
    user = panel.locator(".think-message[data-role=user]")
    expect(user).to_have_count(1, timeout=TURN_MS)
    expect(user.first).to_contain_text("second line abdd")
    expect(last_text(panel)).to_have_text("First reply.", timeout=TURN_MS)
    expect_status(panel, "ready")
    expect(box).to_have_value("")
    assert state(page) == before, (state(page), before)

    box.click()
    page.keyboard.type("again")
    page.keyboard.press("Control+Enter")  # sends too; never "run the cell"
    expect(user).to_have_count(2, timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("Second reply.", timeout=TURN_MS)
    expect_status(panel, "ready")
    page.keyboard.press("Tab")  # leaves the box (the browser's focus order), runs nothing
    expect(box).not_to_be_focused()
    assert state(page) == before, (state(page), before)

    # an approval card's deny-reason field: the same keys stay there
    box.click()
    page.keyboard.type("delete notes.txt")
    page.keyboard.press("Enter")
    expect_status(panel, "awaiting-approval")
    reason = panel.locator("input.think-deny-reason").first
    reason.click()
    page.keyboard.type("keep ")
    page.keyboard.press("Shift+Enter")
    for key in ["a", "b", "d", "d", "ArrowUp", "ArrowDown", "Escape"]:
        page.keyboard.press(key)
    expect(reason).to_have_value("keep abdd")
    assert state(page) == before, (state(page), before)


POEM = "Roses are red,\nthe kernel is warm,\nmy agent replies\nin perfect form."


def test_a_new_line_typed_with_shift_enter_shows_in_the_sent_message(notebook, app: str) -> None:
    """The placeholder promises Shift+Enter makes a new line: the sent message keeps it, and so does
    a reply written in lines (a poem, an address), as chat panels show them; markdown's soft line
    break joined both into one line."""
    _, panel = open_panel(notebook, f'agent = bot([[S.text({POEM!r}, chunk_size=5)]])\nagent.panel()')
    panel.locator("textarea.think-input").click()
    panel.page.keyboard.type("Write me a poem.")
    panel.page.keyboard.press("Shift+Enter")
    panel.page.keyboard.type("Four lines, please.")
    panel.page.keyboard.press("Enter")
    user = panel.locator(".think-message[data-role=user] .think-text")
    expect(user).to_have_count(1, timeout=TURN_MS)
    assert user.inner_text() == "Write me a poem.\nFour lines, please."
    expect(last_text(panel)).to_contain_text("in perfect form.", timeout=TURN_MS)
    expect_status(panel, "ready")
    assert last_text(panel).inner_text() == POEM


def test_shift_enter_with_several_cells_selected_runs_none_of_them(notebook, app: str) -> None:
    """Issue 27 §1's worst case: with several cells selected (Shift+click in command mode), Shift+Enter
    and Ctrl+Enter typed in the panel's box re-ran every selected cell and sent their questions again."""
    page, panel = open_ran(notebook, AGENT, extra=["x = 1", "y = 2"])
    prompts = page.locator(".jp-Cell .jp-InputPrompt")
    prompts.nth(0).click()
    prompts.nth(4).click(modifiers=["Shift"])
    expect(page.locator(".jp-Cell.jp-mod-selected")).to_have_count(5)
    box = panel.locator("textarea.think-input")
    box.click()
    before = state(page)
    assert before["selected"] == 5, before  # the click into the box kept the selection
    assert before["samePanel"], before
    page.keyboard.type("one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("two")
    page.keyboard.press("Shift+Enter")
    expect(box).to_have_value("one\ntwo\n")
    assert state(page) == before, (state(page), before)
    page.keyboard.press("Control+Enter")  # sends the message, runs no cell
    expect(panel.locator(".think-message[data-role=user] .think-text")).to_have_text(["one\ntwo"], timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("First reply.", timeout=TURN_MS)
    expect_status(panel, "ready")
    assert state(page) == before, (state(page), before)


DIRTY = "() => window.jupyterapp.shell.currentWidget.context.model.dirty"


def test_ctrl_s_typed_in_the_panel_saves_the_notebook(notebook, app: str) -> None:
    """Accel+S is the one key the panel lets out: it saves the notebook as it does everywhere in
    JupyterLab and Notebook 7 (a tester pressed it in the box: nothing was saved, the notebook stayed
    dirty). The box keeps what was typed and nothing is sent or run."""
    page, panel = open_ran(notebook, AGENT, extra=["x = 1"])
    page.locator(".jp-Cell").nth(3).locator(".jp-InputArea-editor").click()
    page.keyboard.type("  # edited")  # a real edit: the notebook has unsaved changes
    page.wait_for_function(f"({DIRTY})() === true", timeout=TURN_MS)
    box = panel.locator("textarea.think-input")
    box.click()
    page.keyboard.type("draft")
    before = state(page)
    page.keyboard.press("Control+s")
    page.wait_for_function(f"({DIRTY})() === false", timeout=TURN_MS)
    expect(box).to_have_value("draft")
    expect(box).to_be_focused()
    expect(panel.locator(".think-message[data-role=user]")).to_have_count(0)
    assert state(page) == before, (state(page), before)
