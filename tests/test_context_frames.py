"""The context tab's kernel side: `session` frames to every panel, the state a new panel starts
from, and `session_switch` from the panel. A real agent on a scripted model, RecordingComm panels."""

from __future__ import annotations

import logging
from typing import Any

from helpers_comm import custom_msgs, from_js
from think_nb import Think
from think_nb.panel import protocol
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S


def make(script: S, name: str = "ctx") -> Think:
    class Mem(Think):
        def get_model(self) -> str:
            return script.model

        def configure_session(self, session: Any) -> Any:
            return session.with_context("memory", description="Facts learned.", max_tokens=200)

    return Mem(name)


def session_frames(panel: ChatPanel) -> list[dict]:
    return [f for f in custom_msgs(panel) if f["type"] == protocol.SESSION]


def memory(frame: dict) -> dict:
    return next(b for b in frame["blocks"] if b["label"] == "memory")


async def test_set_context_by_the_model_sends_the_new_block_to_every_panel(recording_comm: Any) -> None:
    script = S([[S.tool_call("set_context", {"label": "memory", "content": "The user's name is Ada."})],
                [S.text("Nice to meet you, Ada.")]])
    agent = make(script)
    a, b = ChatPanel(agent), ChatPanel(agent)
    start = a.session_state
    assert memory(start) == {"label": "memory", "description": "Facts learned.", "kind": "writable",
                             "writable": True, "tokens": 0, "max_tokens": 200, "percent_used": 0.0, "content": ""}
    assert start["sessions"] == [{"id": "", "name": "default", "active": True}]

    await agent.send("I am Ada.")

    for panel in (a, b):
        frames = session_frames(panel)
        written = next(f for f in frames if memory(f)["content"])  # the frame the write sent
        block = memory(written)
        assert block["content"] == "The user's name is Ada."
        assert block["tokens"] == agent.session.get_context_block("memory").tokens > 0
        assert block["percent_used"] == round(100 * block["tokens"] / 200, 1)
        assert protocol.parse_frame(written) == written
        assert written["session"] == "" and written["sessions"][0]["active"] is True
        assert frames[-1]["tokenEstimate"] > 0  # refreshed after the turn
        assert panel.session_state == frames[-1]  # a view displayed now starts from it
    # a panel created later starts with the written block
    assert memory(ChatPanel(agent).session_state)["content"] == "The user's name is Ada."


async def test_session_switch_from_the_panel_switches_and_reports(recording_comm: Any) -> None:
    agent = make(S([[S.text("hi")]]), "ctx-switch")
    other = agent.create_session("experiments", switch=False)
    panel = ChatPanel(agent)
    from_js(panel, {"type": protocol.SESSION_SWITCH, "session": other})
    assert agent.session_id == other
    last = session_frames(panel)[-1]
    assert last["session"] == other
    assert [s["active"] for s in last["sessions"]] == [False, True]
    from_js(panel, {"type": protocol.SESSION_SWITCH, "session": ""})
    assert agent.session_id == "" and session_frames(panel)[-1]["session"] == ""


def test_switch_to_an_unknown_session_shows_an_error_and_keeps_the_session(
    recording_comm: Any, caplog: Any
) -> None:
    agent = make(S([[S.text("hi")]]), "ctx-bad")
    panel = ChatPanel(agent)
    with caplog.at_level(logging.WARNING):
        from_js(panel, {"type": protocol.SESSION_SWITCH, "session": "nope"})
    assert agent.session_id == ""
    assert "No session 'nope'" in panel.error
    refused = session_frames(panel)[-1]  # at once: the select snaps back, the note says why
    assert refused["session"] == "" and "No session 'nope'" in refused["error"]
    assert protocol.parse_frame(refused) == refused


async def test_a_switch_refused_while_a_turn_runs_is_said_at_once_not_at_the_turns_end(recording_comm: Any) -> None:
    import asyncio

    started, release = asyncio.Event(), asyncio.Event()

    class Slow(Think):
        def get_model(self) -> str:
            return script.model

        def configure_session(self, session: Any) -> Any:
            return session.with_context("memory", max_tokens=200)

        def get_tools(self) -> dict:
            async def wait() -> str:
                """Wait for the test."""
                started.set()
                await release.wait()
                return "done"
            return {"wait": wait}

    script = S([[S.tool_call("wait", {})], [S.text("ok")]])
    agent = Slow("ctx-busy")
    other = agent.create_session("experiments", switch=False)
    panel = ChatPanel(agent)
    turn = asyncio.ensure_future(agent.send("go"))
    await started.wait()  # the turn runs its tool
    before = len(session_frames(panel))
    from_js(panel, {"type": protocol.SESSION_SWITCH, "session": other})
    refused = session_frames(panel)[before:]
    assert agent.session_id == "" and len(refused) == 1
    assert refused[0]["session"] == "" and "A turn is running" in refused[0]["error"]
    release.set()
    await turn
    assert "error" not in session_frames(panel)[-1]  # the next frame clears the note


def test_sessions_made_renamed_forked_or_deleted_in_a_cell_reach_open_panels_at_once(recording_comm: Any) -> None:
    agent = make(S([[S.text("hi")]]), "ctx-cells")
    panel = ChatPanel(agent)

    def names() -> list[str]:
        return [s["name"] for s in session_frames(panel)[-1]["sessions"]]

    made = agent.create_session("third", switch=False)
    assert names() == ["default", "third"]
    agent.rename_session(made, "fourth")
    assert names() == ["default", "fourth"]
    agent.fork_session(name="fifth")
    assert names() == ["default", "fourth", "fifth"]
    agent.delete_session("fourth")
    assert names() == ["default", "fifth"]
    assert session_frames(panel)[-1]["session"] == ""


def test_a_session_configuration_that_fails_still_opens_the_panel_without_session_state(
    recording_comm: Any, caplog: Any
) -> None:
    class Broken(Think):
        def configure_session(self, session: Any) -> Any:
            raise RuntimeError("the memory provider is down")

    with caplog.at_level(logging.ERROR, logger="think_nb.panel.hub"):
        panel = ChatPanel(Broken("broken"))
    assert panel.session_state == {}
    assert "the memory provider is down" in caplog.text
