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
