"""Shared cells and page helpers for the chat panel's browser flows (tests/e2e/test_*_flows.py).

``SETUP`` defines scripted agents in the kernel: ``bot(steps, delay)`` returns a new agent
whose model plays ``steps`` (``S.text``, ``S.tool_call``, ``S.usage``), with tools that
need approval (``delete_file``: always; ``remove``: for absolute paths) and client tools
run by the panel (``time_zone``, ``page_title``, ``selection`` which throws).
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from jlab import run_all

TURN_MS = 90_000  # the first turn imports litellm in the kernel (4-7 s here)

SETUP = '''
import threading
from think_nb.models.litellm_env import get_litellm
threading.Thread(target=get_litellm, daemon=True).start()  # import litellm (5 s) while the page settles

from think_nb import Think, tool, client_tool
from think_nb.testing import ScriptedModel as S

runs = []

@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    runs.append(path)
    return f"deleted {path}"

@tool(needs_approval=lambda args: args["path"].startswith("/"))
def remove(path: str) -> str:
    """Remove a path; absolute paths need approval."""
    runs.append(path)
    return f"removed {path}"

tz = client_tool("time_zone", "The user's time zone.", js="return Intl.DateTimeFormat().resolvedOptions().timeZone;")
title = client_tool("page_title", "The page's title.", js="return {title: document.title, tz: input.tz ?? null};")
selection = client_tool("selection", "The selected text.", js="throw new Error('nothing selected');")

def bot(steps, delay=0.0, name="bot"):
    script = S(steps, delay=delay)
    class Bot(Think):
        def get_model(self):
            return script.model
        def get_tools(self):
            return [delete_file, remove, tz, title, selection]
    return Bot(name)
'''


def open_panel(notebook: Any, agent_cell: str, extra: list[str] | None = None) -> tuple[Any, Any]:
    """Open a notebook of SETUP + ``agent_cell`` (+ ``extra``), run all, return (page, first panel)."""
    page = notebook(["%load_ext think_nb", SETUP, agent_cell, *(extra or [])])
    run_all(page)
    panel = page.locator(".think-panel").first
    # the cells start the kernel's imports (think_nb, litellm in a thread) and an agent: slow on a loaded
    # 2-core machine; the wait ends as soon as the panel is ready, so the bound (a turn's) costs nothing
    expect(panel).to_have_attribute("data-status", "ready", timeout=TURN_MS)
    return page, panel


def send(panel: Any, text: str) -> None:
    """Type ``text`` into the panel and press Enter."""
    box = panel.locator("textarea.think-input")
    box.fill(text)
    box.press("Enter")


def last_text(panel: Any) -> Any:
    """The last text part of the last assistant message."""
    return panel.locator(".think-message[data-role=assistant]").last.locator(".think-text").last


def open_card(panel: Any, card: Any) -> None:
    """Click a settled (collapsed) card's summary, as a person does, once the turn has ended (its end
    renders the message afresh and may move the card under the pointer), and see it open."""
    expect_status(panel, "ready")
    card.locator("summary").click()
    expect(card).to_have_attribute("open", "")


def expect_status(panel: Any, status: str, timeout: float = TURN_MS) -> None:
    expect(panel).to_have_attribute("data-status", re.compile(f"^{status}$"), timeout=timeout)
