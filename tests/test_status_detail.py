"""Busy from the first moment, saying what is happening (issues 17 §1 and 18 §3).

Every entry path shows `submitted` (with the request in `annotations.active`, so Stop works) as
soon as the turn is started; the status detail then says what the turn waits for: "loading
litellm…" while the import thread runs (the event loop keeps running), "loading the local model…"
while the GGUF file loads, "N queued" beside the running turn's words. The wait is a `wait` row
of the turn's trace. litellm's import is simulated by a future the test completes (litellm itself
is imported once per test process); everything else is real (SQLite, hub, panel, turn engine).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest

from agents import scripted_agent
from helpers_comm import from_js, state_updates
from panels import chat_request, until, user_msg
from think_nb.binding import runtime_of
from think_nb.models import litellm_env, local, progress
from think_nb.panel.hub import ViewHub
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S


def shown(panel: ChatPanel) -> list[tuple[str, str]]:
    """The (status, status_detail) pairs the panel's view was synced to, in order, repeats dropped."""
    out: list[tuple[str, str]] = []
    status, detail = "ready", ""
    for update in state_updates(panel):
        status, detail = update.get("status", status), update.get("status_detail", detail)
        if not out or out[-1] != (status, detail):
            out.append((status, detail))
    return out


@pytest.fixture
def litellm_importing(monkeypatch: pytest.MonkeyPatch) -> concurrent.futures.Future:
    """litellm "still importing" until the test completes the returned future (from any thread)."""
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_running_or_notify_cancel()
    monkeypatch.setattr(litellm_env, "ready", future.done)
    monkeypatch.setattr(litellm_env, "preload", lambda: future)
    return future


def start_cell(agent: Any, panel: ChatPanel) -> None:
    agent.submit("Hello", trigger="cell")  # what `%%think` does


def start_send(agent: Any, panel: ChatPanel) -> None:
    asyncio.get_running_loop().create_task(agent.send("Hello"))


def start_panel(agent: Any, panel: ChatPanel) -> None:
    from_js(panel, chat_request("req-panel", user_msg("Hello")))


def start_submit_messages(agent: Any, panel: ChatPanel) -> None:
    asyncio.get_running_loop().create_task(agent.submit_messages([user_msg("Hello")]))


@pytest.mark.parametrize("start", [start_cell, start_send, start_panel, start_submit_messages])
async def test_every_entry_path_is_submitted_then_says_it_loads_litellm(recording_comm: Any, start: Any,
                                                                       litellm_importing: Any) -> None:
    agent = scripted_agent(S([[S.text("Hi there.")]]), via_litellm=True)
    panel = ChatPanel(agent)
    start(agent, panel)
    await until(lambda: panel.status != "ready", "the turn shows")
    assert panel.status == "submitted" and panel.annotations["active"], "submitted, with a request Stop cancels"
    await until(lambda: panel.status_detail == progress.LOADING_LITELLM, "the wait is reported")
    ticks = 0
    while ticks < 50:  # the event loop runs while the turn waits for the import
        await asyncio.sleep(0)
        ticks += 1
    assert panel.status == "submitted", "a turn waiting for litellm has streamed nothing a person can see"
    threading.Thread(target=lambda: litellm_importing.set_result(litellm_env.get_litellm())).start()
    await until(lambda: not agent.is_running and panel.status == "ready", "the turn ends")
    assert shown(panel) == [("submitted", ""), ("submitted", progress.LOADING_LITELLM), ("submitted", ""),
                            ("streaming", ""), ("ready", "")]
    assert agent.messages[-1]["parts"][-1]["text"] == "Hi there."
    trace = agent.trace()
    waits = trace[trace["kind"] == "wait"]
    assert list(waits["hook"]) == [progress.LOADING_LITELLM]
    assert waits["duration_ms"].iloc[0] > 0
    assert trace.iloc[list(trace["kind"]).index("wait") + 1]["hook"] in ("text-start", "text-delta", "start-step")


async def test_a_cell_turn_is_submitted_before_the_call_returns(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("Hi.")]]))
    panel = ChatPanel(agent)
    task = agent.submit("Hello", trigger="cell")
    assert (panel.status, panel.annotations["active"]) == ("submitted", [task.get_name().removeprefix("think-turn-")])
    await task


