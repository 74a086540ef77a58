"""Fixtures shared by every test: an isolated home, no real model calls, comm recording."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import helpers_comm

# loop_stalls: a test fails when think_nb holds the event loop; xdist_schedule: how `-n 2` spreads the files.
pytest_plugins = ["loop_stalls", "xdist_schedule"]

# Set before anything imports litellm (platform-facts TL;DR 4): no cost-map fetch.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def think_nb_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point think_nb's storage at ``tmp_path`` and refuse hosted model calls.

    ``THINK_NB_DIR`` is the folder for default database files; ``THINK_NB_DB``
    (an explicit file) is cleared so nothing leaks in from the environment.
    Scripted and embedded local models stay allowed. Returns the folder.
    """
    home = tmp_path / "think_nb_home"
    home.mkdir()
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("THINK_NB_DIR", str(home))
    monkeypatch.delenv("THINK_NB_DB", raising=False)
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "0")
    return home


@pytest.fixture
def recording_comm(monkeypatch: pytest.MonkeyPatch) -> type[helpers_comm.RecordingComm]:
    """Widgets created in this test record their comm traffic (see helpers_comm)."""
    helpers_comm.install(monkeypatch)
    return helpers_comm.RecordingComm
