"""Busy from the first moment, in a real JupyterLab (issues 17 §1 and §6, 18 §3): a `%%think` cell's
turn shows `submitted` with Stop within 200 ms of the cell starting (measured in the page, from the
kernel's `execute_input` to the panel's attribute change), a message queued behind a running turn
says so, and a narrow panel keeps its header on one line with the database path cut in the middle.
The kernel's agents are scripted; what is measured and clicked is the real page."""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from jlab import REPO_ROOT, run_cell, wait_kernel_idle
from panel_flows import TURN_MS, expect_status, last_text, open_panel

pytestmark = pytest.mark.e2e

RESULTS = REPO_ROOT / "test-results"

HELPER = '''
import asyncio
from think_nb import Think
from think_nb.testing import ScriptedModel as S

gate = asyncio.Event()  # the first reply waits here until a cell sets it
script = S([[S.text("Working on it"), S.wait(gate), S.text(", done.")], [S.text("Second reply.")],
            [S.text("Third reply.")]])

class Helper(Think):
    def get_model(self):
        return script.model
'''

# In the page: the time the kernel starts the `%%think` cell (its `execute_input` on IOPub) and the
# first time a panel's status becomes `submitted` after it, with Stop's visibility at that moment;
# every status text shown is kept (what a person read, in order).
WATCH = '''() => {
  const w = window;
  w.__think = { t0: null, submittedAt: null, stopShown: null, texts: [], firstBusy: null };
  const kernel = w.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  kernel.iopubMessage.connect((_, msg) => {
    if (msg.header.msg_type === "execute_input" && String(msg.content.code).startsWith("%%think")) {
      w.__think.t0 = performance.now();
    }
  });
  const seen = (panel) => {
    const s = w.__think;
    if (s.t0 === null) return;
    const status = panel.dataset.status;
    if (s.firstBusy === null && status !== "ready") s.firstBusy = status;
    if (status === "submitted" && s.submittedAt === null) {
      s.submittedAt = performance.now();
      s.stopShown = !panel.querySelector("button.think-stop").hidden;
    }
    const text = panel.querySelector(".think-status").textContent;
    if (s.texts.at(-1) !== text) s.texts.push(text);
  };
  new MutationObserver((records) => {
    for (const r of records) {
      const panel = r.target.closest && r.target.closest(".think-panel");
      if (panel) seen(panel);
    }
  }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["data-status"],
                              childList: true, characterData: true });
}'''


def run_cells(page: Any, indices: range) -> None:
    for i in indices:
        run_cell(page, i)
    wait_kernel_idle(page)


def test_a_think_cell_is_submitted_with_stop_within_200_ms(notebook, app: str) -> None:
    page = notebook(["%load_ext think_nb", HELPER, "%think Helper", "%%think Helper\nHello there", "gate.set()"])
    run_cells(page, range(3))
    panel = page.locator(".think-panel").first
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    page.evaluate(WATCH)
    run_cell(page, 3)
    expect(last_text(panel)).to_have_text("Working on it", timeout=TURN_MS)
    seen = page.evaluate("() => window.__think")
    print("status texts seen:", seen["texts"], "submitted after", seen["submittedAt"] - seen["t0"], "ms")
    assert seen["firstBusy"] == "submitted"
    assert seen["stopShown"] is True
    assert seen["submittedAt"] - seen["t0"] <= 200, seen
    expect(panel.locator("button.think-stop")).to_be_visible()
    run_cell(page, 4)
    expect(last_text(panel)).to_have_text("Working on it, done.", timeout=TURN_MS)
    expect_status(panel, "ready")


