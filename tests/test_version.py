"""One version for the Python package and the panel bundle (anywidget's test_version)."""

from __future__ import annotations

import json
from pathlib import Path

import think_nb

ROOT = Path(__file__).resolve().parents[1]


def test_python_and_js_versions_match() -> None:
    package = json.loads((ROOT / "js" / "package.json").read_text())
    assert package["version"] == think_nb.__version__, (
        "bump think_nb/_version.py and js/package.json together"
    )
