"""A saved notebook shows the conversation where the panel cannot render: the panel is two outputs, the
widget view and, after it, a sanitised text/html and markdown text/plain transcript (nbconvert to HTML
and markdown read it; JupyterLab shows it when the widget cannot render); the transcript follows every
turn, and re-running the cell in a new kernel shows the SQLite history again."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter, MarkdownExporter

from think_nb import Think
from think_nb.frontends.export import static_transcript

WIDGET = "application/vnd.jupyter.widget-view+json"
AGENT = '''
from think_nb import Think
from think_nb.testing import ScriptedModel as S
script = S([[S.text("Hello from the saved panel <script>alert(1)</script>")]])
class Bot(Think):
    def get_model(self):
        return script.model
agent = Bot("saved", db={db!r})
'''


def _run(cells: list[str], tmp_path: Path) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = {k: v for k, v in os.environ.items() if k not in ("THINK_NB_DIR", "THINK_NB_DB")}
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                   store_widget_state=True).execute(env=env)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    return nb


def _panel_output(nb: nbformat.NotebookNode) -> dict:
    """The static transcript output, which follows the panel's widget output in its cell."""
    ((cell, index),) = [(c, i) for c in nb.cells for i, o in enumerate(c.get("outputs", []))
                        if WIDGET in o.get("data", {})]
    widget, static = cell["outputs"][index]["data"], cell["outputs"][index + 1]["data"]
    assert set(widget) == {WIDGET, "text/plain"} and "transcript" in widget["text/plain"]
    assert WIDGET not in static and 'class="think-static-transcript"' in static["text/html"]
    return static


def test_saved_notebook_shows_the_transcript_and_a_new_kernel_rebinds_to_it(tmp_path: Path) -> None:
    db = str(tmp_path / "saved.sqlite")
    nb = _run(["%load_ext think_nb", AGENT.format(db=db), "agent.panel()",
               "await agent.send(\"Say hello\")"], tmp_path)
    data = _panel_output(nb)
    # the turn ended after the panel was shown: the transcript output was rewritten
    assert data["text/plain"].startswith("## Bot 'saved'\n\n### User\n\nSay hello\n\n### Assistant\n\n"
                                         "Hello from the saved panel <script>alert(1)</script>\n\n*model ")
    assert "<p>Say hello</p>" in data["text/html"] and "<script" not in data["text/html"]
    assert "Hello from the saved panel" in data["text/html"]
    # saved as JupyterLab saves by default (no widget state): nbconvert, nbviewer and GitHub skip the
    # widget view they cannot render and show the next mimetype, the transcript
    saved = nbformat.from_dict({**nb, "metadata": {k: v for k, v in nb.metadata.items() if k != "widgets"}})
    path = tmp_path / "saved.ipynb"
    nbformat.write(saved, path)

    html, _ = HTMLExporter().from_filename(str(path))
    assert "Hello from the saved panel" in html and "<h3>Assistant</h3>" in html
    assert "<script>alert(1)" not in html  # the source cell shows it escaped; the transcript dropped it
    markdown, _ = MarkdownExporter().from_filename(str(path))
    assert "<p>Say hello</p>" in markdown and "Hello from the saved panel" in markdown

    # the kernel is gone; a new one re-runs the panel cell: the live panel shows the SQLite history
    again = _run(["%load_ext think_nb", AGENT.format(db=db), "agent.panel()"], tmp_path)
    state = again.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    (panel,) = [s["state"] for s in state.values() if s["state"].get("agent_name") == "saved"]
    assert [(m["role"], m["parts"][-1]["text"]) for m in panel["messages"]] == [
        ("user", "Say hello"), ("assistant", "Hello from the saved panel <script>alert(1)</script>")]
    assert _panel_output(again)["text/plain"] == data["text/plain"]


def test_static_transcript_is_bounded(tmp_path: Path) -> None:
    agent = Think("big", db=tmp_path / "b.sqlite")
    agent.import_messages([{"id": f"m{n}", "role": "user", "parts": [{"type": "text", "text": f"{n}: " + "x" * 1000}]}
                           for n in range(200)])
    markdown, html = static_transcript(agent.messages, title="Think 'big'", limit=20_000)
    assert len(markdown) < 20_500 and len(html) < 25_000
    assert ("*… 181 earlier messages not shown here: the live panel shows them (run this cell), agent.export() "
            "writes them all.*") in markdown
    assert markdown.rstrip().endswith("199: " + "x" * 1000)  # the newest are kept
    one = [{"id": "m", "role": "assistant", "parts": [{"type": "text", "text": "y" * 50_000}]}]
    cut, _ = static_transcript(one, title="t", limit=1_000)
    assert len(cut) < 1_100 and cut.rstrip().endswith("more characters)*")
    short = [{"id": f"s{n}", "role": "user", "parts": [{"type": "text", "text": f"line {n}"}]} for n in range(50)]
    kept, _ = static_transcript(short, title="t", max_messages=20)  # short messages: bounded by count
    assert "*… 30 earlier messages not shown here" in kept and "line 29" not in kept
    assert [line for line in kept.splitlines() if line.startswith("line ")] == [f"line {n}" for n in range(30, 50)]