def test_messages_sent_from_cells_while_a_turn_runs_show_at_once_queued_in_order(notebook, app: str) -> None:
    """Issue 27: a `%%think` cell run (Shift+Enter) while a turn streams shows its message in the panel
    at once, after the streaming reply, marked queued, in the order the cells ran; the status says how
    many wait; each becomes an ordinary message when its turn starts. (Before: a queued message
    appeared only when its turn started.)"""
    page = notebook(["%load_ext think_nb", HELPER, "%think Helper", "%%think Helper\nFirst question",
                     "%%think Helper\nSecond question", "%%think Helper\nThird question", "gate.set()"])
    run_cells(page, range(3))
    panel = page.locator(".think-panel").first
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    run_cell(page, 3)
    expect(last_text(panel)).to_have_text("Working on it", timeout=TURN_MS)  # then it waits on the gate
    expect_status(panel, "streaming")
    page.locator(".jp-Cell").nth(4).locator(".jp-InputPrompt").click()  # command mode, as a person selects it
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    messages = panel.locator(".think-message")
    expect(messages.locator(".think-text")).to_have_text(
        ["First question", "Working on it", "Second question", "Third question"], timeout=30_000)
    queued = panel.locator(".think-message[data-queued=true]")
    expect(queued.locator(".think-text")).to_have_text(["Second question", "Third question"])
    expect(queued.locator(".think-queued")).to_have_count(2)
    status = panel.locator(".think-status")
    expect(status).to_have_text("streaming · 2 queued", timeout=30_000)
    expect(status).to_have_attribute("data-detail", "2 queued")
    expect(panel.locator("button.think-stop")).to_be_visible()
    run_cell(page, 6)
    expect(last_text(panel)).to_have_text("Third reply.", timeout=TURN_MS)
    expect_status(panel, "ready")
    expect(status).to_have_text("ready")
    expect(messages.locator(".think-text")).to_have_text(
        ["First question", "Working on it, done.", "Second question", "Second reply.", "Third question",
         "Third reply."])
    expect(queued).to_have_count(0)


def test_with_a_queue_the_status_names_the_running_turn_and_stop_stops_it(notebook, app: str) -> None:
    """Issue 27: a message typed in the panel runs; a `%%think` cell run meanwhile (Shift+Enter) queues
    behind it. The status read "queued behind 1 turn" (the queued turn's words) while Stop stopped the
    running one; it now describes the running turn with "1 queued" beside it, and Stop stops that turn."""
    page = notebook(["%load_ext think_nb", HELPER, "%think Helper", "%%think Helper\nSecond question"])
    run_cells(page, range(3))
    panel = page.locator(".think-panel").first
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    box = panel.locator("textarea.think-input")
    box.click()
    page.keyboard.type("First question")
    page.keyboard.press("Enter")
    expect(last_text(panel)).to_have_text("Working on it", timeout=TURN_MS)  # then it waits on the gate
    expect_status(panel, "streaming")
    page.locator(".jp-Cell").nth(3).locator(".jp-InputPrompt").click()  # command mode, as a person selects it
    page.keyboard.press("Shift+Enter")
    status = panel.locator(".think-status")
    expect(status).to_have_text("streaming · 1 queued", timeout=30_000)
    expect(panel.locator(".think-message[data-queued=true] .think-text")).to_have_text(["Second question"])
    panel.locator("button.think-stop").click()
    replies = panel.locator(".think-message[data-role=assistant]")
    expect(replies.first.locator(".think-stopped")).to_be_visible(timeout=TURN_MS)  # the running turn stopped
    expect(replies.first.locator(".think-text")).to_have_text("Working on it")  # never ", done."
    expect(status).not_to_contain_text("queued", timeout=TURN_MS)


LONG_DB = f"/tmp/think-e2e-narrow-{uuid.uuid4().hex[:8]}/courses/agents-101/week-3/.think/tools_and_approval.sqlite"

NARROW = f'''
from think_nb import Think
from think_nb.testing import ScriptedModel as S
script = S([[S.text("Hello there."), S.usage(12, 3)]])
class Tutor(Think):
    def get_model(self):
        return script.model
Tutor("default", db={LONG_DB!r}).panel()
'''

