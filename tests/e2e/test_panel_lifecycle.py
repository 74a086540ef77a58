"""A panel in the notebook's life (issue 27 §2, §3), in JupyterLab 4 and Notebook 7, by real clicks
and keystrokes.

§2: after Kernel ▸ Restart Kernel… (the menu, clicked) or a killed kernel (SIGKILL; the server
restarts it), the old panel says "The kernel restarted — run the cell again", its box is disabled,
and a message sent there is never left looking sent: a message the kernel never stored is marked
"not sent", the status is never `submitted` for it.

§3: redefining the class and re-running `%think Demo` makes the older panel follow the newest
class: a message typed in the older panel runs on the new class, and both panels show the turn;
also when the older panel shows an agent made in a cell (`agent = Demo("q")`, `%think agent`, as
the quickstart does) and the new one is `%think Demo q`.
"""

from __future__ import annotations

import os
import re
import signal
from typing import Any

import pytest
from playwright.sync_api import expect

from jlab import menu, run_all, wait_kernel_idle
from panel_flows import TURN_MS, expect_status, last_text, open_panel, send

pytestmark = pytest.mark.e2e

AGENT = ('import os\nprint(f"kernel pid {os.getpid()}")\n'
         'agent = bot([[S.text("Stored reply.")], [S.text("Never seen.")]])\nagent.panel()')


def first_turn(page: Any, panel: Any) -> None:
    send(panel, "Hello")
    expect(last_text(panel)).to_have_text("Stored reply.", timeout=TURN_MS)
    expect_status(panel, "ready")


def expect_disconnected(panel: Any) -> None:
    expect(panel).to_have_attribute("data-status", "disconnected", timeout=TURN_MS)
    notice = panel.locator(".think-disconnected")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("run the cell again")
    box = panel.locator("textarea.think-input")
    expect(box).to_have_attribute("aria-disabled", "true")  # still focusable: keys typed there stay in the panel
    expect(box).to_have_attribute("placeholder", "The kernel restarted — run the cell again")
    expect(panel.locator("button.think-send")).to_be_disabled()
    expect(panel.locator("button.think-stop")).to_be_hidden()


def expect_nothing_looks_sent(panel: Any, stored: int = 1) -> None:
    """The `stored` user messages are shown as they were; any other user message says it was not sent."""
    users = panel.locator(".think-message[data-role=user]")
    expect(users.first).to_contain_text("Hello")
    for i in range(stored):
        expect(users.nth(i)).not_to_have_attribute("data-unsent", "true")
    for i in range(stored, users.count()):
        expect(users.nth(i)).to_have_attribute("data-unsent", "true")
        expect(users.nth(i)).to_contain_text("not sent")
    expect(panel).to_have_attribute("data-status", "disconnected")


def test_kernel_restart_from_the_menu_disconnects_the_panel(notebook, app: str) -> None:
    page, panel = open_panel(notebook, AGENT)
    first_turn(page, panel)
    menu(page, "Kernel", "Restart Kernel")
    page.locator(".jp-Dialog .jp-mod-accept").click()  # "Restart"
    expect_disconnected(panel)
    expect(panel.locator(".think-disconnected")).to_contain_text("The kernel restarted — run the cell again")
    wait_kernel_idle(page)
    cells = page.locator(".jp-Notebook .jp-Cell")
    before = cells.count()
    box = panel.locator("textarea.think-input")
    box.click(force=True)  # a person clicks the greyed box (aria-disabled: Playwright would wait) and types:
    # nothing goes anywhere, not to the notebook either
    page.keyboard.type("are you there?")
    page.keyboard.press("Enter")
    expect(box).to_have_value("")
    expect(panel.locator(".think-message[data-role=user]")).to_have_count(1)
    expect(cells).to_have_count(before)  # command-mode `a`/`r`/Enter did not insert or edit cells
    expect_nothing_looks_sent(panel)


def test_after_a_restart_every_control_that_needs_the_kernel_is_disabled(notebook, app: str) -> None:
    """Issue 27: after Kernel ▸ Restart, Send and Clear were disabled but Regenerate and the 2 / 2 version
    arrows stayed enabled, and clicking Regenerate did nothing and said nothing."""
    page, panel = open_panel(notebook, 'agent = bot([[S.text("First version.")], [S.text("Second version.")]])\n'
                                       'agent.panel()')
    send(panel, "Hello")
    expect(last_text(panel)).to_have_text("First version.", timeout=TURN_MS)
    expect_status(panel, "ready")
    panel.locator("button.think-regenerate").click()
    expect(last_text(panel)).to_have_text("Second version.", timeout=TURN_MS)
    expect_status(panel, "ready")
    expect(panel.locator(".think-version-label")).to_have_text("2 / 2")
    expect(panel.locator("button.think-version-prev")).to_be_enabled()
    expect(panel.locator("button.think-regenerate")).to_be_enabled()
    menu(page, "Kernel", "Restart Kernel")
    page.locator(".jp-Dialog .jp-mod-accept").click()  # "Restart"
    expect_disconnected(panel)
    wait_kernel_idle(page)  # the new kernel is up: the old panel stays disconnected
    for control in ("button.think-regenerate", "button.think-version-prev", "button.think-version-next",
                    "button.think-clear"):
        expect(panel.locator(control)).to_be_disabled()
    panel.locator("button.think-regenerate").click(force=True)  # a person clicks it anyway: nothing changes
    expect(panel).to_have_attribute("data-status", "disconnected")
    expect(last_text(panel)).to_have_text("Second version.")
    expect(panel.locator(".think-version-label")).to_have_text("2 / 2")


