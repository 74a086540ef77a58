"""ChatPanel, in-process, on a real `Think` agent and a `ScriptedModel`: frames sent, coalescing,
panel -> agent dispatch, traits, malformed frames.

The front end is played by helpers_comm (`from_js` delivers a frame, `custom_msgs` /
`state_updates` read what the panel sent); what the agent did is read from the agent itself
(stored messages, `agent.turns()`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from agents import scripted_agent
from helpers_comm import custom_msgs, from_js, open_state, state_updates
from panels import (
    USER,
    Holds,
    Probe,
    chat_request,
    chunk_types,
    chunks_of,
    merged,
    patches,
    responses,
    statuses,
    streamed_text,
    until,
    user_msg,
    view_transcript,
)
from think_nb.binding import runtime_of
from think_nb.panel import protocol, widget
from think_nb.panel.transcript import usage_totals
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S
from think_nb.turns.replay import Recording


async def test_opens_with_the_agents_state_and_subscribes(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("42")]]))
    await agent.send("What is 2 + 40?")
    assert not runtime_of(agent).has_listeners()
    panel = ChatPanel(agent)
    state = open_state(panel)
    assert len(state["uid"]) == 32
    assert {k: state[k] for k in ("agent_name", "db_path", "status", "error", "messages")} == {
        "agent_name": "t",
        "db_path": str(agent.db_path),
        "status": "ready",
        "error": "",
        "messages": agent.messages,
    }
    assert [(m["role"], m["parts"][-1]["text"]) for m in state["messages"]] == [
        ("user", "What is 2 + 40?"), ("assistant", "42")]
    assert runtime_of(agent).has_listeners()


def test_missing_bundle_names_the_fix(recording_comm: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    agent = scripted_agent(S([]))
    monkeypatch.setattr(widget, "ESM_PATH", tmp_path / "widget.js")
    with pytest.raises(FileNotFoundError, match=r"cd js && npm install && npm run build"):
        ChatPanel(agent)
    assert not runtime_of(agent).has_listeners()


def test_a_turn_of_10000_deltas_is_a_few_frames(recording_comm: Any) -> None:
    deltas = [str(i % 10) for i in range(10_000)]
    agent = scripted_agent(S([[S.deltas(deltas)]]))
    probe = Probe()
    runtime_of(agent).subscribe(probe)  # before the panel: it hears each chunk first
    panel = ChatPanel(agent)

    result = agent.run("count")  # a script: no running loop in the test
    elapsed = time.monotonic() - probe.first_at  # from the first chunk (not the model's import)

    frames = responses(panel)
    assert len(frames) <= elapsed / widget.FLUSH_INTERVAL_S + 2
    assert len(probe.chunks[result.request_id]) > 10_000  # one chunk per delta reached the panel
    assert streamed_text(frames) == "".join(deltas)
    assert chunk_types(frames) == [
        "start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish",
    ]  # fmt: skip
    assert frames[-1]["done"] is True and "error" not in frames[-1]
    assert {f["id"] for f in frames} == {result.request_id}
    assert panel.status == "ready"
    assert panel.messages == agent.messages
    assert panel.messages[-1]["parts"][-1]["text"] == "".join(deltas)


async def test_a_streaming_turn_stays_under_30_frames_per_second(recording_comm: Any) -> None:
    deltas = [f"{i:04d}" + "x" * 16 for i in range(500)]  # litellm refuses a model repeating one chunk
    agent = scripted_agent(S([[S.deltas(deltas)]], delay=0.001))  # streams over >= 0.5 s
    probe = Probe()
    runtime_of(agent).subscribe(probe)
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    elapsed = time.monotonic() - probe.first_at

    frames = responses(panel)
    assert len(frames) >= 3, "timer flushes must send frames while the turn runs"
    assert len(frames) <= elapsed * 30 + 2
    assert streamed_text(frames) == "".join(deltas)
    assert frames[-1]["done"] is True and "error" not in frames[-1]
    assert agent.turns()[-1]["status"] == "completed"


async def test_only_consecutive_deltas_of_the_same_part_merge(
    recording_comm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(widget, "FLUSH_INTERVAL_S", 3600.0)  # one batch, however slow the test
    script = S([[S.text("12", chunk_size=1), S.tool_call("add", {"a": 1, "b": 2}, chunk_size=4),
                 S.text("6")], [S.text("3")]])
    agent = scripted_agent(script)
    probe = Probe()
    runtime_of(agent).subscribe(probe)
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)

    first, *rest = responses(panel)  # the first chunk of a quiet panel goes out at once
    assert first["chunks"] == [probe.chunks["r1"][0]] and first["chunks"][0]["type"] == "start"
    assert [f["chunks"][-1]["type"] for f in rest[:-1]] == ["tool-input-available"]  # a complete call, at once
    assert rest[-1]["done"] is True
    sent = chunks_of(rest)
    assert sent == [c for f in rest for c in merged(f["chunks"])]
    assert merged(sent) == merged(probe.chunks["r1"][1:])
    deltas = [(c["type"], c.get("delta", c.get("inputTextDelta"))) for c in sent if "delta" in c["type"]]
    assert deltas == [("text-delta", "12"), ("tool-input-delta", '{"a": 1, "b": 2}'), ("text-delta", "6"),
                      ("text-delta", "3")]  # one part each: separate parts never merge

    # reasoning deltas, which no scripted model streams: a recorded turn played into the views
    chunks = [
        {"type": "start"},
        {"type": "text-delta", "id": "a", "delta": "1"},
        {"type": "text-delta", "id": "a", "delta": "2"},
        {"type": "text-delta", "id": "b", "delta": "3"},
        {"type": "reasoning-delta", "id": "b", "delta": "4"},
        {"type": "reasoning-delta", "id": "b", "delta": "5"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"a"'},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": ": 1}"},
        {"type": "text-delta", "id": "a", "delta": "6"},
    ]
    quiet = ChatPanel(agent)
    await agent.replay(recording=Recording("rec", [(0.0, c) for c in chunks]), speed=0)
    first, rest = responses(quiet)
    assert first["chunks"] == [{"type": "start"}]
    assert rest["chunks"] == [
        {"type": "text-delta", "id": "a", "delta": "12"},
        {"type": "text-delta", "id": "b", "delta": "3"},
        {"type": "reasoning-delta", "id": "b", "delta": "45"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"a": 1}'},
        {"type": "text-delta", "id": "a", "delta": "6"},
    ]


async def test_a_tool_call_reaches_the_panel_before_the_tool_runs(
    recording_comm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool may hold the kernel's thread (run_code runs the agent's code there) so the batch's timer
    cannot fire: the complete call is sent at once, so the panel shows it and Stop knows to interrupt."""
    monkeypatch.setattr(widget, "FLUSH_INTERVAL_S", 3600.0)
    seen: list[list[str]] = []
    panel: ChatPanel

    async def hold() -> str:
        """Stands for a tool that blocks the loop."""
        seen.append(chunk_types(responses(panel)))
        return "held"

    agent = scripted_agent(S([[S.text("running it"), S.tool_call("hold", {})], [S.text("done")]]), tools=[hold])
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    assert len(seen) == 1 and seen[0][-1] == "tool-input-available"
    assert streamed_text(responses(panel)) == "running itdone"


