"""What a teacher sees in a real browser: tool cards in words (done, failed, blocked, waiting,
approved, denied), Continue under a reply cut at its token limit, the versions of a regenerated
reply, and Clear asking first. The kernel's agents are scripted; the clicks are real."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

pytestmark = pytest.mark.e2e

CARDS = '''
import asyncio
from think_nb.turns.hooks import ToolCallDecision

@tool
def lookup(word: str) -> str:
    """Look a word up."""
    return f"{word}: found"

@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)

@tool(needs_approval=True)
async def erase(path: str) -> str:
    """Erase a file (slowly)."""
    await asyncio.sleep(3)  # long enough to read "approved — running"
    return f"erased {path}"

script = S([[S.tool_call("lookup", {"word": "owl"}, id="c-ok"),
             S.tool_call("explode", {"reason": "no fuel"}, id="c-err"),
             S.tool_call("lookup", {"word": "secret"}, id="c-block"),
             S.tool_call("erase", {"path": "a.txt"}, id="c-a"), S.tool_call("erase", {"path": "b.txt"}, id="c-b")],
            [S.text("Erased a.txt; left b.txt.")]])

class Tutor(Think):
    def get_model(self):
        return script.model
    def get_tools(self):
        return [lookup, explode, erase]
    def before_tool_call(self, ctx):
        if ctx.input.get("word") == "secret":
            return ToolCallDecision.block("secrets stay secret")

Tutor("default").panel()
'''


def badge(panel: Any, index: int) -> Any:
    return panel.locator(".think-tool").nth(index).locator(".think-tool-badge")


def test_tool_cards_say_what_happened(notebook, app: str) -> None:
    _, panel = open_panel(notebook, CARDS)
    send(panel, "Do everything")
    expect_status(panel, "awaiting-approval")
    cards = panel.locator(".think-tool")
    expect(cards).to_have_count(5)
    expect(cards.nth(0)).to_have_attribute("data-outcome", "done")
    expect(badge(panel, 0)).to_have_text("done")
    expect(badge(panel, 0)).to_have_attribute("title", "state: output-available")
    expect(cards.nth(1)).to_have_attribute("data-outcome", "failed")
    expect(cards.nth(1).locator(".think-tool-error")).to_contain_text("ValueError: no fuel")
    expect(badge(panel, 2)).to_have_text("blocked by before_tool_call: secrets stay secret")
    expect(cards.nth(2)).to_have_attribute("data-outcome", "blocked")
    expect(badge(panel, 3)).to_have_text("waiting for your approval (1 of 2)")
    expect(badge(panel, 4)).to_have_text("waiting for your approval (2 of 2)")
    expect(panel.locator("button.think-regenerate")).to_have_count(0)

    cards.nth(4).locator("input.think-deny-reason").fill("keep b")
    cards.nth(4).locator("button.think-deny").click()
    expect(badge(panel, 4)).to_have_text("denied: keep b", timeout=TURN_MS)
    cards.nth(3).locator("button.think-approve").click()
    expect(badge(panel, 3)).to_have_text("approved — running", timeout=TURN_MS)
    expect(badge(panel, 3)).to_have_text("done", timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("Erased a.txt; left b.txt.", timeout=TURN_MS)
    expect_status(panel, "ready")
    expect(badge(panel, 4)).to_have_text("denied: keep b")
    expect(panel.locator("button.think-regenerate")).to_have_count(1)


def test_continue_after_a_cut_reply(notebook, app: str) -> None:
    _, panel = open_panel(notebook, 'agent = bot([[S.text("Once upon a"), S.finish("length"), S.usage(20, 4)], '
                                       '[S.text(" time, the end.")]])\nagent.panel()')
    send(panel, "Tell me a story")
    cut = panel.locator(".think-cut")
    expect(cut).to_contain_text("cut at 4 tokens — continue?", timeout=TURN_MS)
    expect_status(panel, "ready")
    cut.locator("button.think-continue").click()
    expect(last_text(panel)).to_have_text("time, the end.", timeout=TURN_MS)
    expect_status(panel, "ready")
    expect(panel.locator("button.think-continue")).to_have_count(0)
    expect(panel.locator(".think-cut")).to_have_text("cut at 4 tokens")


def test_versions_of_a_regenerated_reply(notebook, app: str) -> None:
    _, panel = open_panel(notebook, 'agent = bot([[S.text("First answer.")], [S.text("Second answer.")]])\n'
                                       'agent.panel()')
    send(panel, "Answer me")
    expect(last_text(panel)).to_have_text("First answer.", timeout=TURN_MS)
    expect_status(panel, "ready")
    expect(panel.locator(".think-versions")).to_have_count(0)
    panel.locator("button.think-regenerate").click()
    expect(last_text(panel)).to_have_text("Second answer.", timeout=TURN_MS)
    label = panel.locator(".think-version-label")
    expect(label).to_have_text("2 / 2", timeout=TURN_MS)
    panel.locator("button.think-version-prev").click()
    expect(last_text(panel)).to_have_text("First answer.", timeout=TURN_MS)
    expect(label).to_have_text("1 / 2")
    expect(panel.locator("button.think-version-prev")).to_be_disabled()
    panel.locator("button.think-version-next").click()
    expect(last_text(panel)).to_have_text("Second answer.", timeout=TURN_MS)
    expect(label).to_have_text("2 / 2")


def test_clear_asks_first(notebook, app: str) -> None:
    _, panel = open_panel(notebook, 'agent = bot([[S.text("Hello there.")]])\nagent.panel()')
    expect(panel.locator(".think-agent-name")).to_have_text(re.compile(r"^Bot · bot$"))
    expect(panel.locator(".think-empty")).to_contain_text("runs on a test model (think-scripted/")
    send(panel, "Hi")
    expect(last_text(panel)).to_have_text("Hello there.", timeout=TURN_MS)
    expect_status(panel, "ready")
    panel.locator("button.think-clear").click()
    expect(panel.locator(".think-clear-confirm")).to_contain_text("Clear the whole conversation?")
    panel.locator("button.think-clear-no").click()
    expect(panel.locator(".think-clear-confirm")).to_be_hidden()
    expect(panel.locator(".think-message")).to_have_count(2)
    panel.locator("button.think-clear").click()
    panel.locator("button.think-clear-yes").click()
    expect(panel.locator(".think-message")).to_have_count(0, timeout=30_000)
    expect(panel.locator(".think-empty")).to_be_visible()


NARROW = '''
class Demo(Think):
    def get_model(self):
        return S([[S.text("Hi.")]]).model
    def get_tools(self):
        return []

Demo("default").panel()
'''


def test_a_narrow_page_keeps_the_agents_name_whole(notebook, app: str) -> None:
    """Issue 27 §9: at 760 px the header read "Demo · de…" (the name shrank before the file path);
    the name stays whole, the path gives way; the box names the class ("Message Demo")."""
    page, panel = open_panel(notebook, NARROW)
    page.set_viewport_size({"width": 760, "height": 900})
    name = panel.locator(".think-agent-name")
    expect(name).to_have_text("Demo · default")
    expect(panel.locator(".think-db-path")).to_contain_text("…")  # the path is what gave way
    whole = name.evaluate("el => el.scrollWidth <= el.clientWidth")
    assert whole, f"the name is cut: {name.evaluate('el => [el.scrollWidth, el.clientWidth]')}"
    expect(panel.locator("textarea.think-input")).to_have_attribute(
        "placeholder", "Message Demo (Enter to send, Shift+Enter for a new line)")
    expect(panel.locator(".think-empty")).to_contain_text("runs on a test model")


def test_a_forked_version_shows_its_label_in_the_switcher(notebook, app: str) -> None:
    """Issue 32: a fork (`agent.fork`) is a sibling of the original reply; the switcher shows it,
    with where it was forked and what was edited, and "compare" shows it beside the original."""
    _, panel = open_panel(notebook, 'agent = bot([[S.text("First answer.")]])\n'
                                    'await agent.send("Answer me")\n'
                                    'other = S([[S.text("Forked answer.")]])\n'
                                    'stepper = agent.fork(-1, at="before_turn", model=other)\n'
                                    'stepper.paused.ctx.system = "Be different."\n'
                                    'stepper.run()\n'
                                    'agent.panel()')
    expect(last_text(panel)).to_have_text("Forked answer.", timeout=TURN_MS)
    label, fork = panel.locator(".think-version-label"), panel.locator(".think-version-fork")
    expect(label).to_have_text("2 / 2")
    expect(fork).to_have_text("forked at before_turn — system prompt edited")
    compare = panel.locator(".think-compare")
    expect(compare).to_be_hidden()
    panel.locator("button.think-version-compare").click()  # beside the original: the word diff
    expect(compare.locator("del")).to_have_text("First ")
    expect(compare.locator("ins")).to_have_text("Forked ")
    expect(compare.locator(".think-compare-diff")).to_have_text("First Forked answer.")
    panel.locator("button.think-version-prev").click()
    expect(last_text(panel)).to_have_text("First answer.", timeout=TURN_MS)
    expect(label).to_have_text("1 / 2")
    expect(fork).to_have_count(0)
    panel.locator("button.think-version-next").click()
    expect(fork).to_have_text("forked at before_turn — system prompt edited", timeout=TURN_MS)


EMBEDDED_SHORT = '''
from think_nb import Think, TurnConfig

class Short(Think):  # no get_model(): the embedded SmolLM2-135M, greedy
    include_workspace_tools = False
    def before_turn(self, ctx):
        return TurnConfig(max_output_tokens=12)

agent = Short("cut-and-regenerate")
agent.clear_messages()
agent.panel()
'''


def test_the_embedded_model_says_where_it_was_cut_and_regenerates_another_reply(notebook, app: str) -> None:
    """Issue 27 §6c/§6d on the real embedded model, clicked: a reply cut at its token limit offers
    "cut at 12 tokens — continue?" (it always said `stop`), and Regenerate on this greedy model gives
    another reply (it repeated the same one)."""
    page = notebook(["%load_ext think_nb", EMBEDDED_SHORT])
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    panel = page.locator(".think-panel").first
    expect_status(panel, "ready", timeout=60_000)
    panel.locator("textarea.think-input").click()
    page.keyboard.type("Write a long story about a lighthouse keeper.")
    page.keyboard.press("Enter")
    cut = panel.locator(".think-cut")
    expect(cut).to_contain_text("cut at 12 tokens — continue?", timeout=TURN_MS)
    expect_status(panel, "ready")
    first = last_text(panel).inner_text()
    panel.locator("button.think-regenerate").click()
    expect(panel.locator(".think-version-label")).to_have_text("2 / 2", timeout=TURN_MS)
    expect_status(panel, "ready")
    second = last_text(panel).inner_text()
    assert first.strip() and second.strip() and second != first, (first, second)
    expect(panel.locator(".think-cut")).to_contain_text("cut at 12 tokens")


HEADER_FITS = '''(panel) => {
  const header = panel.querySelector(".think-header");
  const box = panel.getBoundingClientRect();
  const shown = [...header.querySelectorAll("button")].filter((b) => b.getClientRects().length);
  return {
    panelWidth: Math.round(box.width),
    overflow: header.scrollWidth - header.clientWidth,
    outside: shown.filter((b) => {
      const r = b.getBoundingClientRect();
      return r.left < box.left || r.right > box.right + 0.5;
    }).map((b) => b.className),
    buttons: shown.map((b) => b.className),
  };
}'''


@pytest.mark.parametrize("width", [760, 377])
def test_a_narrow_header_keeps_every_button_inside_the_panel(notebook, app: str, width: int) -> None:
    """Issue 27: on a 760 px page with Lab's file browser open (a ~377 px panel) the header needed
    430 px, Clear sat outside the panel and the path read "/w…ite". The header fits: the cut path
    goes first and the header wraps; Chat, Context and Clear stay inside and work."""
    page, panel = open_panel(notebook, NARROW)
    page.set_viewport_size({"width": 760, "height": 900})
    if app == "lab":
        page.evaluate("() => window.jupyterapp.shell.activateById('filebrowser')")  # the left area open
        expect(page.locator("#filebrowser")).to_be_visible()
    if width != 760:
        panel.evaluate(f"el => {{ el.style.width = '{width}px'; }}")
    page.wait_for_function("""(w) => { const p = document.querySelector('.think-panel');
        return p && (w === 760 || Math.round(p.getBoundingClientRect().width) <= w + 2); }""", arg=width)
    fit = panel.evaluate(HEADER_FITS)
    assert fit["overflow"] <= 0 and fit["outside"] == [], fit
    assert {"think-tab", "think-clear"} <= {c for b in fit["buttons"] for c in b.split()}, fit
    expect(panel.locator(".think-agent-name")).to_have_text("Demo · default")
    panel.locator("button.think-tab[data-tab=context]").click()
    expect(panel).to_have_attribute("data-tab", "context")
    panel.locator("button.think-tab[data-tab=chat]").click()
    panel.locator("button.think-clear").click()  # a real click: it is on screen and inside the panel
    expect(panel.locator(".think-clear-confirm")).to_contain_text("Clear the whole conversation?")
    panel.locator("button.think-clear-no").click()
    expect(panel.locator("button.think-clear")).to_be_visible()
