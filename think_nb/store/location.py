"""Where an agent's SQLite file lives.

Precedence: an explicit `db=` path; `$THINK_NB_DB`; beside the running notebook
(`<kernel cwd>/.think/<notebook-stem>.sqlite`, the notebook name coming from Jupyter Server's
`JPY_SESSION_NAME` or IPython's `__session__`); otherwise `<$THINK_NB_DIR or cwd>/.think/think_nb.sqlite`.
"""

from __future__ import annotations

import os
from pathlib import Path


def default_db_path() -> Path:
    """The SQLite path an agent uses when none is given (see the module docstring)."""
    if os.environ.get("THINK_NB_DB"):
        return Path(os.environ["THINK_NB_DB"]).expanduser()
    base = Path(os.environ.get("THINK_NB_DIR") or os.getcwd())
    notebook = _notebook_name()
    stem = Path(notebook).stem if notebook else "think_nb"
    return base / ".think" / f"{stem}.sqlite"


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
