"""Parity of the two chunk accumulators: the golden chunk fixtures through the Python one.

Each tests/fixtures/chunks/*.json is `{"name", "chunks", "message"}`: a UIMessageChunk stream
and the assistant UIMessage it must build, starting from the empty message
`{"id": "msg-0", "role": "assistant", "parts": []}`. js/test/accumulate-parity.test.ts runs
the same files through the panel's accumulator, so both sides are held to one expectation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from think_nb.messages import MessageAccumulator

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "chunks").glob("*.json"))
INITIAL_ID = "msg-0"

CHUNK_TYPES = {
    "start", "start-step", "text-start", "text-delta", "text-end", "reasoning-start", "reasoning-delta",
    "reasoning-end", "tool-input-start", "tool-input-delta", "tool-input-available", "tool-input-error",
    "tool-approval-request", "tool-output-available", "tool-output-error", "tool-output-denied",
    "source-url", "source-document", "file", "finish-step", "finish", "error", "abort", "message-metadata",
}
"""Every AI SDK UIMessageChunk type but `data-<name>` (reference/think-anchor.md §3.1)."""


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def accumulate(chunks: list[dict]) -> dict:
    acc = MessageAccumulator(INITIAL_ID)
    for chunk in chunks:
        acc.apply(chunk)
    return acc.message


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_builds_its_expected_message(path: Path) -> None:
    fixture = load(path)
    assert accumulate(fixture["chunks"]) == fixture["message"]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_is_well_formed(path: Path) -> None:
    fixture = load(path)
    assert set(fixture) == {"name", "chunks", "message"}
    assert fixture["name"] == path.stem
    assert fixture["message"]["role"] == "assistant"


def test_fixtures_cover_every_chunk_type() -> None:
    seen = [c["type"] for path in FIXTURES for c in load(path)["chunks"]]
    assert len(FIXTURES) >= 12
    assert CHUNK_TYPES - set(seen) == set()
    data = [c for path in FIXTURES for c in load(path)["chunks"] if c["type"].startswith("data-")]
    assert any(c.get("transient") is True for c in data)
    assert any("id" in c for c in data) and any("id" not in c for c in data)
    assert any(c.get("dynamic") is True for path in FIXTURES for c in load(path)["chunks"])


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_accumulating_leaves_the_chunks_unchanged(path: Path) -> None:
    fixture = load(path)
    accumulate(fixture["chunks"])
    assert fixture["chunks"] == load(path)["chunks"]
