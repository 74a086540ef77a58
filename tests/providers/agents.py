"""Agents on a `FakeProvider`, and the fixture that starts one per wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agents import add
from providers.server import FakeProvider
from think_nb import Think


@pytest.fixture(params=["openai", "anthropic"])
async def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeProvider]:
    """A `FakeProvider` of each wire format on a free loopback port; stopped after the test.
    Opts this test in to real (HTTP) model requests."""
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")
    async with FakeProvider(request.param) as fake:
        yield fake


def hosted_agent(server: FakeProvider, tools: list | None = None, name: str = "h", options: dict | None = None,
                 **attrs: Any) -> Think:
    """A fresh Think subclass on `server` (its `model` attribute may be replaced to switch model)."""
    cls = type("Hosted", (Think,), {"model": server.model_config(**(options or {})),
                                    "get_model": lambda self: self.model,
                                    "get_tools": lambda self: tools if tools is not None else [add], **attrs})
    return cls(name)
