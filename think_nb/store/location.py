"""Where an agent's SQLite file lives.

Precedence: an explicit `db=` path; `$THINK_NB_DB`; beside the running notebook
(`<kernel cwd>/.think/<notebook-stem>.sqlite`, the notebook name coming from Jupyter Server's
`JPY_SESSION_NAME` or IPython's `__session__`); beside the running marimo app
(`<app dir>/.think/<app-stem>.sqlite`, from marimo's runtime, consulted only when marimo is
imported); otherwise `<$THINK_NB_DIR or cwd>/.think/think_nb.sqlite`. `$THINK_NB_DIR` replaces the
directory in every case.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def default_db_path() -> Path:
    """The SQLite path an agent uses when none is given (see the module docstring)."""
    if os.environ.get("THINK_NB_DB"):
        return Path(os.environ["THINK_NB_DB"]).expanduser()
    notebook = _notebook_name()
    app = None if notebook else _marimo_app()
    base = Path(os.environ.get("THINK_NB_DIR") or (Path(app).parent if app else os.getcwd()))
    named = notebook or app
    stem = Path(named).stem if named else "think_nb"
    return base / ".think" / f"{stem}.sqlite"


def _marimo_app() -> str | None:
    """The path of the marimo app running this code (`marimo edit/run app.py`, `python app.py`), or None."""
    if "marimo" not in sys.modules:
        return None
    try:
        from marimo._runtime.context import get_context

        context = get_context()
        name = context.globals.get("__file__") or getattr(context, "filename", None)
    except Exception:  # noqa: BLE001 - not running in marimo, or its internals moved: the default name
        return None
    return name if isinstance(name, str) and name.endswith(".py") else None


def _notebook_name() -> str | None:
    name = os.environ.get("JPY_SESSION_NAME")
    if name and name.endswith(".ipynb"):
        return name
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    session = shell.user_ns.get("__session__") if shell is not None else None
    return session if isinstance(session, str) and session.endswith(".ipynb") else None