async def test_continuation_and_request_id_are_kept_per_frame(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("first")], [S.text("and more")]]))
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    result = await agent.continue_last_turn()
    assert (result.status, result.continuation) == ("completed", True)

    summary = [(f["id"], f.get("continuation", False), f["done"]) for f in responses(panel)]
    assert summary[-1] == (result.request_id, True, True)
    assert ("r1", False, True) in summary
    assert {s for s in summary if s[0] == "r1"} <= {("r1", False, False), ("r1", False, True)}
    assert {s[:2] for s in summary if s[0] == result.request_id} == {(result.request_id, True)}
    assert streamed_text(responses(panel, result.request_id)) == "and more"


async def test_an_error_turn_sends_an_error_frame_and_sets_the_traits(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("ab"), S.error("429 Too Many Requests")]]))
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    await until(lambda: panel.status == "error", "the error status")

    error = agent.turns()[-1]["error"]
    assert agent.turns()[-1]["status"] == "error" and "429 Too Many Requests" in error
    frames = responses(panel)
    chunks = chunks_of(frames)
    assert [c for c in chunks if c["type"] == "error"] == [{"type": "error", "errorText": error}]
    assert chunks[-1] == {"type": "error", "errorText": error}
    assert (frames[-1]["done"], frames[-1].get("error")) == (True, True)
    assert (panel.status, panel.error) == ("error", error)
    assert agent.messages[-1]["metadata"]["error"] == error  # the partial reply is kept


