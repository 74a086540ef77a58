"""`ViewHub`: what every chat panel of one agent shares — fan-out, status, client-tool runner.

One hub per agent (`ViewHub.for_agent(runtime)`) is the only panel-side listener on the agent
(`runtime.subscribe`); it sees the agent only as a `PanelSource` (declared below, implemented by
`think_nb.runtime.AgentRuntime`). It

- fans every event out to its panels (`on_chunks`: each recorded run of chunks once, deltas
  joined; `on_turn_end`, `on_messages`,
  `on_message_updated`, `on_clear`, `on_status`, `on_session`, `on_runner`, `on_recovering`,
  `on_mcp_servers`);
- keeps the status every panel shows (`think_nb.panel.protocol.STATUSES`: submitted, pending (a turn
  waits out its debounce window), streaming, recovering (a dead kernel's
  turns are being continued), awaiting-approval, awaiting-client-tool, paused, error, ready); a
  turn that ends while another streams never sets `ready`; a turn started by any entry point
  (panel, `%%think`, `agent.send`, `submit_messages`) is `submitted` from the call on;
- keeps the status detail, what the current turn (the one running, which Stop cancels:
  `current`) waits for (`detail`), with "N queued" beside it (`message_concurrency` queue): what its model path reported
  (`think_nb.models.progress`: "loading litellm…", "loading the local model…", "thinking —
  choosing a tool…"), else what it noted (`on_note`: "compacted to fit"); a turn is
  `streaming` only once it sent something a person sees (text,
  reasoning, a tool call: not the `start`/`start-step` markers, `SILENT_CHUNKS`) and is not
  waiting for its model again; before that it is `submitted`, with the wait as the detail;
- answers the resume handshake's questions: turns streaming (`active`), accepted but not
  streaming (`pending`), the last terminal outcome (`terminal`), recovery (`recovering`);
- keeps the agent's memory state for the context tab (`session_state()`);
- names the view that runs client tools (`runner`): the view that most recently attached
  (sent `stream_resume_request`) or sent a message, so each client call runs once;
- keeps what the panels show beside the transcript (`annotations()`): each reply's
  finish reason (a reply cut at `length` offers Continue), the calls `before_tool_call`
  blocked or substituted, the versions of regenerated replies, the running request ids
  (Stop works for a turn started from a cell too) and the user messages of queued turns.

It records nothing: the engine records every turn's stream (`think_nb.turns.recorder`) and a
view that opens mid-stream replays it through `PanelSource.replay_stream(request_id)`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from think_nb.panel import protocol
from think_nb.panel.status import StatusFacts, current_turn, status_of
from think_nb.turns.broadcast import EVENTS, Listeners

if TYPE_CHECKING:
    from think_nb.session.builder import Session

__all__ = ["PANEL_EVENTS", "PanelSource", "ViewHub"]

PANEL_EVENTS = EVENTS | {"on_annotations", "on_status", "on_runner"}
SILENT_CHUNKS = frozenset({"start", "start-step", "finish-step", "message-metadata", "finish", "abort"})
"""Chunks that show a person nothing streaming: a turn that sent only these is not `streaming` yet
(the embedded model's first step with tools is one non-streamed call of many seconds), nor is one
stopped or ended before anything streamed (its `abort` or `finish` goes from `submitted` to `ready`)."""
"""What the hub tells its panels: the agent's events plus the annotations, the status and the runner."""


class PanelSource(Protocol):
    """What the panels' hub asks of an agent: its branch and turns, what streams and the replay of a
    stream, pending turns, the last terminal state, memory and MCP state for the context tab."""

    @property
    def messages(self) -> list[dict]: ...
    @property
    def is_running(self) -> bool: ...
    @property
    def recovering(self) -> bool: ...
    @property
    def session(self) -> Session: ...
    @property
    def session_configured(self) -> Session | None: ...
    def subscribe(self, listener: Any) -> Callable[[], None]: ...
    def streaming_turns(self) -> list[str]: ...
    def replay_stream(self, request_id: str) -> tuple[list[dict], bool, bool] | None: ...
    def pending_turns(self) -> list[str]: ...
    def queued_messages(self) -> list[dict]: ...
    def debouncing_turns(self) -> list[str]: ...
    def last_terminal(self) -> tuple[str, str] | None: ...
    def get_branches(self, message_id: str) -> list[dict]: ...
    def branch_revisions(self, message_ids: list[str]) -> dict[str, tuple]: ...
    def client_tool_names(self) -> set[str]: ...
    def mcp_state(self) -> list[dict]: ...
    def list_sessions(self) -> list[dict]: ...
    def switch_session(self, ref: str) -> str: ...
    def clear(self) -> None: ...

_log = logging.getLogger(__name__)
_REGISTRY: weakref.WeakKeyDictionary[Any, ViewHub] = weakref.WeakKeyDictionary()


class ViewHub:
    """Per-agent fan-out and status for its panels (see the module docstring)."""

    @classmethod
    def for_agent(cls, agent: PanelSource) -> ViewHub:
        """The agent's hub, created (and subscribed) on first use."""
        hub = _REGISTRY.get(agent)
        if hub is None:
            hub = _REGISTRY[agent] = cls(agent)
        return hub

    def __init__(self, agent: PanelSource) -> None:
        self._agent = agent
        self._streaming: set[str] = set()
        self._shown: set[str] = set()  # turns that sent something a person sees (text, a tool call, ...)
        self._decisions: dict[str, dict] = {}  # toolCallId -> {action, reason} (data-tool-decision)
        self._submitted: set[str] = set()
        self._panel_tools: set[str] = set()
        self._listeners = Listeners(PANEL_EVENTS)  # the panels (views) of this agent
        self.error = ""
        self.runner = ""
        self.status = "ready"
        self.detail = ""  # what the current turn waits for ("" when nothing is said)
        self.current: str | None = None  # the turn the status describes and Stop cancels (current_turn)
        self._waits: dict[str, str] = {}  # request id -> what its model path waits for (on_waiting)
        self._branch_memo: dict[str, tuple[tuple, dict | None]] = {}  # reply id -> (group revision, its entry)
        self._notes: dict[str, str] = {}  # request id -> what its detail keeps saying until it ends (on_note)
        self.paused_at = ""  # the hook a step-mode turn waits at ("" when not paused)
        self._refresh_pending = False
        self._running: list[str] = []  # request ids started by any entry point, not ended yet
        self._message_of: dict[str, str] = {}  # request id -> its assistant message id (`start` chunk)
        self._finish: dict[str, str] = {}  # assistant message id -> finish reason of its turn
        self._unsubscribe = agent.subscribe(self)

    # -- panels -------------------------------------------------------------------------------
    def subscribe(self, listener: Any) -> Callable[[], None]:
        """Attach a panel; returns `unsubscribe()`."""
        return self._listeners.add(listener)

    def _fan_out(self, method: str, *args: Any) -> None:
        self._listeners.notify(method, *args)  # one broken panel never breaks the others

    def set_runner(self, client_id: str) -> None:
        """Make view `client_id` the one that runs client tools."""
        if client_id and client_id != self.runner:
            self.runner = client_id
            self._fan_out("on_runner", client_id)

    def note_submitted(self, request_id: str, panel_tools: list[dict] | None = None) -> None:
        """A panel sent request `request_id` (status `submitted` until it streams or ends)."""
        self._submitted.add(request_id)
        self._panel_tools = {t["name"] for t in panel_tools or [] if isinstance(t, dict) and "name" in t}
        self.error = ""
        self.refresh_status()

    def forget_submitted(self, request_id: str) -> None:
        """Request `request_id` will not stream under its own id (refused)."""
        self._submitted.discard(request_id)
        self.refresh_status()

    def fail(self, error: str) -> None:
        """Record a panel-side failure (e.g. the agent refused a request)."""
        self.error = error
        self.refresh_status()

    def clear(self) -> None:
        """Clear the agent's transcript (every panel hears `on_clear` from the agent)."""
        self._agent.clear()

    def switch_session(self, ref: str) -> None:
        """Make session `ref` active (a panel asked). A refusal (unknown session, a turn running) is
        said at once where the user picked: a `session` frame with the active session (the select
        snaps back) and the reason as its `error` (the context tab's note), and as the panel error."""
        try:
            self._agent.switch_session(ref)
        except Exception as exc:  # noqa: BLE001 - unknown session, or a turn is running
            _log.warning("session switch to %r refused: %s", ref, exc)
            self.fail(str(exc))
            frame = self.session_state()
            if frame:
                self._fan_out("on_session", {**frame, "error": str(exc)})

    # -- resume -------------------------------------------------------------------------------
    def active(self) -> list[str]:
        """Request ids of the turns streaming now, oldest first."""
        return self._agent.streaming_turns()

    def replay(self, request_id: str) -> tuple[list[dict], bool, bool] | None:
        """`(chunks so far, continuation, finished)` of a turn, or None if unknown."""
        return self._agent.replay_stream(request_id)

    # -- what the panels show beside the transcript ----------------------------------------------
    def annotations(self) -> dict:
        """`{finish: {messageId: reason}, tools: {toolCallId: {action, reason}}, branches:
        {messageId: {index, count, ids}}, active: [request ids], current: request id | None,
        queued: [{requestId, message}]}` for
        the current transcript; `queued` holds the user messages of turns accepted and not started yet
        (a `%%think` cell sent while a turn runs), in run order, which every panel shows at once after
        the running turn, marked queued, until their turn stores them; `current` is the turn the status
        line describes, which Stop cancels (`think_nb.panel.status.current_turn`)."""
        messages = self._agent.messages[-200:]
        ids = {m.get("id") for m in messages}
        calls = {p.get("toolCallId") for m in messages for p in m.get("parts", []) if p.get("toolCallId")}
        decisions = dict(self._decisions)  # seen in this kernel's streams, then what the messages store
        decisions |= {p["data"]["toolCallId"]: {"action": p["data"].get("action"), "reason": p["data"].get("reason")}
                     for m in messages for p in m.get("parts", [])
                     if p.get("type") == "data-tool-decision" and isinstance(p.get("data"), dict)
                     and p["data"].get("toolCallId")}
        return {
            "finish": {k: v for k, v in self._finish.items() if k in ids},
            "tools": {k: dict(v) for k, v in decisions.items() if k in calls},
            "branches": self._branches(messages[-100:]),
            "active": self.running(),
            "current": self.current,
            "queued": self._queued(),
        }

    def _branches(self, messages: list[dict]) -> dict[str, dict]:
        """`{messageId: {index, count, ids, compare?}}` for the replies of `messages` that have other
        versions. Remembered per message and the revision of its sibling group (one query for all:
        `branch_revisions`), so a sync of an unchanged transcript reads no branch and compares
        nothing; a reply whose group changed (a new version, a removed or rewritten one) is read
        again."""
        replies = [m for m in messages
                   if m.get("role") == "assistant" and not (m.get("metadata") or {}).get("continuation")]
        try:
            revisions = self._agent.branch_revisions([m["id"] for m in replies])
        except Exception:  # noqa: BLE001 - what the panels show must not break a turn
            _log.exception("branch_revisions() failed")
            return {}
        remembered, self._branch_memo = self._branch_memo, {}
        branches: dict[str, dict] = {}
        for m in replies:
            revision = revisions.get(m["id"])  # None: not stored (no branches)
            if revision is None or revision[0] < 2:
                continue
            hit = remembered.get(m["id"])
            entry = hit[1] if hit is not None and hit[0] == revision else self._branch_entry(m)
            self._branch_memo[m["id"]] = (revision, entry)  # only the window's replies are kept
            if entry is not None:
                branches[m["id"]] = entry
        return branches

    def _branch_entry(self, message: dict) -> dict | None:
        """`{index, count, ids, compare?}` of one reply read now, or None when it has no other version."""
        try:
            siblings = [s.get("id") for s in self._agent.get_branches(message["id"])]
        except Exception:  # noqa: BLE001 - an unsaved message has no branches
            return None
        if len(siblings) < 2 or message["id"] not in siblings:
            return None
        entry: dict = {"index": siblings.index(message["id"]), "count": len(siblings), "ids": siblings}
        compared = self._compare_fork(message, siblings)
        if compared is not None:
            entry["compare"] = compared
        return entry

    def _compare_fork(self, message: dict, siblings: list) -> dict | None:
        """For a forked reply (`agent.fork`) whose original is a sibling: `{of, label, diff: [[op,
        words]], rows: [{aspect, a, b}]}` (the text's word diff and the aspects that differ, as
        text; `think_nb.compare`), which the panel's versions bar shows under "compare"; else None."""
        fork = (message.get("metadata") or {}).get("fork")
        if not isinstance(fork, dict):
            return None
        of = fork.get("of")
        if not isinstance(of, str) or of not in siblings:
            return None
        try:
            from think_nb.compare import compare, display

            comparison = compare(self._agent, of, message["id"])  # the agent's runtime holds the store
        except Exception:  # noqa: BLE001 - what the panels show must not break a turn
            _log.exception("compare(%r, %r) failed", of, message.get("id"))
            return None
        rows = [{"aspect": r["aspect"], "a": display(r["a"]), "b": display(r["b"])}
                for r in comparison.rows if not r["same"] and r["aspect"] not in ("text", "fork", "duration_ms")]
        return {"of": of, "label": fork.get("label"), "diff": [list(d) for d in comparison.word_diff], "rows": rows}

    def _queued(self) -> list[dict]:
        try:
            return self._agent.queued_messages()
        except Exception:  # noqa: BLE001 - what the panels show must not break a turn
            _log.exception("queued_messages() failed")
            return []

    def running(self) -> list[str]:
        """Request ids of the turns running or waiting to run, oldest first (Stop cancels `current`)."""
        out = [r for r in self._running if r]
        out += [r for r in [*self._submitted, *self._streaming] if r not in out]
        return out
    def pending(self) -> list[str]:
        """Request ids of turns accepted but not streaming yet."""
        return self._agent.pending_turns()

    def terminal(self) -> tuple[str, str] | None:
        """`(request_id, status)` of the last turn when it ended in error or was interrupted."""
        return self._agent.last_terminal()

    def recovering(self) -> bool:
        return self._agent.recovering

    # -- agent listener -----------------------------------------------------------------------
    def on_submitted(self, request_id: str, future: Any = None) -> None:
        """A turn was started by any entry point (panel, `%%think`, `agent.send`, ...)."""
        if request_id not in self._running:
            self._running.append(request_id)
        if future is not None and hasattr(future, "add_done_callback"):
            future.add_done_callback(lambda _f: self._ended(request_id))
        self._refresh_now()  # `submitted` now, before the turn's task first runs
        self._fan_out("on_annotations")

    def on_waiting(self, request_id: str, what: str | None) -> None:
        """Turn `request_id` waits for `what` before its model answers (None: it stopped waiting)."""
        if what:
            self._waits[request_id] = what
        else:
            self._waits.pop(request_id, None)
        self._refresh_now()

    def on_note(self, request_id: str, note: str) -> None:
        """Turn `request_id` did something its status detail says until it ends ("compacted to fit")."""
        self._notes[request_id] = note
        self._refresh_now()

    def _ended(self, request_id: str) -> None:
        self._waits.pop(request_id, None)
        self._notes.pop(request_id, None)
        if request_id in self._running:
            self._running.remove(request_id)
            self.refresh_status()
            self._fan_out("on_annotations")

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        self.on_chunks(request_id, [chunk], continuation)

    def on_chunks(self, request_id: str, chunks: list[dict], continuation: bool) -> None:
        """A recorded batch of a turn's chunks (deltas joined): the status facts it changes, then
        every panel gets it, once."""
        first = request_id not in self._streaming
        if first:
            self._streaming.add(request_id)
            self._submitted.discard(request_id)
            self.error = ""
        shown = False
        decided = False
        for chunk in chunks:
            kind = chunk.get("type")
            if kind not in SILENT_CHUNKS and request_id not in self._shown:
                self._shown.add(request_id)  # `streaming` from now (not at the `start` marker, which shows nothing)
                shown = True
            if kind == "start" and chunk.get("messageId"):
                self._message_of[request_id] = chunk["messageId"]
            elif kind == "finish" and request_id in self._message_of:
                self._finish[self._message_of.pop(request_id)] = str(chunk.get("finishReason") or "stop")
                while len(self._finish) > 1000:
                    del self._finish[next(iter(self._finish))]
            elif kind == "data-tool-decision" and isinstance(chunk.get("data"), dict):
                self._decisions[str(chunk["data"].get("toolCallId"))] = {
                    "action": chunk["data"].get("action"), "reason": chunk["data"].get("reason")}
                while len(self._decisions) > 1000:
                    del self._decisions[next(iter(self._decisions))]
                decided = True
        self._listeners.notify_chunks(request_id, chunks, chunks, continuation)  # a panel: on_chunks, once
        if decided:
            self._fan_out("on_annotations")
        if shown:
            self._refresh_now()  # at once: a reply that arrives whole still shows `streaming`
        elif first:
            self.refresh_status()

    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        self._waits.pop(request_id, None)
        self._streaming.discard(request_id)
        self._shown.discard(request_id)
        self._submitted.discard(request_id)
        if request_id in self._running:
            self._running.remove(request_id)
        self._message_of.pop(request_id, None)
        if status == "error":
            self.error = error or "The turn failed."
        elif status in ("completed", "aborted") and not self._streaming:
            self.error = ""
        self._fan_out("on_turn_end", request_id, status, error)
        self.refresh_status()
        try:
            self._refresh_session()
        except Exception:  # noqa: BLE001 - memory display must not break the turn's end
            _log.exception("session refresh failed")

    def on_messages(self, messages: list[dict]) -> None:
        self._fan_out("on_messages", messages)
        self.refresh_status()

    def on_message_updated(self, message: dict) -> None:
        self._fan_out("on_message_updated", message)
        self.refresh_status()

    def on_clear(self) -> None:
        self._waits.clear()
        self._submitted.clear()
        self._streaming.clear()
        self._shown.clear()
        self._finish.clear()
        self.error = ""
        self._fan_out("on_clear")
        self.refresh_status()
        self._refresh_session()

    def on_recovering(self, recovering: bool, request_id: str) -> None:
        """Recovery of a dead kernel's turns started or ended: tell every panel."""
        self._fan_out("on_recovering", recovering, request_id)
        self.refresh_status()

    def on_session(self, state: dict) -> None:
        """The agent's memory changed (`Session.emit_status`): tell every panel."""
        self._fan_out("on_session", self._session_frame(state))

    def on_mcp_servers(self, servers: list[dict]) -> None:
        """An MCP server was added, removed or changed state: tell every panel."""
        self._fan_out("on_mcp_servers", protocol.mcp_servers_frame(servers))

    def mcp_frame(self) -> protocol.McpServersFrame:
        """The `mcp_servers` frame of the agent now (a view that attaches gets it)."""
        return protocol.mcp_servers_frame(self._agent.mcp_state())

    def on_paused(self, request_id: str, hook: str | None) -> None:
        """A step-mode turn paused before `hook` (None: it resumed)."""
        self.paused_at = hook or ""
        self._refresh_now()
        self._fan_out("on_status", self.status)

    # -- memory (context tab) -----------------------------------------------------------------
    def session_state(self) -> dict:
        """The `session` frame of the agent now ({} when the agent has no blocks in use)."""
        try:
            session = self._agent.session
            if not session.has_blocks and "litellm" not in sys.modules:
                return {}  # counting would import litellm (seconds) just to open a plain chat
            return self._session_frame(session.status())
        except Exception:  # noqa: BLE001 - providers are user code; the chat must still open
            _log.exception("Session.status() failed")
            return {}

    def _session_frame(self, state: dict) -> dict:
        listed = [protocol.SessionInfo(id=s["id"], name=s["name"], active=s["active"])
                  for s in self._agent.list_sessions()]
        return dict(protocol.session_frame(state, listed))

    def _refresh_session(self) -> None:
        """After a turn: the token estimate moved; send it if the agent has a Session in use."""
        session = self._agent.session_configured
        if session is not None and self._listeners:
            self.on_session(session.status())

    # -- status -------------------------------------------------------------------------------
    def refresh_status(self) -> None:
        """Recompute the shared status; tell the panels if it changed.

        Inside a running loop this happens on the next iteration, once: an approval or a
        tool result starts its continuation turn right after telling the listeners, and
        the status must go on to `submitted`, not flicker through `ready`.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._refresh_now()
            return
        if not self._refresh_pending:
            self._refresh_pending = True
            loop.call_soon(self._refresh_now)

    def _refresh_now(self) -> None:
        self._refresh_pending = False
        if self._running and not self._agent.is_running:
            self._running.clear()  # ended without telling us (skipped before admission)
        facts = self._facts()
        status, detail = status_of(facts)
        if status == "ready":  # only then can a waiting tool call matter (finding it reads the tools: user code)
            status, detail = status_of(dataclasses.replace(facts, awaiting=self._waiting_for_user()))
        current = current_turn(facts)
        if status != self.status or detail != self.detail or current != self.current:
            self.status, self.detail, self.current = status, detail, current
            self._fan_out("on_status", status)

    def _facts(self) -> StatusFacts:
        """What the agent is doing now, for `think_nb.panel.status.status_of`."""
        agent = self._agent
        running = agent.is_running
        return StatusFacts(
            paused_at=self.paused_at, streaming=frozenset(self._shown), waiting=dict(self._waits),
            notes=dict(self._notes),
            recovering=agent.recovering, submitted=frozenset(self._submitted), running=tuple(self.running()),
            agent_running=running, debouncing=bool(running and agent.debouncing_turns()),
            queue=(*agent.streaming_turns(), *agent.pending_turns()), error=self.error)

    def client_tool_names(self) -> set[str]:
        """Names of the tools the panel runs (Python-declared and panel-registered)."""
        try:
            names = self._agent.client_tool_names()
        except Exception:  # noqa: BLE001 - specs come from user code (get_tools)
            _log.exception("client_tool_names() failed")
            names = set()
        return names | self._panel_tools

    def _waiting_for_user(self) -> str | None:
        messages = self._agent.messages
        states = [(p.get("state"), p.get("type", "")) for m in messages[-3:] for p in m.get("parts", [])]
        if any(state == "approval-requested" for state, _ in states):
            return "awaiting-approval"
        client = {f"tool-{n}" for n in self.client_tool_names()}
        if any(state == "input-available" and kind in client for state, kind in states):
            return "awaiting-client-tool"
        return None
