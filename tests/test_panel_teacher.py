"""What the panel shows beside the transcript (`annotations`, `agent_info`) and the frames behind
its Continue and version buttons, in-process on real agents and ScriptedModels."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import scripted_agent
from helpers_comm import from_js
from panels import USER, Holds, chat_request, responses, statuses, streamed_text, until
from think_nb import Think
from think_nb.panel import protocol
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S
from think_nb.turns.hooks import ToolCallDecision


async def test_a_reply_cut_at_length_is_marked_and_continue_request_continues_it(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("Once upon a"), S.finish("length"), S.usage(12, 4)], [S.text(" time.")]]))
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    cut = agent.messages[-1]["id"]
    await until(lambda: panel.annotations.get("finish", {}).get(cut) == "length", "the finish reason")

    from_js(panel, {"type": protocol.CONTINUE_REQUEST, "id": "go-on"})
    await until(lambda: agent.turns()[-1]["request_id"] == "go-on", "the continuation to start")
    await agent.wait_until_stable(timeout=60)
    assert streamed_text(responses(panel, "go-on")) == " time."
    assert agent.messages[-1]["metadata"]["continuation"] is True
    assert [t["trigger"] for t in agent.turns()] == ["panel", "continuation"]
    await until(lambda: panel.annotations["finish"].get(agent.messages[-1]["id"]) == "stop", "the new finish")


async def test_switch_branch_frame_shows_the_other_version_and_annotations_count_versions(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("first")], [S.text("second")]]))
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    await agent.regenerate()
    first, second = (m["id"] for m in agent.get_branches(agent.messages[-1]["id"]))
    await until(lambda: second in panel.annotations.get("branches", {}), "the versions")
    assert panel.annotations["branches"][second] == {"index": 1, "count": 2, "ids": [first, second]}

    from_js(panel, {"type": protocol.SWITCH_BRANCH, "messageId": first})
    assert [m["parts"][-1]["text"] for m in panel.messages] == ["What is 2 + 40?", "first"]
    assert panel.annotations["branches"][first]["index"] == 0
    from_js(panel, {"type": protocol.SWITCH_BRANCH, "messageId": "no-such-message"})  # logged, nothing changes
    assert panel.messages[-1]["id"] == first


async def test_blocked_and_substituted_calls_are_annotated(recording_comm: Any) -> None:
    def before_tool_call(self: Think, ctx: Any) -> Any:
        if ctx.input.get("a") == 1:
            return ToolCallDecision.block("no ones in class")
        if ctx.input.get("a") == 2:
            return {"action": "substitute", "output": 99}
        return None

    agent = scripted_agent(S([[S.tool_call("add", {"a": 1, "b": 1}, id="c1"),
                               S.tool_call("add", {"a": 2, "b": 2}, id="c2"),
                               S.tool_call("add", {"a": 3, "b": 3}, id="c3")], [S.text("ok")]]),
                           before_tool_call=before_tool_call)
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    await until(lambda: len(panel.annotations.get("tools", {})) == 2, "the decisions")
    assert panel.annotations["tools"] == {"c1": {"action": "block", "reason": "no ones in class"},
                                          "c2": {"action": "substitute", "reason": None}}


async def test_an_async_before_tool_call_decision_is_stored_with_the_message(recording_comm: Any) -> None:
    async def before_tool_call(self: Think, ctx: Any) -> Any:
        await asyncio.sleep(0)
        return ToolCallDecision.block()

    agent = scripted_agent(S([[S.tool_call("add", {"a": 1, "b": 1}, id="c1")], [S.text("ok")]]),
                           before_tool_call=before_tool_call)
    await agent.send("add")
    decision = {"type": "data-tool-decision", "id": "c1", "data": {"toolCallId": "c1", "action": "block",
                                                                  "reason": None}}
    assert decision in type(agent)(agent.name, db=agent.db_path).messages[-1]["parts"]  # survives a restart
    assert ChatPanel(agent).annotations["tools"] == {"c1": {"action": "block", "reason": None}}


async def test_a_turn_started_from_a_cell_is_submitted_at_once_with_its_request_id(recording_comm: Any) -> None:
    holds = Holds()
    agent = scripted_agent(S([[S.tool_call("hold", {})], [S.text("done")]]), tools=[holds.tool])
    panel = ChatPanel(agent)
    task = agent.submit("wait", request_id="cell-1", trigger="cell")
    assert panel.annotations["active"] == ["cell-1"]  # at once: Stop can cancel it before any chunk
    await until(lambda: holds.waiting == 1, "the hold")
    assert statuses(panel)[:2] == ["submitted", "streaming"]
    from_js(panel, {"type": protocol.CHAT_REQUEST_CANCEL, "id": "cell-1"})
    assert (await task).status == "aborted"
    await until(lambda: panel.annotations["active"] == [] and panel.status == "ready", "ready again")


def test_agent_info_names_the_class_and_says_whether_the_model_is_offline(recording_comm: Any) -> None:
    class Tutor(Think):
        pass

    assert ChatPanel(Tutor("default")).agent_info == {
        "class": "Tutor", "model": "think-local/smollm2-135m-instruct", "offline": True}
    hosted = Tutor("hosted")
    hosted.default_model = "openai/gpt-4o-mini"
    assert ChatPanel(hosted).agent_info == {"class": "Tutor", "model": "openai/gpt-4o-mini", "offline": False}
    assert USER["role"] == "user"
