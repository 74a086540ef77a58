"""Every notebook in notebooks/ runs top to bottom in a real kernel (nbclient)."""

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
PANEL_WHERE_THE_LESSON_HAPPENS = {"tools_and_approval": 2, "memory": 1, "kernel_tools": 1}
"""Notebooks that display a chat panel, and how many, beside what they teach."""


@pytest.mark.localmodel
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    nb = nbformat.read(copy, as_version=4)
    # the kernel runs beside the copied notebook, like a user's, so its SQLite file lands there
    env = {k: v for k, v in os.environ.items() if k not in ("THINK_NB_DIR", "THINK_NB_DB")}
    env["JPY_SESSION_NAME"] = str(copy)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                            store_widget_state=True)
    client.execute(env=env)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    assert (tmp_path / ".think").is_dir()  # the SQLite file is beside the notebook
    if path.stem in PANEL_WHERE_THE_LESSON_HAPPENS:
        views = [c for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
        assert len(views) >= PANEL_WHERE_THE_LESSON_HAPPENS[path.stem]  # the chat panel is shown in the lesson


CLICKED_IN_THE_PANEL = {
    # notebook: (the cell whose turn pauses on approvals, the agent, deny these tools, stop before this cell)
    "tools_and_approval": ("await bank.send(", "bank", ("transfer",), "## 3. Client tools"),
    "kernel_tools": ('await analyst.send("Plot revenue', "analyst", (), None),
}
"""Notebooks whose prose invites a click on the panel's Approve / Deny instead of the next cell."""


def _click_cell(agent: str, deny: tuple[str, ...]) -> nbformat.NotebookNode:
    """A cell that decides every waiting call as the panel's buttons do: a `tool_approval` frame
    into the panel's handler (the frame a click sends), without waiting for the continuation."""
    return nbformat.v4.new_code_cell(
        f"_panel = {agent}.panel()\n"
        f"for _p in {agent}.pending_approvals():\n"
        "    _panel._dispatch({'type': 'tool_approval', 'toolCallId': _p['tool_call_id'],\n"
        f"                      'approved': _p['tool_name'] not in {deny!r}}})")


@pytest.mark.parametrize("stem", sorted(CLICKED_IN_THE_PANEL))
def test_notebook_copes_with_decisions_clicked_in_the_panel(stem: str, tmp_path: Path) -> None:
    """The cells after an approval pause run whether the person approved from Python or clicked
    Approve / Deny in the panel, as the notebook invites (issue 27: a KeyError, a UserError)."""
    paused_at, agent, deny, stop_before = CLICKED_IN_THE_PANEL[stem]
    nb = nbformat.read(NOTEBOOKS[[p.stem for p in NOTEBOOKS].index(stem)], as_version=4)
    cells = list(nb.cells)
    if stop_before is not None:
        cells = cells[:next(i for i, c in enumerate(cells) if c.source.startswith(stop_before))]
    paused = next(i for i, c in enumerate(cells) if paused_at in c.source)
    nb.cells = [*cells[:paused + 1], _click_cell(agent, deny), *cells[paused + 1:]]
    env = {k: v for k, v in os.environ.items() if k not in ("THINK_NB_DIR", "THINK_NB_DB")}
    env["JPY_SESSION_NAME"] = str(tmp_path / f"{stem}.ipynb")
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                            allow_errors=True)
    client.execute(env=env)
    errors = [f"{o.ename}: {o.evalue}" for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