GEOMETRY = '''(panel) => {
  const header = panel.querySelector(".think-header");
  const shown = [...header.children].filter((k) => getComputedStyle(k).display !== "none");
  const box = header.getBoundingClientRect();
  const rects = shown.map((k) => k.getBoundingClientRect());
  const middles = rects.map((r) => (r.top + r.bottom) / 2);
  const db = header.querySelector(".think-db-path");
  return {
    panelWidth: panel.getBoundingClientRect().width,
    overflow: header.scrollWidth - header.clientWidth,
    rows: Math.max(...middles) - Math.min(...middles),
    pastRight: Math.max(...rects.map((r) => r.right)) - box.right,
    shown: shown.map((k) => k.className),
    dbTitle: db.title, dbText: db.textContent, dbWidth: db.getBoundingClientRect().width,
    dbClipped: db.scrollWidth > db.clientWidth,  // CSS would cut its end: the text must fit
    nameWidth: header.querySelector(".think-agent-name").getBoundingClientRect().width,
  };
}'''


@pytest.mark.parametrize("app", ["lab"])
def test_a_narrow_panel_keeps_its_header_on_one_line(notebook, app: str, request: pytest.FixtureRequest) -> None:
    page = notebook(["%load_ext think_nb", NARROW])
    run_cells(page, range(2))
    folder = Path(LONG_DB).parents[4]
    request.addfinalizer(lambda: shutil.rmtree(folder, ignore_errors=True))
    panel = page.locator(".think-panel").first
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    page.evaluate("() => window.jupyterapp.shell.activateById('filebrowser')")  # the left area open
    expect(page.locator("#filebrowser")).to_be_visible()
    box = panel.locator("textarea.think-input")
    box.fill("Hi")
    box.press("Enter")
    expect(last_text(panel)).to_have_text("Hello there.", timeout=TURN_MS)
    expect_status(panel, "ready")
    panel.evaluate("el => { el.style.width = '420px'; }")
    # the panel cuts the path after its resize observer runs (a frame later): wait for that, not a timer
    page.wait_for_function("""() => { const db = document.querySelector('.think-panel .think-db-path');
        return db && db.textContent.includes('…') && db.scrollWidth <= db.clientWidth; }""", timeout=15_000)
    geometry = panel.evaluate(GEOMETRY)
    RESULTS.mkdir(exist_ok=True)
    page.screenshot(path=str(RESULTS / "narrow-header.png"))
    panel.screenshot(path=str(RESULTS / "narrow-header-panel.png"))
    print("narrow header:", geometry)
    assert 420 <= geometry["panelWidth"] <= 422  # 420 px and its border
    assert geometry["overflow"] <= 0, geometry  # nothing spills out of the header
    assert geometry["rows"] <= 2, geometry  # every item on one line (their middles align)
    assert geometry["pastRight"] <= 0.5, geometry
    assert "think-db-path" in " ".join(geometry["shown"]) and geometry["dbWidth"] > 40, geometry
    assert geometry["dbTitle"] == LONG_DB
    head, _, tail = geometry["dbText"].partition("…")  # cut in the middle: both ends of the path shown
    assert head and tail and LONG_DB.startswith(head) and LONG_DB.endswith(tail), geometry
    assert not geometry["dbClipped"], geometry  # the cut text fits: CSS does not cut its end as well
    assert geometry["nameWidth"] > 40, geometry
    expect(panel.locator(".think-agent-name")).to_have_text(re.compile(r"^Tutor · default$"))


STATUSES = '''(panel) => {
  window.__statuses = [panel.dataset.status];
  new MutationObserver(() => {
    if (window.__statuses.at(-1) !== panel.dataset.status) window.__statuses.push(panel.dataset.status);
  }).observe(panel, { attributes: true, attributeFilter: ["data-status"] });
}'''


