"""The embedded model, honestly shown (issue 27 §4, §6, §7).

- The status says what the turn does: `submitted` until something a person sees arrives (the
  `start` markers do not count), "thinking — choosing a tool…" while the embedded model's
  non-streamed tool step runs, `streaming` only once text arrives.
- The step view and `trace()` say what the embedded model is sent (the exchange in progress, the
  tools the message names), tool schemas folded under their names.
- Streamed steps of the embedded model report usage; a reply cut at `max_tokens` ends `length`;
  Regenerate samples instead of repeating the greedy reply.
- With a demo class's tools, a plain message streams a plain answer and calls no tool.

Real SQLite, hub, panel and turn engine; the embedded SmolLM2 where marked `localmodel` (its
llama-cpp call is held on an event only where the test must see the status during it).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agents import add, scripted_agent
from panels import until
from think_nb import Think, TurnConfig, tool
from think_nb.binding import runtime_of
from think_nb.models import local, progress
from think_nb.models.resolve import LOCAL_MODEL
from think_nb.panel.hub import ViewHub
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S
from think_nb.turns.capabilities import system_for_turn


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def statuses(hub: ViewHub) -> list[tuple[str, str]]:
    """Record every (status, detail) the hub shows from now on (repeats dropped)."""
    seen: list[tuple[str, str]] = []

    class Watcher:
        def on_status(self, status: str) -> None:
            if not seen or seen[-1] != (status, hub.detail):
                seen.append((status, hub.detail))

    hub.subscribe(Watcher())
    return seen


async def test_a_turn_is_submitted_until_something_a_person_sees_arrives(recording_comm: Any) -> None:
    gate, more = asyncio.Event(), asyncio.Event()
    agent = scripted_agent(S([[S.wait(gate), S.text("Hello"), S.wait(more), S.text(" there.")]]))
    panel = ChatPanel(agent)
    hub = ViewHub.for_agent(runtime_of(agent))
    seen = statuses(hub)
    chunks: list[str] = []

    class View:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            chunks.append(chunk["type"])

    runtime_of(agent).subscribe(View())
    task = agent.submit("Hi", trigger="cell")
    await until(lambda: "start-step" in chunks, "the turn sent its start markers")
    for _ in range(20):
        await asyncio.sleep(0)
    assert hub.status == "submitted", "only `start`/`start-step` so far: nothing streams"
    gate.set()
    await until(lambda: hub.status == "streaming", "the first text streams")
    more.set()
    assert (await task).status == "completed"
    await until(lambda: panel.status == "ready", "the panel is idle")
    assert [s for s, _ in seen] == ["submitted", "streaming", "ready"]


@pytest.fixture
def held_call(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The embedded model's non-streamed call waits for the returned event, then answers with a call
    of `add` (what SmolLM2 returns for "What is 2 plus 40? Use the add tool.")."""
    release = threading.Event()

    def call(messages: list, params: dict, stop: threading.Event | None = None) -> dict:
        assert params["tools"] and params["tool_choice"] == "auto"
        release.wait()
        return {"choices": [{"finish_reason": "tool_calls", "message": {"content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 40}'}}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}}

    monkeypatch.setattr(local, "_call", call)
    return release


class Embedded(Think):
    include_workspace_tools = False

    def get_model(self) -> str:
        return LOCAL_MODEL

    def get_tools(self) -> list:
        return [add, delete_file]


@pytest.mark.localmodel
async def test_the_embedded_models_tool_step_says_it_is_choosing_a_tool(recording_comm: Any,
                                                                       held_call: threading.Event) -> None:
    local.get_llama()
    agent = Embedded("choose")
    panel = ChatPanel(agent)
    hub = ViewHub.for_agent(runtime_of(agent))
    seen = statuses(hub)
    task = agent.submit("What is 2 plus 40? Use the add tool.", trigger="cell")
    await until(lambda: hub.detail == progress.CHOOSING_TOOL, "the non-streamed call is reported")
    assert hub.status == "submitted"
    held_call.set()
    assert (await task).status == "completed"
    await until(lambda: panel.status == "ready", "the panel is idle", timeout=120)
    assert seen[:2] == [("submitted", ""), ("submitted", progress.CHOOSING_TOOL)]
    assert ("streaming", "") in seen and seen[-1] == ("ready", "")
    trace = agent.trace()
    assert progress.CHOOSING_TOOL in trace[trace.kind == "wait"].hook.tolist()
    calls = trace[trace.kind == "model"]
    assert calls.summary.tolist()[0] == ("2 messages, tools: add (1 of 2) — it is offered only the tools the "
                                         "message names")
    assert calls.summary.tolist()[1].endswith("tools: none (0 of 2) — no tools after a tool result")
    tool_part = next(p for p in agent.messages[-1]["parts"] if p["type"] == "tool-add")
    assert tool_part["output"] == 42


@pytest.mark.localmodel
async def test_a_plain_message_with_tools_streams_a_plain_answer_and_calls_nothing(recording_comm: Any) -> None:
    agent = Embedded("plain")
    panel = ChatPanel(agent)
    hub = ViewHub.for_agent(runtime_of(agent))
    seen = statuses(hub)
    result = await agent.send("My name is Sam.")
    assert result.status == "completed"
    await until(lambda: panel.status == "ready", "the panel is idle")
    parts = agent.messages[-1]["parts"]
    assert not [p for p in parts if p["type"].startswith("tool-")], "no tool for a plain message"
    assert any(p["type"] == "text" and p["text"].strip() for p in parts)
    assert ("submitted", progress.READING_PROMPT) in seen and ("streaming", "") in seen
    assert not any(d == progress.CHOOSING_TOOL for _, d in seen), "a streamed step, not a non-streamed call"
    trace = agent.trace()
    assert trace[trace.kind == "model"].summary.tolist() == [
        "2 messages, tools: none (0 of 2) — it is offered only the tools the message names"]


@pytest.mark.localmodel
async def test_a_streamed_reply_reports_usage_and_a_cut_reply_ends_length(recording_comm: Any) -> None:
    class Short(Embedded):
        def before_turn(self, ctx: Any) -> TurnConfig:
            return TurnConfig(max_output_tokens=8)

    agent = Short("cut")
    panel = ChatPanel(agent)
    result = await agent.send("Write a long story about a lighthouse keeper.")
    message = agent.messages[-1]
    usage = message["metadata"]["usage"]
    assert (result.status, message["metadata"]["finishReason"]) == ("completed", "length")
    assert usage["source"] == "reported" and usage["completion_tokens"] == 8
    system = system_for_turn(agent.get_system_prompt(), ["add", "delete_file"], LOCAL_MODEL)  # Think's capability block
    sent = local.adapt_messages([{"role": "system", "content": system},
                                 {"role": "user", "content": "Write a long story about a lighthouse keeper."}])
    reported = local._call(sent, {"max_tokens": 8, "temperature": 0.0})["usage"]
    assert usage["prompt_tokens"] == reported["prompt_tokens"], "the count llama.cpp reports without streaming"
    await until(lambda: panel.annotations["finish"].get(message["id"]) == "length", "the panel offers Continue")


@pytest.mark.localmodel
async def test_regenerate_on_the_greedy_embedded_model_gives_another_reply(recording_comm: Any) -> None:
    class Short(Embedded):
        def before_turn(self, ctx: Any) -> TurnConfig:
            return TurnConfig(max_output_tokens=24)

    agent = Short("regen")
    first = await agent.send("Write three sentences about the sea.")
    again = await agent.regenerate("req-regenerate-1")
    assert (first.status, again.status) == ("completed", "completed")
    texts = [next(p["text"] for p in m["parts"] if p["type"] == "text") for m in (first.message, again.message)]
    assert texts[0] != texts[1], "a regenerate samples"
    assert len(agent.get_branches(again.message["id"])) == 2


def test_the_step_view_says_what_the_embedded_model_is_sent() -> None:
    agent = Embedded("view")
    conversation = runtime_of(agent).conversation  # an earlier exchange, as a finished turn leaves it
    conversation.append({"id": "u0", "role": "user", "parts": [{"type": "text", "text": "My name is Sam."}]})
    conversation.append({"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": "Hi Sam!"}]})
    stepper = agent.step("Please add 2 and 3.")
    event = stepper.next()
    assert event.hook == "before_turn"
    view = event._repr_html_()
    assert "2 of 4 messages, tools: add (1 of 2)" in view
    assert view.count("<td>no</td>") == 2 and view.count("<td>yes</td>") == 1
    assert "<summary><code>add</code></summary>" in view
    assert "<summary><code><s>delete_file</s></code></summary>" in view, "not offered: struck out"
    stepper.cancel()


def test_a_hosted_models_step_view_folds_the_schemas_and_claims_nothing() -> None:
    agent = scripted_agent(S([[S.text("ok")]]), tools=[add, delete_file])
    stepper = agent.step("hello")
    view = stepper.next()._repr_html_()
    assert "<details" in view and "<summary><code>delete_file</code></summary>" in view
    assert ">sent<" not in view and "<s>" not in view
    assert stepper.run().status == "completed"
