"""Kernel-level fixtures: a real ipykernel per test module, driven over ZMQ."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness import FakeFrontend, start_frontend, stop_frontend


@pytest.fixture(scope="module")
def frontend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeFrontend]:
    """One kernel shared by the tests of a module (cwd and THINK_NB_DIR in a tmp dir)."""
    fe = start_frontend(tmp_path_factory.mktemp("kernel"))
    try:
        yield fe
    finally:
        stop_frontend(fe)


@pytest.fixture
def fresh_frontend(tmp_path: Path) -> Iterator[Callable[..., FakeFrontend]]:
    """A factory for kernels of this test alone (for checks about a clean kernel)."""
    started: list[FakeFrontend] = []

    def start(**env: str) -> FakeFrontend:
        fe = start_frontend(tmp_path / f"kernel{len(started)}", **env)
        started.append(fe)
        return fe

    yield start
    for fe in started:
        stop_frontend(fe)
