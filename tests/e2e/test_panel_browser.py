"""The chat panel in a real JupyterLab and Notebook 7: type, stream, tool card, reload.

Panel DOM contract: root ``.think-panel[data-status]``, ``.think-message[data-role]``,
``.think-text``, ``.think-tool[data-tool-name][data-state]`` with ``.think-tool-input``
and ``.think-tool-output`` / ``.think-tool-error``, ``textarea.think-input``,
``button.think-send``, ``button.think-stop``, ``.think-error``.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from agents import calc_setup
from jlab import run_all, run_cell, save, wait_kernel_idle

pytestmark = pytest.mark.e2e

TURN_TIMEOUT_MS = 90_000  # the first turn imports litellm in the kernel (4-7 s here)

CALC_SETUP = calc_setup("The answer is 42.", 0.01)
CELLS = ["%load_ext think_nb", CALC_SETUP, "%think Calc"]
PANEL_CELL = 2
IDLE = re.compile(r"^(ready|idle)$")  # AI SDK chat status when no turn runs


def expect_transcript(panel) -> None:
    """The finished turn: the user's question, the add tool card with 42, the answer."""
    user = panel.locator(".think-message[data-role=user]")
    expect(user.first).to_contain_text("What is 2+40?", timeout=TURN_TIMEOUT_MS)
    card = panel.locator(".think-tool[data-tool-name=add]")
    expect(card.locator(".think-tool-output")).to_contain_text("42", timeout=TURN_TIMEOUT_MS)
    expect(card).to_have_attribute("data-state", "output-available")
    expect(panel.locator(".think-tool-error")).to_have_count(0)
    answer = panel.locator(".think-message[data-role=assistant] .think-text")
    expect(answer.last).to_contain_text("The answer is 42.", timeout=TURN_TIMEOUT_MS)


def test_type_question_see_tool_card_and_transcript_after_reload(notebook, app: str) -> None:
    page = notebook(CELLS)
    run_all(page)
    panel = page.locator(".think-panel")
    expect(panel).to_have_count(1, timeout=60_000)
    expect(panel).to_have_attribute("data-status", IDLE, timeout=60_000)

    box = panel.locator("textarea.think-input")
    box.fill("What is 2+40?")
    box.press("Enter")
    expect_transcript(panel)
    expect(panel).to_have_attribute("data-status", IDLE, timeout=TURN_TIMEOUT_MS)
    expect(panel.locator(".think-error")).to_be_hidden()

    # Reload: the kernel lives on; a panel displayed again shows the transcript
    # it gets from the kernel, not from a copy saved in the notebook.
    save(page)
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    wait_kernel_idle(page)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    expect(page.locator(".think-panel")).to_have_count(0)
    run_cell(page, PANEL_CELL)
    panel = page.locator(".think-panel")
    expect(panel).to_have_count(1, timeout=60_000)
    expect_transcript(panel)
