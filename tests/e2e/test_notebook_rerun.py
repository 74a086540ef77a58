"""A lesson notebook run again after Kernel ▸ Restart Kernel and Run All shows what it showed the
first time (issue 27: a class re-runs a demo; the agents' SQLite history outlives the kernel, so a
demo that does not start afresh shows each tool result twice, a memory already written, a second
"weekend" session). The quickstart is left out on purpose: it teaches that a restart keeps the
transcript."""

from __future__ import annotations

import re
import shutil
from typing import Any

import pytest

from jlab import REPO_ROOT, menu, open_notebook, run_all

pytestmark = pytest.mark.e2e

RERUN = ["hooks", "memory", "tools_and_approval", "kernel_tools", "workspace", "sub_agents", "mcp_and_extensions"]
RUN_MS = 600_000  # tools_and_approval's last agent loads and runs the embedded model

DONE = """() => { const w = window.jupyterapp.shell.currentWidget;
  const code = w.content.widgets.filter(c => c.model.type === 'code');
  return w.sessionContext.session?.kernel?.status === 'idle'
      && code[code.length - 1].model.executionCount === code.length; }"""
RESTARTED = """() => { const code = window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code');
  return code[code.length - 1].model.executionCount === null; }"""
OUTPUTS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code').map(c => c.model.outputs.toJSON())"""

MASKS = [
    (re.compile(r"^Overwriting "), "Writing "),  # %%writefile, the second time
    (re.compile(r"\b[a-z]+_[0-9a-f]{6,}\w*"), "<id>"),  # req_…, msg_…, ses_…, approval_…, call_…_cmpl-…
    (re.compile(r"/tmp/\S+"), "<path>"),
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\""), "'…'"),  # quoted text: an aborted reply is cut where the abort lands
    (re.compile(r"\d+"), "0"),  # timings, counts of chunks, timestamps
    (re.compile(r"[ \t]+"), " "),  # a DataFrame's columns widen with its longest value
]


def shown(outputs: list[dict[str, Any]]) -> list[str]:
    """The text a person reads in one cell's outputs (the live panel and its static copy aside)."""
    texts = []
    for out in outputs:
        data = out.get("data", {})
        if "application/vnd.jupyter.widget-view+json" in data or "think-static-transcript" in str(data):
            continue
        text = out.get("text") or data.get("text/plain") or f"{out.get('ename')}: {out.get('evalue')}"
        text = "".join(text) if isinstance(text, list) else str(text)
        for pattern, repl in MASKS:
            text = pattern.sub(repl, text)
        texts.append(text)
    return texts


def run_to_the_end(page: Any) -> list[list[str]]:
    page.wait_for_function(DONE, timeout=RUN_MS)
    return [shown(outputs) for outputs in page.evaluate(OUTPUTS)]


# Each notebook in one of the two apps, alternating (both apps are covered; what a rerun shows is the
# kernel's, and running all seven twice in both apps cost CI over four minutes).
@pytest.mark.parametrize(("name", "app"), [(name, ("lab", "notebook")[i % 2]) for i, name in enumerate(RERUN)])
def test_a_restarted_run_all_shows_the_same_outputs(page, servers, app: str, name: str) -> None:
    server = servers[app]
    shutil.copy(REPO_ROOT / "notebooks" / f"{name}.ipynb", server.root / f"rerun_{name}.ipynb")
    try:
        open_notebook(page, server, f"rerun_{name}.ipynb")
        run_all(page)
        first = run_to_the_end(page)
        menu(page, "Kernel", "Restart Kernel and Run All Cells")
        page.locator(".jp-Dialog .jp-mod-accept").click()  # "Restart"
        page.wait_for_function(RESTARTED, timeout=60_000)  # run again: the counts were cleared
        again = run_to_the_end(page)
        changed = [(i, a, b) for i, (a, b) in enumerate(zip(first, again, strict=True)) if a != b]
        assert not changed, "\n\n".join(f"code cell {i}:\nfirst: {a}\nagain: {b}" for i, a, b in changed)
    finally:
        server.delete_sessions()
