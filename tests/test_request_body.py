"""The last request's custom body, kept for the turns after it (Think's `lastBody`,
`think_nb.turns.last_body`): every continuation sees it unless given its own; a panel request
without one, and `clear_messages()`, clear it; it outlives the agent object (SQLite)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import scripted_agent
from helpers_comm import from_js
from panels import chat_request, responses, until, user_msg
from test_durable import agent_class, left_by_dead_process, partial_chunks
from think_nb import Think, UserError, client_tool
from think_nb.binding import runtime_of
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S

tz = client_tool("time_zone", "The user's time zone.", js="return 'UTC';")


def recorder(seen: list) -> Any:
    """A `before_turn` hook recording `(trigger, continuation, body)` of each turn."""
    return lambda self, ctx: seen.append((ctx.trigger, ctx.continuation, ctx.body))


async def test_continue_last_turn_defaults_to_the_last_requests_body(tmp_path: Path) -> None:
    """think-session.test.ts, continueLastTurn: "body persistence defaults" — a continuation
    without a body reuses the last request's (also from a new agent object on the same file), one
    with a body uses its own, and a request without a body clears it."""
    seen: list = []
    script = S([[S.text("a")], [S.text("b")], [S.text("c")], [S.text("d")], [S.text("e")]])
    cls = agent_class(script, before_turn=recorder(seen))
    agent = cls("b", db=tmp_path / "a.sqlite")
    await agent.submit("hi", body={"tone": "formal", "n": [1, 2]})
    assert (await agent.continue_last_turn()).status == "completed"
    again = cls("b", db=tmp_path / "a.sqlite")  # the body is in SQLite, not only in the object
    await again.continue_last_turn()
    await again.continue_last_turn({"tone": "terse"})
    await again.submit("no body", trigger="panel")  # a panel request without a body clears it
    await again.continue_last_turn()
    assert seen == [("programmatic", False, {"tone": "formal", "n": [1, 2]}),
                    ("continuation", True, {"tone": "formal", "n": [1, 2]}),
                    ("continuation", True, {"tone": "formal", "n": [1, 2]}),
                    ("continuation", True, {"tone": "terse"}),
                    ("panel", False, None),
                    ("continuation", True, None)]


async def test_a_client_tool_results_continuation_gets_the_panels_body_until_clear(recording_comm: Any) -> None:
    """client-tools.test.ts: "Custom body persisted/cleared" — the panel's request body reaches the
    turn and the continuation a client tool's result starts; `clear_messages()` forgets it."""
    seen: list = []
    script = S([[S.tool_call("time_zone", {})], [S.text("UTC, then.")], [S.text("fresh")]])
    agent = scripted_agent(script, tools=[tz], before_turn=recorder(seen))
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1", user_msg("tz?"), body={"user": "ada"}))
    await until(lambda: agent.turns() and agent.turns()[-1]["status"] == "completed", "the first turn")
    result = await agent.add_tool_output("call_1_0", "UTC")
    assert result.status == "completed" and responses(panel, result.request_id)
    agent.clear_messages()
    await agent.send("again")
    assert await agent.continue_last_turn() is not None
    assert [s[2] for s in seen] == [{"user": "ada"}, {"user": "ada"}, None, None]


async def test_a_recovered_turns_continuation_gets_the_last_body(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """think-session.test.ts, onChatRecovery: "continuation carries recovered request context" —
    the body of the request a dead process was answering reaches the continuation that recovers it."""
    seen: list = []
    cls = agent_class(S([[S.text("wer.")]]), on_chat_recovery=lambda self, ctx: {"continue": True},
                      before_turn=recorder(seen))
    first = cls("r", db=tmp_path / "a.sqlite")
    runtime_of(first).set_last_body({"plan": "pro"})
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed" and seen == [("recovery-continue", True, {"plan": "pro"})]


@pytest.mark.parametrize("body", ["text", {"f": object()}, {"x": float("nan")}])
async def test_a_body_that_is_not_a_json_object_is_refused_and_nothing_runs(body: Any) -> None:
    script = S([[S.text("never")]])
    agent: Think = scripted_agent(script)
    with pytest.raises(UserError, match="body"):
        agent.submit("hi", body=body)
    assert agent.messages == [] and script.requests == []


async def test_a_panel_frame_with_a_body_that_is_not_an_object_is_refused(recording_comm: Any) -> None:
    script = S([[S.text("never")]])
    agent = scripted_agent(script)
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1", body=["not", "an", "object"]))
    assert agent.messages == [] and script.requests == []
