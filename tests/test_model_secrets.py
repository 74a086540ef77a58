"""A model's key never lands anywhere (issue 28 §3, §4): given as a dict from `get_model()`, or read
by litellm from the environment, and echoed back by the provider's error body, it is in none of the
turn's error, the messages, `trace()`, `turns()`, or the SQLite file and its WAL.

Over real HTTP: litellm's real `openai/` provider against a `FakeProvider` on 127.0.0.1 that refuses
the key and echoes it whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from helpers_comm import custom_msgs, from_js, state_updates
from panels import chat_request, until
from providers.server import FakeProvider, Reply
from think_nb import Think
from think_nb.errors import UserError
from think_nb.models.resolve import ModelConfig, resolve_model
from think_nb.panel.widget import ChatPanel

KEY = "sk-live-0123456789abcdefSECRET"


@pytest.fixture
async def provider(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")
    async with FakeProvider("openai") as fake:
        yield fake


def everywhere(agent: Think, result: Any, db: Path) -> str:
    """Every place a turn's words persist or show, as one text (the files as bytes decoded)."""
    files = "".join(p.read_bytes().decode("latin-1") for p in db.parent.iterdir()
                    if p.is_file() and p.name.startswith(db.name))
    return "\n".join([str(result.error), repr(agent.messages), agent.trace().to_string(),
                      repr(agent.turns()), files])


def agent_on(spec: Any, db: Path) -> Think:
    return type("Keyed", (Think,), {"get_model": lambda self: spec, "get_tools": lambda self: []})("k", db=db)


@pytest.mark.parametrize("entry", ["send", "panel frame"])
@pytest.mark.parametrize("given", ["dict from get_model", "environment"])
async def test_an_echoed_key_is_nowhere(provider: FakeProvider, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        given: str, entry: str, recording_comm: Any) -> None:
    """Through `send` and through the panel's chat frame: the key is in no stored or shown place,
    and in none of the frames the panel was sent (what a browser would render)."""
    provider.replies = [Reply.fail(401, f"Incorrect API key provided: {KEY}. You can find your key at ...")]
    model = f"openai/{provider.model_name}"
    if given == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the README's way: litellm reads it
        spec: Any = {"model": model, "api_base": provider.api_base}
    else:
        spec = {"model": model, "api_base": provider.api_base, "api_key": KEY}
    db = tmp_path / "k.sqlite"
    agent = agent_on(spec, db)
    panel = ChatPanel(agent)
    if entry == "send":
        result: Any = await agent.send("hello")
    else:
        from_js(panel, chat_request("r"))
        await until(lambda: [t["status"] for t in agent.turns()] == ["error"], "the turn to end", 60)
        result = SimpleNamespace(status="error", error=agent.turns()[0]["error"])
    assert result.status == "error"
    assert "authentication failed for openai" in result.error
    sent = {k.lower(): v for k, v in provider.headers[0].items()}
    assert sent["authorization"] == f"Bearer {KEY}"  # the key was sent, so it could be echoed
    frames = json.dumps(recording_comm_frames(panel), default=str)
    assert "authentication failed for openai" in frames  # the error reached the panel, so the key could have
    seen = everywhere(agent, result, db) + frames
    assert KEY not in seen and KEY[:8] not in seen and KEY[-8:] not in seen
    assert "***" in result.error
    await agent.shutdown()


def recording_comm_frames(panel: ChatPanel) -> list[Any]:
    """Every frame and state sync the panel sent to the front end."""
    return [*custom_msgs(panel), *state_updates(panel)]


def test_a_dict_spec_is_a_model_config_and_a_bad_one_names_no_key() -> None:
    assert resolve_model({"model": "think-scripted/x", "api_key": KEY, "temperature": 0}) == ModelConfig(
        "think-scripted/x", {"api_key": KEY, "temperature": 0})
    assert KEY not in repr(resolve_model({"model": "think-scripted/x", "api_key": KEY}))
    for bad in ({"name": "gpt", "api_key": KEY}, {"model": "", "api_key": KEY}, [{"api_key": KEY}]):
        with pytest.raises(UserError) as raised:
            resolve_model(bad)
        assert KEY not in str(raised.value) and "***" in str(raised.value)


async def test_a_bad_dict_spec_ends_the_turn_with_its_key_nowhere(tmp_path: Path) -> None:
    db = tmp_path / "b.sqlite"
    agent = agent_on({"name": "gpt-4o", "api_key": KEY}, db)
    result = await agent.send("hello")
    assert result.status == "error" and "a dict with 'model'" in result.error
    assert KEY not in everywhere(agent, result, db)