async def test_queued_turns_say_how_many_are_ahead(recording_comm: Any) -> None:
    gate = asyncio.Event()
    agent = scripted_agent(S([[S.text("Working"), S.wait(gate), S.text(" done.")], [S.text("Second.")],
                              [S.text("Third.")]]))
    panel = ChatPanel(agent)
    hub = ViewHub.for_agent(runtime_of(agent))
    first = agent.submit("one", trigger="cell").get_name().removeprefix("think-turn-")
    await until(lambda: hub.status == "streaming", "the first turn streams, then waits on the gate")
    second = agent.submit("two", trigger="cell").get_name().removeprefix("think-turn-")
    assert (hub.status, hub.detail) == ("streaming", "1 queued")  # the running turn's status, the queue beside it
    await until(lambda: panel.annotations["current"] == first and panel.annotations["active"][-1] == second,
                "Stop's target is the turn the status describes, not the newest")
    from_js(panel, chat_request("req-3", user_msg("three", id="u3")))
    await until(lambda: hub.detail == "2 queued", "the third is behind two")
    gate.set()
    await until(lambda: not agent.is_running and panel.status == "ready", "all three turns end")
    details = [d for i, (_, d) in enumerate(shown(panel)) if i == 0 or shown(panel)[i - 1][1] != d]
    assert details == ["", "1 queued", "2 queued", "1 queued", ""]
    assert [m["parts"][-1]["text"] for m in agent.messages if m["role"] == "assistant"] == \
        ["Working done.", "Second.", "Third."]


def queued_texts(panel: ChatPanel) -> list[str]:
    return [q["message"]["parts"][0]["text"] for q in panel.annotations.get("queued", [])]


async def test_queued_messages_reach_every_panel_at_once_in_order(recording_comm: Any) -> None:
    """Issue 27: a message sent while a turn runs (a `%%think` cell, another panel) is in every panel's
    annotations as soon as it is accepted, in run order, until its turn stores it; a superseded one is
    listed with the turn that carries it (`latest`); a cleared queue lists none."""
    gate = asyncio.Event()
    agent = scripted_agent(S([[S.text("Working"), S.wait(gate), S.text(" done.")], [S.text("Second.")],
                              [S.text("Third.")]]))
    panel, other = ChatPanel(agent), ChatPanel(agent)
    agent.submit("one", trigger="cell")
    await until(lambda: panel.status == "streaming", "the first turn streams, then waits on the gate")
    assert queued_texts(panel) == []  # a running turn's message is stored: in the transcript
    agent.submit("two", trigger="cell")
    assert queued_texts(panel) == queued_texts(other) == ["two"], "at once, before the loop runs again"
    from_js(other, chat_request("req-3", user_msg("three", id="u3")))
    await until(lambda: queued_texts(panel) == ["two", "three"], "the panel's send is queued behind the cell's")
    assert panel.annotations["queued"][1] == {"requestId": "req-3", "message": user_msg("three", id="u3")}
    assert [m["parts"][0]["text"] for m in panel.messages] == ["one"], "stored when their turn starts"
    gate.set()
    await until(lambda: queued_texts(panel) == ["three"] and len(panel.messages) >= 3, "two starts: stored")
    await until(lambda: not agent.is_running and panel.status == "ready", "all three turns end")
    assert queued_texts(panel) == queued_texts(other) == []
    assert [m["parts"][-1]["text"] for m in agent.messages] == ["one", "Working done.", "two", "Second.",
                                                                "three", "Third."]

    gate.clear()
    latest = scripted_agent(S([[S.text("Busy"), S.wait(gate)], [S.text("Both answered.")]]), name="latest",
                            message_concurrency="latest")
    view = ChatPanel(latest)
    latest.submit("a", trigger="cell")
    await until(lambda: view.status == "streaming", "busy")
    latest.submit("b", trigger="cell")
    latest.submit("c", trigger="cell")  # supersedes b, carrying its message
    assert queued_texts(view) == ["b", "c"]
    assert len({q["requestId"] for q in view.annotations["queued"]}) == 1
    latest.clear_messages()
    await until(lambda: not latest.is_running, "cleared: the queued turn is skipped")
    assert queued_texts(view) == []


