"""The context tab in a real browser (JupyterLab): a scripted model writes a context block with
`set_context` during a turn sent from the panel, and the open context tab shows the new content
and usage at once (a `session` frame), without a re-run or a reload."""

from __future__ import annotations

import pytest
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


@pytest.mark.parametrize("app", ["lab"])
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
    percent = float(usage.get_attribute("data-percent") or "0")
    assert 0 < percent < 100
    fill = usage.locator(".think-context-usage-fill")
    width = fill.evaluate("e => e.getBoundingClientRect().width / e.parentElement.getBoundingClientRect().width")
    assert abs(width * 100 - percent) < 1.5, (width, percent)
    expect(block.locator(".think-context-tokens")).to_contain_text("/ 200 tokens")
    block.locator("details summary").click()
    expect(block.locator(".think-context-text")).to_be_visible()
    expect_status(panel, "ready")
    RESULTS_DIR.mkdir(exist_ok=True)
    panel.screenshot(path=str(RESULTS_DIR / "context-tab.png"))

    panel.locator(".think-tab[data-tab=chat]").click()
    expect(last_text(panel)).to_have_text("Noted, Ada.")