AGENT_CUT = ('import os\nprint(f"kernel pid {os.getpid()}")\n'
             'agent = bot([[S.text("Stored reply.")], [S.text("Half a reply, then"), S.stall()]])\nagent.panel()')
CUT_NOTE = "The turn was interrupted before it finished; its partial reply was kept."  # state.ts INTERRUPTED_NOTE


def test_a_killed_kernel_disconnects_the_panel_and_an_unstored_message_says_not_sent(notebook, app: str) -> None:
    """Killed mid-turn: the old panel ends the streaming reply with the note a reloaded panel shows,
    and a message typed right after the kill is never left looking sent."""
    page, panel = open_panel(notebook, AGENT_CUT)
    first_turn(page, panel)
    out = page.locator(".jp-OutputArea-output", has_text="kernel pid").first.inner_text()
    pid = int(re.search(r"kernel pid (\d+)", out).group(1))
    send(panel, "Tell me more")
    reply = panel.locator(".think-message[data-role=assistant]").last
    expect(reply).to_have_attribute("data-live", "true", timeout=TURN_MS)
    expect(reply.locator(".think-text")).to_have_text("Half a reply, then", timeout=TURN_MS)  # then it stalls
    box = panel.locator("textarea.think-input")
    box.focus()  # before the kill: a click after it would wait on a box the kill disables (aria-disabled) or
    # on the "kernel died" dialog, whichever comes first on a loaded machine
    os.kill(pid, signal.SIGKILL)
    # typed at once, before the server notices: this message reaches no kernel
    page.keyboard.type("are you there?")
    page.keyboard.press("Enter")
    expect_disconnected(panel)
    expect(reply).not_to_have_attribute("data-live", "true")
    expect(reply.locator(".think-text")).to_have_text("Half a reply, then")
    expect(reply.locator(".think-message-error")).to_have_text(CUT_NOTE)  # cut, as the reloaded panel says
    users = panel.locator(".think-message[data-role=user]")
    print("user messages after the kill:", users.count())
    expect_nothing_looks_sent(panel, stored=2)


def test_a_reply_cut_by_a_restart_says_the_same_before_and_after_it(notebook, app: str) -> None:
    """Kernel ▸ Restart mid-turn: the panel open through it and the one the re-run cell draws say one
    thing of the cut reply (the restart interrupts the kernel first, which stores the reply stopped)."""
    page, panel = open_panel(notebook, AGENT_CUT)
    first_turn(page, panel)
    send(panel, "Tell me more")
    reply = panel.locator(".think-message[data-role=assistant]").last
    expect(reply.locator(".think-text")).to_have_text("Half a reply, then", timeout=TURN_MS)  # then it stalls
    menu(page, "Kernel", "Restart Kernel")
    page.locator(".jp-Dialog .jp-mod-accept").click()  # "Restart"
    expect_disconnected(panel)
    notes = ".think-message-error, .think-stopped"
    expect(reply.locator(notes)).to_have_text([CUT_NOTE])
    wait_kernel_idle(page)
    run_all(page)  # the same cells on the new kernel: the agent reads the stored conversation
    fresh = page.locator(".think-panel").first
    expect(fresh).to_have_attribute("data-status", "ready", timeout=TURN_MS)
    again = fresh.locator(".think-message[data-role=assistant]").last
    expect(again.locator(".think-text")).to_have_text("Half a reply, then")
    expect(again.locator(notes)).to_have_text([CUT_NOTE])


# A refusal a person cannot provoke through the panel (the role guard refuses forged frames only): the
# kernel's guard is made to refuse, the same way (UserError), one message the person types
AGENT_REFUSING = ('import think_nb.messages.validate as guard\nfrom think_nb.errors import UserError\n'
                  'role_guard = guard.check_speaker\n'
                  'def check_speaker(message, where, speakers):\n'
                  '    if "forbidden" in str(message.get("parts")):\n'
                  '        raise UserError(f"{where} says forbidden: this agent refuses it; nothing was stored.")\n'
                  '    role_guard(message, where, speakers)\n'
                  'guard.check_speaker = check_speaker\n'
                  'agent = bot([[S.text("Stored reply.")], [S.text("Second reply.")]])\nagent.panel()')
