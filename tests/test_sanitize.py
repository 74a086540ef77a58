"""Think's sanitize pass (`agents/chat/sanitize.ts sanitizeMessage`; think_nb.messages.sanitize), a
property over every way a message is stored: whatever reasoning parts and OpenAI metadata a message
brings through `submit`, `save_messages` (a list and a function), `add_messages`,
`import_messages`, or the model's own stream, the stored message has no empty reasoning part
without provider metadata and no OpenAI `itemId` / `reasoningEncryptedContent`; everything else is
kept, memory equals what a new agent on the file reads, and resending the history stored is a no-op."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from think_nb import Think
from think_nb.messages.sanitize import sanitize
from think_nb.testing import ScriptedModel as S

_files = itertools.count()

METAS = st.sampled_from([None, {}, {"openai": {"itemId": "rs_1"}},
                         {"openai": {"itemId": "rs_1", "reasoningEncryptedContent": "gAAA"}},
                         {"openai": {"itemId": "rs_1", "serviceTier": "flex"}},
                         {"anthropic": {"signature": "sig"}},
                         {"openai": {"reasoningEncryptedContent": "gAAA"}, "anthropic": {"signature": "s"}}])
REASONING = st.builds(lambda text, meta: {"type": "reasoning", "text": text, "state": "done"}
                      | ({"providerMetadata": meta} if meta is not None else {}),
                      st.sampled_from(["", " ", "\n\t", "why", " so "]), METAS)
TEXT = st.builds(lambda text, meta: {"type": "text", "text": text} | ({"providerMetadata": meta} if meta else {}),
                 st.sampled_from(["hi", "ok"]), METAS)
PARTS = st.lists(st.one_of(REASONING, TEXT), min_size=1, max_size=5).map(
    lambda parts: [*parts, {"type": "text", "text": "end"}])


def expected(parts: list[dict]) -> list[dict]:
    """The oracle, written out from Think's rules, not from the implementation."""
    out = []
    for part in parts:
        part = dict(part)
        meta = dict(part.get("providerMetadata") or {})
        if "openai" in meta:  # only OpenAI's entry is touched; what it leaves empty goes
            rest = {k: v for k, v in meta["openai"].items() if k not in ("itemId", "reasoningEncryptedContent")}
            if rest:
                meta["openai"] = rest
            else:
                del meta["openai"]
            if meta:
                part["providerMetadata"] = meta
            else:
                del part["providerMetadata"]
        if part["type"] == "reasoning" and not part["text"].strip() and not meta:
            continue
        out.append(part)
    return out


class Quiet(Think):
    include_workspace_tools = False

    def get_model(self) -> str:
        return S([[S.text("Done.")] for _ in range(4)]).model

    def get_tools(self) -> list:
        return []


def assistant(parts: list[dict]) -> dict:
    return {"id": "a-seeded", "role": "assistant", "parts": parts}


async def via_save_messages(db: Path, parts: list[dict]) -> Think:
    agent = Quiet("s", db=db)
    await agent.save_messages([{"role": "user", "parts": [{"type": "text", "text": "q"}]}, assistant(parts),
                               {"role": "user", "parts": [{"type": "text", "text": "go"}]}])
    return agent


async def via_save_messages_fn(db: Path, parts: list[dict]) -> Think:
    agent = Quiet("s", db=db)
    question, go = ({"role": "user", "parts": [{"type": "text", "text": t}]} for t in ("q", "g"))
    await agent.save_messages(lambda cur: [*cur, question, assistant(parts), go])
    return agent


async def via_add_messages(db: Path, parts: list[dict]) -> Think:
    agent = Quiet("s", db=db)
    await agent.add_messages([{"role": "user", "parts": [{"type": "text", "text": "q"}]}, assistant(parts)])
    return agent


async def via_import(db: Path, parts: list[dict]) -> Think:
    agent = Quiet("s", db=db)
    agent.import_messages([{"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "q"}]}, assistant(parts)])
    return agent


async def via_submit(db: Path, parts: list[dict]) -> Think:
    agent = Quiet("s", db=db)
    await agent.submit({"id": "a-seeded", "role": "assistant", "parts": parts})
    return agent


ENTRY_PATHS: list[Callable[[Path, list[dict]], Awaitable[Think]]] = [
    via_save_messages, via_save_messages_fn, via_add_messages, via_import, via_submit]


def seeded(agent: Think) -> dict:
    return next(m for m in agent.messages if m["id"] == "a-seeded")


async def check(path: Callable[[Path, list[dict]], Awaitable[Think]], db: Path, parts: list[dict]) -> None:
    agent = await path(db, parts)
    assert seeded(agent)["parts"] == expected(parts)
    assert agent.messages == Quiet("s", db=db).messages  # memory is what is stored
    before = agent.messages
    await agent.add_messages([dict(m) for m in agent.messages])  # resending what is stored changes nothing
    assert agent.messages == before


@pytest.mark.parametrize("path", ENTRY_PATHS, ids=lambda p: p.__name__)
def test_empty_reasoning_and_openai_item_ids_never_reach_the_store(path: Any, tmp_path_factory: Any) -> None:
    """think-session.test.ts, Sanitization: "empty reasoning dropped unless it has metadata" and
    "OpenAI itemId/reasoningEncryptedContent stripped", over every entry path."""
    folder = tmp_path_factory.mktemp("sanitize")

    @settings(max_examples=15, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(PARTS)
    def prop(parts: list[dict]) -> None:
        asyncio.run(check(path, folder / f"s{next(_files)}.sqlite", parts))

    prop()


async def test_a_blank_reasoning_part_the_model_streams_is_not_stored(tmp_path: Path) -> None:
    """The model's own stream: a blank reasoning part (a provider's empty `reasoning_content`) is
    dropped from the stored reply; a real one is kept."""
    script = S([[S.reasoning_deltas([" ", "\n"]), S.text("Hi.")], [S.reasoning("Because."), S.text("Yes.")]])
    cls = type("Reasoner", (Quiet,), {"get_model": lambda self: script.model})
    agent = cls("r", db=tmp_path / "r.sqlite")
    await agent.send("hello")
    await agent.send("why?")
    replies = [[p["type"] for p in m["parts"] if p["type"] != "step-start"] for m in agent.messages
               if m["role"] == "assistant"]
    assert replies == [["text"], ["reasoning", "text"]]
    assert agent.messages == cls("r", db=tmp_path / "r.sqlite").messages


def test_sanitize_keeps_the_callers_message_and_is_idempotent() -> None:
    message = {"id": "m", "role": "assistant", "parts": [
        {"type": "reasoning", "text": "", "providerMetadata": {"openai": {"itemId": "rs"}}},
        {"type": "text", "text": "a", "callProviderMetadata": {"openai": {"itemId": "x", "k": 1}}}]}
    original = repr(message)
    once = sanitize(message)
    assert once == {"id": "m", "role": "assistant",
                    "parts": [{"type": "text", "text": "a", "callProviderMetadata": {"openai": {"k": 1}}}]}
    assert sanitize(once) is once and repr(message) == original
