"""Notices (issue 30: Think's `deliverNotice`; `think_nb.notices`): an assistant message without a
turn, shown by the panels and read by later turns' model. Ported from Think's deliver-notice.test.ts."""

from __future__ import annotations

from typing import Any

import pytest
from dirty_equals import IsStr

from agents import scripted_agent
from think_nb import Think, tool
from think_nb.channels import ChannelContext
from think_nb.errors import UserError
from think_nb.notices import OUT_OF_BAND
from think_nb.testing import ScriptedModel as S

CHANNELS = {"voice": {"kind": "voice"}}


def notice(text: str, kind: str = "notice", channel: str = "web") -> dict:
    return {"id": IsStr(), "role": "assistant", "parts": [{"type": "text", "text": text}],
            "metadata": {"deliveryKind": kind, "channel": channel}}


def agent_on(script: S, **attrs: Any) -> Think:
    return scripted_agent(script, configure_channels=lambda self: CHANNELS, **attrs)


async def test_a_plain_web_notice_is_appended_without_a_turn() -> None:
    """Think: "appends a plain web notice to the transcript when informModel is false", "does not
    start a model turn (notices are assistant-only, no user turn)", "defaults the delivery kind to notice"."""
    script = S([])
    agent = agent_on(script)
    stored = await agent.deliver_notice("background job started")
    await agent.deliver_notice("note two")
    assert agent.messages == [notice("background job started"), notice("note two")]
    assert stored == agent.messages[0]
    assert (agent.turns(), script.requests) == ([], [])


async def test_kinds_markdown_and_the_out_of_band_phrasing() -> None:
    """Think: "annotates the web notice when informModel is true", "accepts a markdown payload",
    "records the delivery kind on the notice message metadata"."""
    agent = agent_on(S([]))
    await agent.deliver_notice("started a background agent", inform_model=True)
    await agent.deliver_notice({"markdown": "**done**"}, kind="final")
    await agent.deliver_notice("typing…", kind="command", channel="voice")
    assert agent.messages == [notice(f"{OUT_OF_BAND} started a background agent"), notice("**done**", "final"),
                              notice("typing…", "command", "voice")]
    assert OUT_OF_BAND == "[Delivered to the user out of band]"


async def test_a_later_turn_sees_the_notice_the_model_was_told_of() -> None:
    script = S([[S.text("Noted.")]])
    agent = agent_on(script, get_system_prompt=lambda self: "Be brief.")
    await agent.deliver_notice("the export finished", inform_model=True)
    await agent.send("anything new?")
    assert script.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "[Delivered to the user out of band] the export finished"},
        {"role": "user", "content": "anything new?"}]


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"channel": "telegram"}, r"channel 'telegram' is not configured; configured channels: 'web', 'voice'"),
    ({"kind": "shout"}, "kind 'shout' is not one of final, interim, notice, command"),
    ({"inform_model": "yes"}, "inform_model is True or False"),
])
async def test_a_bad_notice_fails_fast_and_stores_nothing(kwargs: dict, needle: str) -> None:
    """Think: "throws when a named channel cannot be resolved (fail fast)"."""
    agent = agent_on(S([]))
    with pytest.raises(UserError, match=needle):
        await agent.deliver_notice("hi", **kwargs)
    with pytest.raises(UserError, match="text is a non-empty string"):
        await agent.deliver_notice("  ")
    assert agent.messages == []


async def test_the_panel_shows_a_notice(recording_comm: Any) -> None:
    from panels import view_transcript
    from think_nb.panel.widget import ChatPanel

    agent = agent_on(S([]))
    panel = ChatPanel(agent)
    await agent.deliver_notice("the nightly import finished")
    assert panel.messages == [notice("the nightly import finished")]
    assert view_transcript(panel) == panel.messages  # what the views heard (transcript_patch frames)


async def test_a_tool_delivers_a_notice_on_its_turns_channel() -> None:
    seen: list = []
    holder: list[Think] = []

    @tool
    async def long_job() -> str:
        """Start a long job."""
        agent = holder[0]
        seen.append(agent.active_channel)
        await agent.deliver_notice("working on it", kind="interim")
        return "started"

    script = S([[S.tool_call("long_job", {})], [S.text("Started.")]])
    agent = agent_on(script, get_tools=lambda self: [long_job])
    holder.append(agent)
    result = await agent.send("go", channel="voice")
    assert result.status == "completed" and seen == [ChannelContext("voice", "voice")]
    assert [(m["role"], m.get("metadata", {}).get("deliveryKind")) for m in agent.messages] == [
        ("user", None), ("assistant", None), ("assistant", "interim")]
    assert agent.messages[-1] == notice("working on it", "interim", "voice")


async def test_refused_while_a_call_waits_for_approval() -> None:
    @tool(needs_approval=True)
    def transfer(amount: float) -> str:
        """Transfer money."""
        return f"sent {amount}"

    script = S([[S.tool_call("transfer", {"amount": 5}, id="c1")], [S.text("Sent.")]])
    agent = agent_on(script, get_tools=lambda self: [transfer])
    await agent.send("send 5")
    before = agent.get_messages()
    with pytest.raises(UserError, match=r"tool call 'c1' \(transfer\) waits for the user; .*agent.approve\(id\)"):
        await agent.deliver_notice("hold on")
    assert agent.messages == before
    task = agent.approve("c1")
    assert task is not None and (await task).status == "completed"
    await agent.deliver_notice("done")
    assert agent.messages[-1] == notice("done")