REFUSAL = "A panel request's message says forbidden: this agent refuses it; nothing was stored."


def test_a_refused_message_says_not_sent_once_and_keeps_its_place(notebook, app: str) -> None:
    page, panel = open_panel(notebook, AGENT_REFUSING)
    first_turn(page, panel)
    send(panel, "forbidden words")
    users = panel.locator(".think-message[data-role=user]")
    expect(users.nth(1)).to_have_attribute("data-unsent", "true", timeout=TURN_MS)
    expect(users.nth(1).locator(".think-unsent")).to_have_text(f"not sent: {REFUSAL}")
    expect_status(panel, "ready")
    expect(panel.locator(".think-error")).to_be_hidden()  # said once: not in the banner too
    expect(panel.get_by_text(REFUSAL)).to_have_count(1)
    expect(panel.locator(".think-message[data-role=assistant]")).to_have_count(1)  # no reply holding the error
    expect(panel.locator(".think-message-error")).to_have_count(0)
    send(panel, "a fair question")  # the conversation goes on below it
    expect(last_text(panel)).to_have_text("Second reply.", timeout=TURN_MS)
    expect_status(panel, "ready")
    shape = panel.locator(".think-message").evaluate_all(
        "ms => ms.map(m => m.dataset.role + (m.dataset.unsent === 'true' ? ' (not sent)' : ''))")
    assert shape == ["user", "assistant", "user (not sent)", "user", "assistant"]


V1 = '''
from think_nb import Think
from think_nb.testing import ScriptedModel as S
s1 = S([[S.text("from the first Demo")]] * 3)
class Demo(Think):
    def get_model(self):
        return s1.model
'''
V2 = '''
s2 = S([[S.text("from the second Demo")]] * 3)
class Demo(Think):
    def get_model(self):
        return s2.model
'''


def test_an_older_panel_follows_the_redefined_class(notebook, app: str) -> None:
    page = notebook(["%load_ext think_nb", V1, "%think Demo", V2, "%think Demo"])
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    panels = page.locator(".think-panel")
    expect(panels).to_have_count(2, timeout=60_000)
    old, new = panels.nth(0), panels.nth(1)
    for p in (old, new):
        expect(p).to_have_attribute("data-status", "ready", timeout=60_000)
    wait_kernel_idle(page)
    box = old.locator("textarea.think-input")
    box.click()
    page.keyboard.type("which Demo are you?")
    page.keyboard.press("Enter")
    expect(last_text(old)).to_have_text("from the second Demo", timeout=TURN_MS)
    expect(last_text(new)).to_have_text("from the second Demo", timeout=TURN_MS)  # one agent, both views
    expect_status(old, "ready")
    expect(old.locator(".think-message[data-role=user]")).to_have_text(["which Demo are you?"])
    expect(new.locator(".think-message[data-role=user]")).to_have_text(["which Demo are you?"])


def test_a_panel_of_an_agent_made_in_a_cell_follows_the_redefined_class(notebook, app: str) -> None:
    """The quickstart's set-up: `agent = Demo("q")` shown with `%think agent`, then the class is
    redefined and `%think Demo q` run (a stranger's run found the older panel kept the old class)."""
    page = notebook(["%load_ext think_nb", V1, 'agent = Demo("q")', "%think agent", V2, "%think Demo q"])
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    panels = page.locator(".think-panel")
    expect(panels).to_have_count(2, timeout=60_000)
    old, new = panels.nth(0), panels.nth(1)
    for p in (old, new):
        expect(p).to_have_attribute("data-status", "ready", timeout=60_000)
    wait_kernel_idle(page)
    old.locator("textarea.think-input").click()
    page.keyboard.type("which Demo are you?")
    page.keyboard.press("Enter")
    expect(last_text(old)).to_have_text("from the second Demo", timeout=TURN_MS)
    expect(last_text(new)).to_have_text("from the second Demo", timeout=TURN_MS)
    expect(new.locator(".think-message[data-role=user]")).to_have_text(["which Demo are you?"])


def test_a_panel_follows_when_the_class_cell_that_makes_the_agent_runs_again(notebook, app: str) -> None:
    """The quickstart's own cells (a stranger's run, issue 27 §3): one cell defines the class and makes
    `agent = Demo("q")`, the next shows `%think agent`; the class cell is edited and run again, with
    no `%think` after it. A message typed in the one panel runs on the new class."""
    make = '\nagent = Demo("q")'
    page = notebook(["%load_ext think_nb", V1 + make, "%think agent", V2 + make])
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    panel = page.locator(".think-panel")
    expect(panel).to_have_count(1, timeout=60_000)
    expect(panel).to_have_attribute("data-status", "ready", timeout=60_000)
    wait_kernel_idle(page)
    panel.locator("textarea.think-input").click()
    page.keyboard.type("which Demo are you?")
    page.keyboard.press("Enter")
    expect(last_text(panel)).to_have_text("from the second Demo", timeout=TURN_MS)
