"""The chat panel and `agent.marimo_chat()` in marimo: a real `marimo edit` / `marimo run` server and chromium.

The panel is `mo.ui.anywidget(agent.panel())`: marimo's own widget model carries its traits and
custom messages both ways; the turn runs on marimo's kernel loop. Covered, in the editor and in app
mode (`marimo run`): the panel renders, a typed message streams a reply, the Context tab shows a
memory block the model writes during a turn, a tool that needs approval waits for the Approve
button and runs, and Stop aborts a slow reply. In the editor, `agent.marimo_chat()` (marimo's own
`mo.ui.chat`) streams a reply into marimo's chat element.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from jlab import free_port
from panel_flows import TURN_MS, expect_status, last_text, send

pytestmark = pytest.mark.e2e

FACT = "The user's name is Ada."

NOTEBOOK = '''
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    from think_nb import Think, tool
    from think_nb.testing import ScriptedModel as S

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    script = S([[S.text("Hello from marimo")],
                [S.text("Let me remember that."), S.tool_call("set_context", {"label": "memory", "content": FACT})],
                [S.text("Noted, Ada.")],
                [S.tool_call("delete_file", {"path": "notes.txt"})], [S.text("Deleted notes.txt.")],
                [S.text("a slow reply " * 40, chunk_size=13), S.stall()]], delay=0.002)  # then hangs

    class Bot(Think):
        def get_model(self):
            return script.model

        def get_tools(self):
            return [delete_file]

        def configure_session(self, session):
            return session.with_context("memory", description="Facts learned about the user.", max_tokens=200)

    agent = Bot("mo", db=DB)
    panel = mo.ui.anywidget(agent.panel())
    panel
    return (S, Think, delete_file, mo)


@app.cell
def _(S, Think, delete_file):
    chat_script = S([[S.text("Streamed " + "into marimo's chat " * 30 + "THE END", chunk_size=8)],
                     [S.tool_call("delete_file", {"path": "draft.txt"})], [S.text("Deleted draft.txt.")],
                     [S.text("slow chat " * 40, chunk_size=10), S.stall()]], delay=0.01)  # hangs until Stop

    class Chatty(Think):
        def get_model(self):
            return chat_script.model

        def get_tools(self):
            return [delete_file]

    chat = Chatty("mo-chat", db=DB).marimo_chat()
    chat
    return


@app.cell
def _(Think, mo):
    embedded = mo.ui.anywidget(Think("mo-embedded").panel())  # the embedded model, the default file
    embedded
    return


if __name__ == "__main__":
    app.run()
'''


@pytest.fixture(params=["edit", "run"])
def marimo_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`marimo edit` or `marimo run` of NOTEBOOK on 127.0.0.1 (headless, no token); yields (mode, URL);
    stopped after."""
    mode = request.param
    source = NOTEBOOK.replace("DB", repr(str(tmp_path / "chat.sqlite"))).replace("FACT", repr(FACT))
    (tmp_path / "chat.py").write_text(source)
    config = tmp_path / "config" / "marimo"
    config.mkdir(parents=True)
    (config / "marimo.toml").write_text("[runtime]\nauto_instantiate = true\n")  # run the notebook on open
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINK_NB_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), LITELLM_LOCAL_MODEL_COST_MAP="True",
               THINK_NB_ALLOW_MODEL_REQUESTS="0")
    log = (tmp_path / "marimo.log").open("wb")
    env["MARIMO_SKIP_UPDATE_CHECK"] = "1"  # `marimo run` has no --skip-update-check
    proc = subprocess.Popen([sys.executable, "-m", "marimo", mode, "chat.py", "--headless", "--no-token",
                             "--host", "127.0.0.1", "--port", str(port)],
                            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "marimo.log").read_text()
            time.sleep(0.2)
    yield mode, url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def test_panel_streams_shows_context_approves_and_stops_in_marimo(marimo_app: tuple[str, str], page) -> None:
    _, url = marimo_app
    page.goto(url)
    panel = page.locator(".think-panel").first
    expect_status(panel, "ready", timeout=90_000)

    # issue 27 §9: an agent on the embedded model, no db= given, keeps its file named after the app
    # (.think/chat.sqlite, not .think/think_nb.sqlite) and its empty panel names no `%think` form
    embedded = page.locator(".think-panel").nth(1)
    expect_status(embedded, "ready", timeout=90_000)
    expect(embedded.locator(".think-db-path")).to_have_attribute("title", re.compile(r"/\.think/chat\.sqlite$"))
    hint = embedded.locator(".think-empty")
    expect(hint).to_contain_text("runs on think-local/")
    expect(hint).to_contain_text("agent.default_model")
    expect(hint).not_to_contain_text("%think")

    send(panel, "hi")
    expect(last_text(panel)).to_have_text("Hello from marimo", timeout=TURN_MS)
    expect_status(panel, "ready")

    block = panel.locator(".think-context-block[data-label=memory]")
    usage = block.locator(".think-context-usage")
    panel.locator(".think-tab[data-tab=context]").click()
    expect(block).to_be_visible()
    expect(usage).to_have_attribute("data-percent", "0")
    panel.locator(".think-tab[data-tab=chat]").click()
    send(panel, "My name is Ada.")
    panel.locator(".think-tab[data-tab=context]").click()  # watch the tab while the turn runs
    expect(block.locator(".think-context-text")).to_have_text(FACT, timeout=TURN_MS)
    expect(usage).not_to_have_attribute("data-percent", "0")
    expect(block.locator(".think-context-tokens")).to_contain_text("/ 200 tokens")
    expect_status(panel, "ready")
    panel.locator(".think-tab[data-tab=chat]").click()
    expect(last_text(panel)).to_have_text("Noted, Ada.")

    send(panel, "Delete notes.txt")
    expect_status(panel, "awaiting-approval")
    card = panel.locator(".think-tool[data-tool-name=delete_file]")
    expect(card).to_have_attribute("data-state", "approval-requested")
    card.locator("button.think-approve").click()
    expect(card.locator(".think-tool-output")).to_contain_text("deleted notes.txt", timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("Deleted notes.txt.", timeout=TURN_MS)
    expect_status(panel, "ready")

    send(panel, "Say something long")  # the reply streams, then hangs: only Stop ends it
    expect(last_text(panel)).to_have_text(("a slow reply " * 40).strip(), timeout=TURN_MS)
    panel.locator("button.think-stop").click()
    expect_status(panel, "ready")
    expect(panel.locator(".think-stopped")).to_be_visible()
    expect(last_text(panel)).to_have_text(("a slow reply " * 40).strip())  # what arrived is kept


# The chat element's text (marimo renders it in a shadow root) and, once installed, every length it
# went through (a MutationObserver), so the test sees a reply grow instead of appear at once.
CHAT_ROOT = "(document.querySelector('marimo-chatbot').shadowRoot || document.querySelector('marimo-chatbot'))"
WATCH_LENGTHS = f"""() => {{ window.__chatLengths = []; const root = {CHAT_ROOT};
    new MutationObserver(() => window.__chatLengths.push(root.textContent.length))
        .observe(root, {{subtree: true, childList: true, characterData: true}}); }}"""


@pytest.mark.parametrize("marimo_app", ["edit"], indirect=True)
def test_marimo_chat_streams_approves_and_stops_in_marimos_chat_element(marimo_app: tuple[str, str], page) -> None:
    _, url = marimo_app
    page.goto(url)
    box = page.locator("marimo-chatbot .cm-content[role=textbox]")
    box.wait_for(timeout=90_000)
    page.evaluate(WATCH_LENGTHS)
    before = page.evaluate(f"() => {CHAT_ROOT}.textContent.length")
    box.click()
    box.type("hi")
    box.press("Enter")
    page.wait_for_function(f"() => {CHAT_ROOT}.textContent.includes('THE END')", timeout=TURN_MS)
    text = page.evaluate(f"() => {CHAT_ROOT}.textContent")
    assert "Streamed " + "into marimo's chat " * 30 + "THE END" in text
    lengths = page.evaluate("() => window.__chatLengths")
    partial = {n for n in lengths if before < n < len(text)}
    assert len(partial) >= 10, lengths  # it grew chunk by chunk (8 characters a chunk, 70 chunks)

    # a tool that needs approval: marimo's own Approve, then the continuation streams in
    box.click()
    box.type("Delete draft.txt")
    box.press("Enter")
    dialog = page.locator("marimo-chatbot [role=alertdialog][aria-label='Approval required for delete_file']")
    expect(dialog).to_contain_text("draft.txt", timeout=TURN_MS)
    dialog.get_by_role("button", name="Approve").click()
    page.wait_for_function(f"() => {CHAT_ROOT}.textContent.includes('Deleted draft.txt.')", timeout=TURN_MS)
    expect(dialog).to_have_count(0)
    replies = page.locator("marimo-chatbot .group.items-start")  # the assistant's messages
    expect(replies.last).to_contain_text("delete_file")  # one message: the call, then the continuation
    expect(replies.last).to_contain_text("Deleted draft.txt.")
    expect(replies).to_have_count(2)
    replies.last.get_by_role("button", name="delete_file").click()  # the call's details: its output
    expect(replies.last).to_contain_text("deleted draft.txt")

    # Stop (marimo's stop button while the reply is under way) ends it; the reply hangs after its
    # text, so only Stop can end it, and the button stands still to be clicked
    box.click()
    box.type("Say something long")
    box.press("Enter")
    expect(replies.last).to_contain_text(("slow chat " * 40).strip(), timeout=TURN_MS)
    send_button = page.locator("marimo-chatbot form button[aria-label='Send message']")
    expect(send_button).to_have_count(0)  # streaming: Stop shows instead
    page.locator("marimo-chatbot form button").filter(has=page.locator("svg.lucide-square")).click()
    expect(send_button).to_be_visible(timeout=TURN_MS)
    expect(replies.last).to_contain_text(("slow chat " * 40).strip())
