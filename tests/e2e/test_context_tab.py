"""The context tab in a real browser (JupyterLab): a scripted model writes a context block with
`set_context` during a turn sent from the panel, and the open context tab shows the new content
and usage at once (a `session` frame), without a re-run or a reload."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from jlab import REPO_ROOT
from panel_flows import TURN_MS, expect_status, last_text, open_panel

pytestmark = pytest.mark.e2e

RESULTS_DIR = REPO_ROOT / "test-results"
FACT = "The user's name is Ada and she likes tea."

AGENT = f'''
script = S([[S.text("Let me remember that.", chunk_size=2),
             S.tool_call("set_context", {{"label": "memory", "content": {FACT!r}}})],
            [S.text("Noted, Ada.")]], delay=0.05)

class Mem(Think):
    def get_model(self):
        return script.model
    def configure_session(self, session):
        return session.with_context("memory", description="Facts learned about the user.", max_tokens=200)

agent = Mem("ctx-e2e")
agent.panel()
'''


# The memory block's usage bar, read in one page-side call: [data-percent, share of the bar the
# fill covers on screen] when they agree within `tolerance` points, else false. False too while
# the bar is not laid out: a hidden tab, or a bar being replaced (the tab redraws its blocks on
# every `session` frame, and another one comes when the turn ends); or while the fill's width
# still moves (a CSS transition). Reading the layout once, at a moment of its own, raced that.
BAR_WIDTHS = """(tolerance) => {
    const bar = document.querySelector('.think-panel .think-context-block[data-label="memory"] .think-context-usage');
    const fill = bar?.querySelector('.think-context-usage-fill');
    const whole = bar?.getBoundingClientRect().width;
    if (!fill || !whole) return false;
    const percent = parseFloat(bar.dataset.percent);
    const shown = (100 * fill.getBoundingClientRect().width) / whole;
    return Math.abs(shown - percent) < tolerance ? [percent, shown] : false;
}"""


def bar_widths(page: Any, tolerance: float = 1.5) -> tuple[float, float]:
    """(data-percent, percent of the bar the fill covers), waiting until the layout shows the data."""
    try:
        percent, shown = page.wait_for_function(BAR_WIDTHS, arg=tolerance, timeout=10_000).json_value()
    except PlaywrightTimeoutError:
        raise AssertionError("the usage bar's fill never matched its data-percent; [percent, shown] = "
                             f"{page.evaluate(BAR_WIDTHS, 1e9)}") from None
    return percent, shown


def test_context_tab_updates_live_when_the_model_writes_a_block(notebook, app: str) -> None:
    page, panel = open_panel(notebook, AGENT)
    block = panel.locator(".think-context-block[data-label=memory]")
    usage = block.locator(".think-context-usage")

    panel.locator(".think-tab[data-tab=context]").click()
    expect(block).to_be_visible()
    expect(usage).to_have_attribute("data-percent", "0")
    expect(panel.locator(".think-session-select")).to_have_value("")
    expect(panel.locator(".think-session-select option")).to_have_text(["default"])

    panel.locator(".think-tab[data-tab=chat]").click()
    box = panel.locator("textarea.think-input")
    box.fill("My name is Ada and I like tea.")
    box.press("Enter")
    panel.locator(".think-tab[data-tab=context]").click()  # watch the tab while the turn runs

    expect(block.locator(".think-context-text")).to_have_text(FACT, timeout=TURN_MS)
    expect(usage).not_to_have_attribute("data-percent", "0")
    percent, _ = bar_widths(page)  # the fill's on-screen width matches data-percent
    assert 0 < percent < 100
    expect(block.locator(".think-context-tokens")).to_contain_text("/ 200 tokens")
    block.locator("details summary").click()
    expect(block.locator(".think-context-text")).to_be_visible()
    expect_status(panel, "ready")
    RESULTS_DIR.mkdir(exist_ok=True)
    panel.screenshot(path=str(RESULTS_DIR / "context-tab.png"))

    panel.locator(".think-tab[data-tab=chat]").click()
    expect(last_text(panel)).to_have_text("Noted, Ada.")


SLOW = '''
slow = S([[S.text("one two three four five six seven eight nine ten eleven twelve", chunk_size=3)]], delay=0.5)

class Slow(Think):
    def get_model(self):
        return slow.model
    def configure_session(self, session):
        return session.with_context("memory", max_tokens=200)

agent = Slow("ctx-sessions")
agent.panel()
'''


def run_in_cell(page: Any, cell: int, code: str) -> None:
    """Type `code` into cell `cell` (replacing its text) and press Shift+Enter, as a person runs it."""
    page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+a")
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")


def test_the_session_select_follows_cells_and_a_refused_switch_says_why_at_once(notebook, app: str) -> None:
    """Sessions made or deleted in a cell show in the open panel's select at once, and a switch the
    kernel refuses while a turn runs is said in the tab at once (a tester saw the select keep the
    refused session, silently, until the turn ended, and keep offering a session deleted in a cell)."""
    page, panel = open_panel(notebook, SLOW, extra=["# sessions"])
    options = panel.locator(".think-session-select option")
    select = panel.locator(".think-session-select")
    panel.locator(".think-tab[data-tab=context]").click()
    expect(options).to_have_text(["default"])

    run_in_cell(page, 3, 'agent.create_session("third", switch=False)')
    expect(options).to_have_text(["default", "third"], timeout=TURN_MS)
    run_in_cell(page, 3, 'agent.create_session("gone", switch=False); agent.delete_session("gone")')
    expect(page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-InputPrompt")).not_to_have_text("[*]:")
    expect(options).to_have_text(["default", "third"], timeout=TURN_MS)

    panel.locator(".think-tab[data-tab=chat]").click()
    box = panel.locator("textarea.think-input")
    box.click()
    page.keyboard.type("Count to twelve.")
    page.keyboard.press("Enter")
    expect_status(panel, "streaming")
    panel.locator(".think-tab[data-tab=context]").click()
    select.select_option(label="third")
    expect(panel.locator(".think-context-note")).to_contain_text("A turn is running")
    expect(select).to_have_value("")  # snapped back while the turn still runs
    expect(panel).to_have_attribute("data-status", "streaming")
    expect_status(panel, "ready")
    expect(panel.locator(".think-context-note")).not_to_contain_text("A turn is running")
    select.select_option(label="third")  # with no turn running, the switch is made
    expect(select.locator("option:checked")).to_have_text("third")
    expect(select).not_to_have_value("")
    expect(panel.locator(".think-context-note")).not_to_contain_text("A turn is running")
