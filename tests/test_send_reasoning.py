"""`send_reasoning` (Think's `sendReasoning`, default true; per turn `TurnConfig.send_reasoning`):
whether reasoning reaches the views' stream (panel, `chat()` callbacks) and the stored message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dirty_equals import IsStr

from agents import add, scripted_agent, user
from helpers_comm import from_js
from panels import chat_request, chunks_of, responses, user_msg
from providers.agents import hosted_agent
from providers.anthropic_format import signature_for
from providers.server import Call, FakeProvider, Reply
from think_nb import Think, TurnConfig, UserError
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S


def thinking_script() -> S:
    return S([[S.reasoning("Two and forty."), S.text("42.")]])


class Events:
    """A `chat()` callback keeping the chunk types it was sent."""

    def __init__(self) -> None:
        self.types: list[str] = []

    def on_event(self, raw: str) -> None:
        self.types.append(json.loads(raw)["type"])


def reply(text: str, request_id: str, model: str, reasoning: str | None = None) -> dict:
    parts: list[dict] = [{"type": "step-start"}]
    if reasoning is not None:
        parts.append({"type": "reasoning", "text": reasoning, "state": "done"})
    parts.append({"type": "text", "text": text, "state": "done"})
    return {"id": IsStr(), "role": "assistant", "parts": parts, "metadata": {
        "model": model, "usage": {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None,
                                  "source": None}, "requestId": request_id, "finishReason": "stop"}}


REASONING_CHUNKS = ["reasoning-start", "reasoning-delta", "reasoning-end"]


async def test_reasoning_is_streamed_and_stored_by_default() -> None:
    """Think: 'sendReasoning default' (RPC: chat())."""
    script = thinking_script()
    agent = scripted_agent(script)
    events = Events()
    result = await agent.chat("2+40?", events)
    assert Think.send_reasoning is True
    assert [t for t in events.types if t.startswith("reasoning")] == ["reasoning-start"] + ["reasoning-delta"] * 5 + [
        "reasoning-end"]
    assert agent.messages == [user("2+40?"), reply("42.", result.request_id, script.model, "Two and forty.")]


@pytest.mark.parametrize("where", ["instance", "turn"])
async def test_send_reasoning_off_keeps_it_out_of_the_stream_and_the_stored_message(where: str) -> None:
    """Think: 'sendReasoning ... instance/turn overrides on RPC' (chat()); on_chunk still sees it."""
    script = thinking_script()
    seen: list[str] = []
    attrs = {"send_reasoning": False} if where == "instance" else {
        "before_turn": lambda self, ctx: TurnConfig(send_reasoning=False)}
    agent = scripted_agent(script, on_chunk=lambda self, c: seen.append(c["type"]), **attrs)
    events = Events()
    result = await agent.chat("2+40?", events)
    assert not [t for t in events.types if t.startswith("reasoning")]
    assert events.types == ["start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"]
    assert agent.messages == [user("2+40?"), reply("42.", result.request_id, script.model)]
    assert result.message == agent.messages[-1]
    assert "reasoning-delta" in seen  # Think's onChunk sees reasoning whatever sendReasoning says
    recorded = agent.recording()
    assert recorded is not None and not [c for _, c in recorded.chunks if c["type"].startswith("reasoning")]


async def test_a_turn_config_turns_reasoning_back_on_for_one_turn_of_an_agent_that_hides_it() -> None:
    """Think: 'sendReasoning ... turn overrides' (the turn wins over the instance)."""
    script = S([[S.reasoning("Shown."), S.text("A.")], [S.reasoning("Hidden."), S.text("B.")]])
    agent = scripted_agent(script, send_reasoning=False,
                           before_turn=lambda self, ctx: {"send_reasoning": True} if len(ctx.messages) == 1 else None)
    first = await agent.send("a")
    second = await agent.send("b")
    assert agent.messages == [user("a"), reply("A.", first.request_id, script.model, "Shown."),
                              user("b"), reply("B.", second.request_id, script.model)]


async def test_the_panel_gets_no_reasoning_frames_when_it_is_off(recording_comm: Any) -> None:
    """Think: 'sendReasoning ... on WS' (the panel is think_nb's WebSocket client)."""
    for send_reasoning, expected in [(True, REASONING_CHUNKS), (False, [])]:
        agent = scripted_agent(thinking_script(), name=f"panel-{send_reasoning}", send_reasoning=send_reasoning)
        panel = ChatPanel(agent)
        from_js(panel, chat_request("r1", user_msg("2+40?")))
        assert await agent.wait_until_stable(30)
        kinds = sorted({c["type"] for c in chunks_of(responses(panel, "r1")) if c["type"].startswith("reasoning")})
        assert kinds == sorted(expected)


def test_send_reasoning_takes_true_or_false_only() -> None:
    with pytest.raises(UserError, match=r"send_reasoning = 'no' is not a value it takes; send_reasoning is True or "
                                        r"False\.$"):
        type("Bad", (Think,), {"send_reasoning": "no"})


async def test_hidden_signed_reasoning_still_reaches_the_turns_next_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Anthropic with thinking: a step answering a tool_use must send that step's signed thinking
    first; with send_reasoning off the turn keeps it for its own steps (as the AI SDK's step loop
    does) while neither streaming nor storing it."""
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")
    async with FakeProvider("anthropic", "claude-haiku-4-5") as fake:
        fake.replies += [Reply(reasoning="Add first.", tool_calls=[Call("add", {"a": 2, "b": 40})]),
                         Reply(reasoning="Answer.", text="42.")]
        agent = hosted_agent(fake, [add], options={"thinking": {"type": "enabled", "budget_tokens": 1024}},
                             send_reasoning=False, include_workspace_tools=False)
        result = await agent.send("2 + 40?")
        assert (result.status, result.error, fake.rejections) == ("completed", None, [])
        assert fake.requests[1]["messages"][-2]["content"][0] == {
            "type": "thinking", "thinking": "Add first.", "signature": signature_for("Add first.")}
        assert [p["type"] for p in agent.messages[-1]["parts"]] == ["step-start", "tool-add", "step-start", "text"]
