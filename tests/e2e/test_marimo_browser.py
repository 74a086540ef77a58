"""The chat panel in marimo: `mo.ui.anywidget(agent.panel())` in a real `marimo edit` server and chromium.

The panel is an anywidget, so marimo's own widget model carries its traits and custom messages both
ways; the turn runs on marimo's kernel loop. Covered: the panel renders, a typed message streams a
reply, a tool that needs approval waits for the Approve button and runs, and Stop aborts a slow reply.
"""

from __future__ import annotations

import os
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
                [S.tool_call("delete_file", {"path": "notes.txt"})], [S.text("Deleted notes.txt.")],
                [S.text("a slow reply " * 400)]], delay=0.002)

    class Bot(Think):
        def get_model(self):
            return script.model

        def get_tools(self):
            return [delete_file]

    agent = Bot("mo", db=DB)
    panel = mo.ui.anywidget(agent.panel())
    panel
    return


if __name__ == "__main__":
    app.run()
'''


@pytest.fixture
def marimo_edit(tmp_path: Path) -> Iterator[str]:
    """`marimo edit` of NOTEBOOK on 127.0.0.1 (headless, no token); yields its URL; stopped after."""
    (tmp_path / "chat.py").write_text(NOTEBOOK.replace("DB", repr(str(tmp_path / "chat.sqlite"))))
    config = tmp_path / "config" / "marimo"
    config.mkdir(parents=True)
    (config / "marimo.toml").write_text("[runtime]\nauto_instantiate = true\n")  # run the notebook on open
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINK_NB_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"), LITELLM_LOCAL_MODEL_COST_MAP="True",
               THINK_NB_ALLOW_MODEL_REQUESTS="0")
    log = (tmp_path / "marimo.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "marimo", "edit", "chat.py", "--headless", "--no-token",
                             "--host", "127.0.0.1", "--port", str(port), "--skip-update-check"],
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
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def test_panel_streams_approves_and_stops_in_marimo_edit(marimo_edit: str, page) -> None:
    page.goto(marimo_edit)
    panel = page.locator(".think-panel").first
    expect_status(panel, "ready", timeout=90_000)

    send(panel, "hi")
    expect(last_text(panel)).to_have_text("Hello from marimo", timeout=TURN_MS)
    expect_status(panel, "ready")

    send(panel, "Delete notes.txt")
    expect_status(panel, "awaiting-approval")
    card = panel.locator(".think-tool[data-tool-name=delete_file]")
    expect(card).to_have_attribute("data-state", "approval-requested")
    card.locator("button.think-approve").click()
    expect(card.locator(".think-tool-output")).to_contain_text("deleted notes.txt", timeout=TURN_MS)
    expect(last_text(panel)).to_have_text("Deleted notes.txt.", timeout=TURN_MS)
    expect_status(panel, "ready")

    send(panel, "Say something long")
    expect(last_text(panel)).to_contain_text("a slow reply", timeout=TURN_MS)
    panel.locator("button.think-stop").click()
    expect_status(panel, "ready")
    assert len(last_text(panel).text_content() or "") < len("a slow reply " * 400)