async def test_transcript_changes_reach_the_views_as_patches_keyed_by_id(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("42")], [S.text("43")]]))
    panel = ChatPanel(agent)
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "view-1"})  # a view attached
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    from_js(panel, chat_request("r2", user_msg("And 3 + 40?", id="u2")))
    await agent.wait_until_stable(timeout=60)

    # one patch per change, holding only the new message: never the transcript again, never twice
    sent = [(p["base"], p["rev"], p["after"], [m["id"] for m in p["messages"]], p["updated"]) for p in patches(panel)]
    assert sent == [
        (0, 1, None, ["u1"], []), (1, 2, "u1", [agent.messages[1]["id"]], []),
        (2, 3, agent.messages[1]["id"], ["u2"], []), (3, 4, "u2", [agent.messages[3]["id"]], [])]
    assert not [s for s in state_updates(panel) if "messages" in s or "transcript" in s]  # quiet traits
    assert view_transcript(panel) == agent.messages
    assert [(m["role"], m["parts"][-1]["text"]) for m in view_transcript(panel)] == [
        ("user", "What is 2 + 40?"), ("assistant", "42"), ("user", "And 3 + 40?"), ("assistant", "43")]
    # what a view that opens now reads: the branch as it is, at the revision of the last patch
    meta = {"rev": 4, "more": False, "usage": usage_totals(agent.messages)}
    assert (panel.messages, panel.transcript) == (agent.messages, meta)
    assert {k: panel.get_state()[k] for k in ("messages", "transcript")} == {"messages": agent.messages,
                                                                             "transcript": meta}


async def test_before_any_view_attached_the_window_is_synced(recording_comm: Any) -> None:
    """Run headless (nbclient storing the widget state it hears), no view applies patches: the window
    trait follows the branch, so the saved widget state holds the conversation."""
    agent = scripted_agent(S([[S.text("42")]]))
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    assert [s["messages"] for s in state_updates(panel) if "messages" in s][-1] == agent.messages


