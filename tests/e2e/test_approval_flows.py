"""Approvals and client tools in a real browser: the panel's buttons drive the kernel's agent.

One flow per test; the frames, the agent's state machine and the DOM are all real.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

pytestmark = pytest.mark.e2e


def test_approve_runs_the_tool_in_the_original_message(notebook, app: str) -> None:
    _, panel = open_panel(notebook, 'agent = bot([[S.tool_call("delete_file", {"path": "notes.txt"})], '
                                       '[S.text("Deleted notes.txt.")]])\nagent.panel()')
    send(panel, "Delete notes.txt")
    expect_status(panel, "awaiting-approval")
    expect(panel.locator(".think-status")).to_have_text("awaiting approval")
    card = panel.locator(".think-tool[data-tool-name=delete_file]")
    expect(card).to_have_attribute("data-state", "approval-requested")
    expect(card.locator(".think-tool-input")).to_contain_text('"path": "notes.txt"')
    card.locator("button.think-approve").click()
    expect(card).to_have_attribute("data-state", "output-available", timeout=TURN_MS)
    expect(card.locator(".think-tool-output")).to_contain_text("deleted notes.txt")
    expect(last_text(panel)).to_have_text("Deleted notes.txt.", timeout=TURN_MS)
    expect_status(panel, "ready")
    expect(panel.locator(".think-approval")).to_have_count(0)


def test_deny_sends_output_denied_and_the_model_answers(notebook, app: str) -> None:
    _, panel = open_panel(notebook, 'agent = bot([[S.tool_call("delete_file", {"path": "a.txt"})], '
                                       '[S.text("Understood, I left a.txt alone.")]])\nagent.panel()')
    send(panel, "Delete a.txt")
    card = panel.locator(".think-tool[data-tool-name=delete_file]")
    expect(card).to_have_attribute("data-state", "approval-requested", timeout=TURN_MS)
    reason = card.locator("input.think-deny-reason")
    reason.fill("I still need it")
    expect(reason).to_have_value("I still need it")  # a card rebuilt while typing keeps what was typed
    card.locator("button.think-deny").click()
    expect(card).to_have_attribute("data-state", "output-denied", timeout=TURN_MS)
    expect(card.locator(".think-tool-error")).to_contain_text("I still need it")
    expect(last_text(panel)).to_have_text("Understood, I left a.txt alone.", timeout=TURN_MS)
    expect_status(panel, "ready")


def test_predicate_approval_asks_only_for_absolute_paths(notebook, app: str) -> None:
    _, panel = open_panel(notebook, 'agent = bot([[S.tool_call("remove", {"path": "tmp.txt"}, id="c-rel"), '
                                       'S.tool_call("remove", {"path": "/etc/hosts"}, id="c-abs")], '
                                       '[S.text("Both removed.")]])\nagent.panel()')
    send(panel, "Remove tmp.txt and /etc/hosts")
    expect_status(panel, "awaiting-approval")
    cards = panel.locator(".think-tool[data-tool-name=remove]")
    expect(cards).to_have_count(2)
    expect(cards.nth(1)).to_have_attribute("data-state", "approval-requested")
    expect(cards.nth(1).locator(".think-tool-input")).to_contain_text("/etc/hosts")
    expect(panel.locator("button.think-approve")).to_have_count(1)  # the relative path needs none
    panel.locator("button.think-approve").click()
    expect(cards.nth(1)).to_have_attribute("data-state", "output-available", timeout=TURN_MS)
    expect(cards.nth(0)).to_have_attribute("data-state", "output-available")
    expect(last_text(panel)).to_have_text("Both removed.", timeout=TURN_MS)


def test_client_tools_run_in_the_browser_in_parallel_and_one_fails(notebook, app: str) -> None:
    page, panel = open_panel(notebook, 'agent = bot([[S.tool_call("time_zone", {}), '
                                       'S.tool_call("page_title", {"tz": "x"}), S.tool_call("selection", {})], '
                                       '[S.text("Got the browser facts.")]])\nagent.panel()')
    send(panel, "Where am I?")
    expect(last_text(panel)).to_have_text("Got the browser facts.", timeout=TURN_MS)
    tz = panel.locator(".think-tool[data-tool-name=time_zone]")
    expect(tz).to_have_attribute("data-state", "output-available")
    browser_tz = page.evaluate("() => Intl.DateTimeFormat().resolvedOptions().timeZone")
    expect(tz.locator(".think-tool-output")).to_contain_text(browser_tz)
    title = panel.locator(".think-tool[data-tool-name=page_title]")
    expect(title).to_have_attribute("data-state", "output-available")
    expect(title.locator(".think-tool-output")).to_contain_text('"tz": "x"')
    sel = panel.locator(".think-tool[data-tool-name=selection]")
    expect(sel).to_have_attribute("data-state", "output-error")
    expect(sel.locator(".think-tool-error")).to_contain_text("nothing selected")
    expect_status(panel, "ready")


def test_enter_in_the_deny_reason_denies_with_that_reason(notebook, app: str) -> None:
    """A person types why and presses Enter, as in any form: the call is denied with that reason
    (Enter did nothing before; only a click on Deny sent it)."""
    page, panel = open_panel(notebook, 'agent = bot([[S.tool_call("delete_file", {"path": "a.txt"})], '
                                       '[S.text("Kept a.txt.")]])\nagent.panel()')
    send(panel, "Delete a.txt")
    card = panel.locator(".think-tool[data-tool-name=delete_file]")
    expect(card).to_have_attribute("data-state", "approval-requested", timeout=TURN_MS)
    reason = card.locator("input.think-deny-reason")
    expect(reason).to_have_attribute("placeholder", "reason (optional), Enter to deny")
    reason.click()
    page.keyboard.type("not today")
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-state", "output-denied", timeout=TURN_MS)
    expect(card.locator(".think-tool-error")).to_contain_text("not today")
    expect(last_text(panel)).to_have_text("Kept a.txt.", timeout=TURN_MS)
    expect_status(panel, "ready")