async def test_the_first_local_model_call_says_it_loads_the_model(recording_comm: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    real = local.get_llama()  # the embedded SmolLM2 (about 0.2 s)
    loading = threading.Event()
    monkeypatch.setattr(local, "_llama", None)  # a process that has not loaded it yet

    def gated() -> Any:
        loading.wait()
        return real

    monkeypatch.setattr(local, "get_llama", gated)
    agent = scripted_agent(S([]), tools=[])
    type(agent).get_model = lambda self: local.LOCAL_PROVIDER + "/smollm2"  # type: ignore[method-assign]
    panel = ChatPanel(agent)
    agent.submit("Say hi", trigger="cell")
    await until(lambda: panel.status_detail == progress.LOADING_LOCAL_MODEL, "the load is reported")
    assert panel.status == "submitted"
    loading.set()
    await until(lambda: not agent.is_running and panel.status == "ready", "the turn ends", timeout=120)
    trace = agent.trace()
    assert list(trace[trace["kind"] == "wait"]["hook"]) == [progress.LOADING_LOCAL_MODEL, progress.READING_PROMPT]
    assert agent.messages[-1]["role"] == "assistant"


async def test_a_stop_while_litellm_loads_ends_the_turn_and_not_the_import(recording_comm: Any,
                                                                           litellm_importing: Any) -> None:
    agent = scripted_agent(S([[S.text("late")], [S.text("Next.")]]), via_litellm=True)
    panel = ChatPanel(agent)
    task = agent.submit("Hello", trigger="cell")
    await until(lambda: panel.status_detail == progress.LOADING_LITELLM, "the wait is reported")
    agent.abort_all_requests()  # the panel's Stop
    result = await task
    assert result.status == "aborted"
    await until(lambda: (panel.status, panel.status_detail) == ("ready", ""), "the panel is idle again")
    assert not litellm_importing.cancelled()
    litellm_importing.set_result(litellm_env.get_litellm())
    assert (await agent.send("again")).status == "completed"


async def test_a_stall_timeout_does_not_count_the_import(recording_comm: Any, litellm_importing: Any) -> None:
    agent = scripted_agent(S([[S.text("Fine.")]]), chat_stream_stall_timeout=0.05, via_litellm=True)
    task = agent.submit("Hello", trigger="cell")
    hub = ViewHub.for_agent(runtime_of(agent))
    await until(lambda: hub.detail == progress.LOADING_LITELLM, "the wait is reported")
    await asyncio.sleep(0.2)  # four stall timeouts pass while litellm imports
    litellm_importing.set_result(litellm_env.get_litellm())
    assert (await task).status == "completed"


async def test_a_frame_delivered_on_another_thread_runs_its_turn_on_the_kernel_loop(recording_comm: Any) -> None:
    """ipykernel 7 can hand a comm message to a subshell's thread and loop: the turn still runs on
    the panel's (the kernel's) loop, queued with the others, never on the subshell's."""
    gate = asyncio.Event()
    agent = scripted_agent(S([[S.text("Working"), S.wait(gate), S.text(" done.")], [S.text("Second.")]]))
    panel = ChatPanel(agent)
    home = asyncio.get_running_loop()
    seen: list[Any] = []
    thread = threading.Thread(target=lambda: asyncio.run(_deliver(panel, seen, home)))
    thread.start()
    hub = ViewHub.for_agent(runtime_of(agent))
    await until(lambda: agent.is_running and hub.status == "streaming", "the turn streams")
    thread.join()
    agent.submit("two", trigger="cell")
    assert ViewHub.for_agent(runtime_of(agent)).detail == "1 queued"
    gate.set()
    await until(lambda: not agent.is_running and panel.status == "ready", "both turns end")
    assert seen == [False]  # the subshell's loop was not the kernel's
    assert home is asyncio.get_running_loop()
    assert [m["parts"][-1]["text"] for m in agent.messages if m["role"] == "assistant"] == ["Working done.", "Second."]


async def _deliver(panel: ChatPanel, seen: list, home: asyncio.AbstractEventLoop) -> None:
    seen.append(asyncio.get_running_loop() is home)
    from_js(panel, chat_request("req-sub", user_msg("one")))