async def test_use_chat_request_submits_the_last_message(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("42")]]))
    panel = ChatPanel(agent)
    earlier = {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": "a stale copy"}]}
    request = protocol.parse_frame({**chat_request("req-1"), "messages": [earlier, USER]})
    from_js(panel, dict(request or {}))
    await agent.wait_until_stable(timeout=60)
    await until(lambda: panel.status == "ready", "the ready status")

    assert agent.messages[0] == USER and [m["id"] for m in agent.messages].count("a0") == 0
    assert [(t["request_id"], t["trigger"], t["status"]) for t in agent.turns()] == [("req-1", "panel", "completed")]
    assert statuses(panel) == ["submitted", "streaming", "ready"]


def test_a_refused_request_becomes_an_error_frame(recording_comm: Any) -> None:
    # no running event loop (a plain script): the real agent refuses to start a turn
    agent = scripted_agent(S([[S.text("never")]]))
    panel = ChatPanel(agent)
    from_js(panel, chat_request("r"))
    last = responses(panel)[-1]
    refusal = last["chunks"][0]["errorText"]
    assert refusal.startswith("Starting a turn needs a running event loop")
    assert (last["id"], last["done"], last.get("error"), last.get("refused")) == ("r", True, True, True)
    # no turn ran, so none failed: the views say why under the refused message (js state.ts applyRefusal)
    assert (panel.status, panel.error) == ("ready", "")
    assert (agent.messages, agent.turns()) == ([], [])


async def test_cancel_and_clear_reach_the_agent(recording_comm: Any) -> None:
    holds = Holds()
    agent = scripted_agent(S([[S.text("Hello"), S.tool_call("hold", {})]]), tools=[holds.tool])
    panel = ChatPanel(agent)
    from_js(panel, chat_request("req-1"))
    await until(lambda: holds.waiting == 1, "the turn to hold")
    from_js(panel, {"type": protocol.CHAT_REQUEST_CANCEL, "id": "req-1"})
    await agent.wait_until_stable(timeout=60)
    assert [(t["request_id"], t["status"]) for t in agent.turns()] == [("req-1", "aborted")]
    assert agent.messages[-1]["parts"][1]["text"] == "Hello"  # the partial reply is kept

    sent = len(custom_msgs(panel))
    from_js(panel, dict(protocol.chat_clear()))
    assert agent.messages == []
    assert type(agent)(agent.name).messages == []  # cleared in SQLite too
    assert panel.messages == []
    # the clear, the context tab's new token estimate, then the patch that keeps no message
    assert [m["type"] for m in custom_msgs(panel)[sent:]] == [protocol.CHAT_CLEAR, protocol.SESSION,
                                                              protocol.TRANSCRIPT_PATCH]
    assert (patches(panel)[-1]["after"], patches(panel)[-1]["messages"]) == (None, [])
    assert view_transcript(panel) == []


@pytest.mark.parametrize(
    "content",
    [
        "nonsense",
        {"type": "cf_agent_use_chat_request"},
        {"type": protocol.CHAT_REQUEST_CANCEL},
        dict(protocol.stream_resuming("r1")),  # a kernel -> panel frame sent back
    ],
)
async def test_malformed_or_misdirected_frames_are_logged_and_ignored(
    recording_comm: Any, content: Any, caplog: pytest.LogCaptureFixture
) -> None:
    agent = scripted_agent(S([[S.text("never")]]))
    panel = ChatPanel(agent)
    with caplog.at_level(logging.WARNING, logger="think_nb.panel.widget"):
        from_js(panel, content)
    assert not agent.is_running
    assert (agent.messages, agent.turns(), custom_msgs(panel), panel.status) == ([], [], [], "ready")
    assert any(r.name == "think_nb.panel.widget" for r in caplog.records)


async def test_handler_errors_are_logged_not_raised(recording_comm: Any, caplog: pytest.LogCaptureFixture) -> None:
    agent = scripted_agent(S([[S.text("still alive")]]))
    panel = ChatPanel(agent)
    # a stored stream row the recorder cannot read (written by a broken or newer version)
    runtime_of(agent).store.streams.set_status("bad", False, "completed")
    runtime_of(agent).store.db.execute("INSERT INTO think_stream_chunks (agent_key, request_id, chunks, created_at) "
                           "VALUES (?, 'bad', '[{not json', 0)", (runtime_of(agent).key,))
    with caplog.at_level(logging.ERROR, logger="think_nb.panel.widget"):
        from_js(panel, {"type": protocol.STREAM_RESUME_ACK, "id": "bad", "probeId": "p"})
    assert "JSONDecodeError" in caplog.text and "failed" in caplog.text
    # the kernel side goes on
    from_js(panel, chat_request("r1"))
    await agent.wait_until_stable(timeout=60)
    assert streamed_text(responses(panel, "r1")) == "still alive"


async def test_resume_replays_the_turn_so_far_then_goes_on_live(recording_comm: Any) -> None:
    holds = Holds()
    agent = scripted_agent(S([[S.deltas(["Hel", "lo"]), S.tool_call("hold", {})], [S.text("!")]]),
                           tools=[holds.tool])
    probe = Probe()
    runtime_of(agent).subscribe(probe)
    panel = ChatPanel(agent)
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v1"})
    assert custom_msgs(panel)[-1] == protocol.stream_resume_none("v1")

    from_js(panel, chat_request("r1"))
    await until(lambda: holds.waiting == 1, "the turn to hold")
    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v2"})
    assert custom_msgs(panel)[-1] == protocol.stream_resuming("r1", "v2")
    from_js(panel, {"type": protocol.STREAM_RESUME_ACK, "id": "r1", "probeId": "v2"})
    replay = custom_msgs(panel)[-1]
    sent_before = responses(panel)[:-1]
    assert replay == protocol.use_chat_response("r1", merged(probe.chunks["r1"]), replay=True)
    assert chunk_types([replay]) == ["start", "start-step", "text-start", "text-delta", "text-end",
                                     "tool-input-start", "tool-input-delta", "tool-input-available"]
    assert streamed_text([replay]) == "Hello"
    assert replay["chunks"] == merged(chunks_of(sent_before))  # what this view was sent live, no more

    holds.release()
    await agent.wait_until_stable(timeout=60)
    after = responses(panel)[responses(panel).index(replay) + 1:]
    assert streamed_text(after) == "!"
    assert merged(replay["chunks"] + chunks_of(after)) == merged(probe.chunks["r1"])  # nothing twice or missing
    assert after[-1]["done"] is True

    from_js(panel, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v3"})
    assert custom_msgs(panel)[-1] == protocol.stream_resume_none("v3")
    assert panel.client_tool_runner == "v3"  # the latest view to attach runs client tools


async def test_close_unsubscribes(recording_comm: Any) -> None:
    agent = scripted_agent(S([[S.text("unseen")]]))
    panel = ChatPanel(agent)
    sent = len(panel.comm.sent)
    comm = panel.comm
    panel.close()
    assert len(panel._hub._listeners) == 0
    await agent.send("hi")
    assert [m for _, m, _ in comm.sent[sent:] if m and m.get("method") == "custom"] == []