def test_stop_before_anything_streamed_never_says_streaming(notebook, app: str) -> None:
    """Issue 27 §4, stopping: a turn stopped while its model had sent nothing yet (the embedded model
    choosing a tool, here a scripted step waiting) goes from `submitted` to `ready`; its `abort`
    chunk showed `streaming` for a moment although nothing streamed."""
    page, panel = open_panel(notebook, 'import asyncio\ngate = asyncio.Event()\n'
                                       'agent = bot([[S.wait(gate), S.text("never shown")]])\nagent.panel()')
    panel.evaluate(STATUSES)
    box = panel.locator("textarea.think-input")
    box.click()
    page.keyboard.type("Take your time")
    page.keyboard.press("Enter")
    expect_status(panel, "submitted")
    expect(panel.locator("button.think-stop")).to_be_visible()
    panel.locator("button.think-stop").click()
    expect_status(panel, "ready")
    expect(panel.locator(".think-stopped")).to_have_count(1, timeout=TURN_MS)
    seen = page.evaluate("() => window.__statuses")
    assert "streaming" not in seen, seen


EMBEDDED = '''
from think_nb import Think, tool

@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b

class Calc(Think):  # no get_model(): the embedded SmolLM2-135M, in the kernel
    include_workspace_tools = False
    def get_tools(self):
        return [add]

agent = Calc("status-truth")
agent.clear_messages()
agent.panel()
'''

# Every (status, status text, what of the reply a person sees) the panel goes through, in order.
SEEN = '''(panel) => {
  const shown = () => {
    const reply = panel.querySelectorAll(".think-message[data-role=assistant]");
    const last = reply.length ? reply[reply.length - 1] : null;
    const text = last ? [...last.querySelectorAll(".think-text")].map((t) => t.textContent).join("").trim() : "";
    return text.length + (last ? last.querySelectorAll(".think-tool").length : 0);
  };
  const users = () => panel.querySelectorAll(".think-message[data-role=user]").length;
  window.__seen = [];
  const note = () => {
    const s = panel.querySelector(".think-status");
    const row = [panel.dataset.status, s.dataset.detail || "", shown(), users()];
    const prev = window.__seen.at(-1);
    if (!prev || prev.join("|") !== row.join("|")) window.__seen.push(row);
  };
  note();
  new MutationObserver(note).observe(panel, { subtree: true, childList: true, attributes: true, characterData: true });
}'''


def test_the_embedded_models_turn_says_what_it_does(notebook, app: str) -> None:
    """Issue 27 §4 with the real embedded model: the user's message shows at once, while the
    non-streamed tool step runs the status is `submitted` saying "thinking — choosing a tool…",
    and `streaming` is shown only once part of the reply (text or a tool card) is there."""
    page = notebook(["%load_ext think_nb", EMBEDDED])
    run_cells(page, range(2))
    panel = page.locator(".think-panel").first
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    panel.evaluate(SEEN)
    panel.locator("textarea.think-input").click()
    page.keyboard.type("What is 2 plus 40? Use the add tool.")
    page.keyboard.press("Enter")
    expect(panel.locator(".think-message[data-role=user]")).to_have_text(["What is 2 plus 40? Use the add tool."])
    expect(panel.locator(".think-status")).to_have_attribute("data-detail", "thinking — choosing a tool…",
                                                              timeout=TURN_MS)
    expect_status(panel, "submitted")
    card = panel.locator(".think-tool[data-tool-name=add]")
    expect(card).to_have_count(1, timeout=TURN_MS)
    expect_status(panel, "ready", timeout=TURN_MS)
    seen = page.evaluate("() => window.__seen")
    print("statuses seen:", seen)
    sent = next(i for i, row in enumerate(seen) if row[3] == 1)
    assert seen[sent][0] in ("ready", "submitted") and seen[sent][2] == 0, seen  # shown before any reply
    assert ["submitted", "thinking — choosing a tool…", 0, 1] in seen, seen
    streaming = [row for row in seen if row[0] == "streaming"]
    assert streaming and all(row[2] > 0 for row in streaming), f"streaming with nothing shown: {seen}"
