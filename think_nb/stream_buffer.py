"""The stream buffer of one agent: what every chat panel of that agent shares.

One :class:`StreamBuffer` per agent (``StreamBuffer.for_agent(agent)``) is the only panel-side
listener on the agent (``agent.subscribe``). It

- records the chunks of every in-flight turn in SQLite (Think's resumable stream:
  ``stream_metadata`` + ``stream_chunks``, segments of coalesced chunks, flushed at once for
  the first chunk and for settled tool chunks, otherwise every ``SEGMENT_DELTAS`` deltas or
  ``SEGMENT_SECONDS``), so a view created mid-stream replays the turn so far;
- fans every event out to its panels (``on_chunk``, ``on_turn_end``, ``on_messages``,
  ``on_message_updated``, ``on_clear``, ``on_status``, ``on_session``), recording before
  fanning out, so a replay always holds everything a panel has been told;
- keeps the agent's memory state for the context tab (:meth:`session_state`: the
  ``session`` frame, refreshed on ``on_session`` from ``Session.emit_status`` and after
  every turn);
- keeps the status every panel shows (submitted, streaming, awaiting-approval,
  awaiting-client-tool, ready, error): a turn that ends while another streams never sets
  ``ready``;
- names the view that runs client tools (:attr:`runner`): the view that most recently
  attached (sent ``stream_resume_request``) or sent a message. Views of other pages and
  tabs leave client tool calls alone, so each call runs once.

Buffers of finished turns are kept ``KEEP_FINISHED_S`` (a view that acks late still gets
its replay); rows a dead kernel left ``streaming`` are marked ``interrupted`` on open.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from think_nb.batcher import MERGEABLE, merge_chunk

__all__ = ["STATUSES", "StreamBuffer", "merge_chunk"]

_log = logging.getLogger(__name__)

STATUSES = ("ready", "submitted", "streaming", "awaiting-approval", "awaiting-client-tool", "paused", "error")
SEGMENT_DELTAS = 50
SEGMENT_SECONDS = 0.25
KEEP_FINISHED_S = 600.0
_PROCESS = uuid.uuid4().hex  # owner of the rows this kernel writes

# chunk type -> (key that must match, key whose strings concatenate)
_FLUSH_AT_ONCE = {
    "tool-input-available", "tool-approval-request", "tool-output-available", "tool-output-error",
    "tool-output-denied", "tool-input-error", "error", "finish",
}
_REGISTRY: weakref.WeakKeyDictionary[Any, StreamBuffer] = weakref.WeakKeyDictionary()




class _Live:
    """An in-flight turn: its flag, unsaved segment and when it was last saved."""

    def __init__(self, continuation: bool) -> None:
        self.continuation = continuation
        self.unsaved: list[dict] = []
        self.deltas = 0
        self.saved_at = time.monotonic()


class StreamBuffer:
    """Per-agent recorder, fan-out and status (see the module docstring)."""

    @classmethod
    def for_agent(cls, agent: Any) -> StreamBuffer:
        """The agent's buffer, created (and subscribed) on first use."""
        buffer = _REGISTRY.get(agent)
        if buffer is None:
            buffer = _REGISTRY[agent] = cls(agent)
        return buffer

    def __init__(self, agent: Any) -> None:
        self._agent = agent
        store = getattr(agent, "_store", None)
        self._db = getattr(store, "db", None)
        self._key = str(getattr(store, "agent_key", None) or getattr(agent, "name", "agent"))
        self._live: dict[str, _Live] = {}
        self._memory: dict[str, tuple[list[dict], bool, str]] = {}  # used when the agent has no database
        self._submitted: set[str] = set()
        self._panel_tools: set[str] = set()
        self._listeners: list[Any] = []
        self.error = ""
        self.runner = ""
        self.status = "ready"
        self.paused_at = ""  # the hook a step-mode turn waits at ("" when not paused)
        self._refresh_pending = False
        self._open_db()
        self._unsubscribe = agent.subscribe(self)

    # -- panels ---------------------------------------------------------------------------
    def subscribe(self, listener: Any) -> Callable[[], None]:
        """Attach a panel; returns ``unsubscribe()``."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _fan_out(self, method: str, *args: Any) -> None:
        for listener in list(self._listeners):
            handler = getattr(listener, method, None)
            if handler is None:
                continue
            try:
                handler(*args)
            except Exception:  # noqa: BLE001 - one broken panel must not break the others
                _log.exception("panel %r failed in %s", listener, method)

    def set_runner(self, client_id: str) -> None:
        """Make view ``client_id`` the one that runs client tools."""
        if client_id and client_id != self.runner:
            self.runner = client_id
            self._fan_out("on_runner", client_id)

    def note_submitted(self, request_id: str, panel_tools: list[dict] | None = None) -> None:
        """A panel sent request ``request_id`` (status ``submitted`` until it streams or ends)."""
        self._submitted.add(request_id)
        self._panel_tools = {t["name"] for t in panel_tools or [] if isinstance(t, dict) and "name" in t}
        self.error = ""
        self.refresh_status()

    def forget_submitted(self, request_id: str) -> None:
        """Request ``request_id`` will not stream under its own id (refused, regenerate)."""
        self._submitted.discard(request_id)
        self.refresh_status()

    def fail(self, error: str) -> None:
        """Record a panel-side failure (e.g. the agent refused a request)."""
        self.error = error
        self.refresh_status()

    def clear(self) -> None:
        """Clear the agent's transcript and every buffer; tell every panel."""
        self._agent.clear_messages()
        self._submitted.clear()
        self.error = ""
        self._live.clear()
        self._memory.clear()
        if self._db is not None:
            with self._db.write() as c:
                c.execute("DELETE FROM stream_chunks WHERE agent_key = ?", (self._key,))
                c.execute("DELETE FROM stream_metadata WHERE agent_key = ?", (self._key,))
        self._fan_out("on_clear")
        self.refresh_status()
        self._refresh_session()

    # -- resume ---------------------------------------------------------------------------
    def active(self) -> list[str]:
        """Request ids of the turns streaming now, oldest first."""
        return list(self._live)

    def replay(self, request_id: str) -> tuple[list[dict], bool, bool] | None:
        """``(chunks so far, continuation, finished)`` of a turn from SQLite, or None if unknown."""
        live = self._live.get(request_id)
        if live is not None:
            self._save(request_id, live)
        if self._db is None:
            kept = self._memory.get(request_id)
            return (list(kept[0]), kept[1], kept[2] != "streaming") if kept else None
        meta = self._db.read("SELECT continuation, status FROM stream_metadata WHERE agent_key = ? AND "
                             "request_id = ?", (self._key, request_id))
        if not meta:
            return None
        chunks: list[dict] = []
        for (segment,) in self._db.read("SELECT chunks FROM stream_chunks WHERE agent_key = ? AND request_id = ? "
                                        "ORDER BY seq", (self._key, request_id)):
            for chunk in json.loads(segment):
                merge_chunk(chunks, chunk)
        return chunks, bool(meta[0][0]), meta[0][1] != "streaming"

    # -- agent listener -------------------------------------------------------------------
    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        """Record, then fan out, one chunk."""
        live = self._live.get(request_id)
        first = live is None
        if live is None:
            live = self._live[request_id] = _Live(continuation)
            self._submitted.discard(request_id)
            self.error = ""
            self._write_meta(request_id, continuation, "streaming")
        merge_chunk(live.unsaved, chunk)
        kind = chunk.get("type", "")
        live.deltas += kind in MERGEABLE
        if first or kind in _FLUSH_AT_ONCE or live.deltas >= SEGMENT_DELTAS or (
                time.monotonic() - live.saved_at >= SEGMENT_SECONDS):
            self._save(request_id, live)
        self._fan_out("on_chunk", request_id, chunk, continuation)
        if first:
            self.refresh_status()

    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        """Close the turn's buffer, fan out, and recompute the status."""
        live = self._live.pop(request_id, None)
        if live is not None:
            self._save(request_id, live)
            self._write_meta(request_id, live.continuation, status)
        self._submitted.discard(request_id)
        if status == "error":
            self.error = error or "The turn failed."
        elif status in ("completed", "aborted") and not self._live:
            self.error = ""
        self._fan_out("on_turn_end", request_id, status, error)
        self.refresh_status()
        try:
            self._refresh_session()
        except Exception:  # noqa: BLE001 - memory display must not break the turn's end
            _log.exception("session refresh failed")

    def on_messages(self, messages: list[dict]) -> None:
        """The transcript changed."""
        self._fan_out("on_messages", messages)
        self.refresh_status()

    def on_message_updated(self, message: dict) -> None:
        """A stored message changed (a tool result or approval was applied)."""
        self._fan_out("on_message_updated", message)
        self.refresh_status()

    def on_session(self, state: dict) -> None:
        """The agent's memory changed (``Session.emit_status``): tell every panel."""
        self._fan_out("on_session", self._session_frame(state))

    def session_state(self) -> dict:
        """The ``session`` frame of the agent now ({} when the agent has no Session)."""
        if getattr(self._agent, "configure_session", None) is None:
            return {}
        try:
            session = self._agent.session
            if not session.has_blocks and "litellm" not in sys.modules:
                return {}  # counting would import litellm (seconds) just to open a plain chat
            return self._session_frame(session.status())
        except Exception:  # noqa: BLE001 - providers are user code; the chat must still open
            _log.exception("Session.status() failed")
            return {}

    def switch_session(self, ref: str) -> None:
        """Make session ``ref`` active (a panel asked); a refusal shows as the panel error."""
        try:
            self._agent.switch_session(ref)
        except Exception as exc:  # noqa: BLE001 - unknown session, or a turn is running
            _log.warning("session switch to %r refused: %s", ref, exc)
            self.fail(str(exc))

    def _session_frame(self, state: dict) -> dict:
        from think_nb import protocol
        from think_nb.session import sessions

        try:
            listed = [{"id": s["id"], "name": s["name"], "active": s["active"]}
                      for s in sessions.list_sessions(self._agent)]
        except Exception:  # noqa: BLE001 - an agent without a session table
            listed = None
        return dict(protocol.session_frame(state, listed))

    def _refresh_session(self) -> None:
        """After a turn: the token estimate moved; send it if the agent has blocks in use."""
        session = getattr(self._agent, "_session", None)
        if session is not None and self._listeners:
            self.on_session(session.status())

    def on_paused(self, request_id: str, hook: str | None) -> None:
        """A step-mode turn paused before `hook` (None: it resumed)."""
        self.paused_at = hook or ""
        self._refresh_now()
        self._fan_out("on_status", self.status)

    # -- status ---------------------------------------------------------------------------
    def refresh_status(self) -> None:
        """Recompute the shared status; tell the panels if it changed.

        Inside a running loop this happens on the next iteration, once: an approval or a
        tool result starts its continuation turn right after telling the listeners, and
        the status must go on to ``submitted``, not flicker through ``ready``.
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
        status = self._compute_status()
        if status != self.status:
            self.status = status
            self._fan_out("on_status", status)

    def _compute_status(self) -> str:
        if self.paused_at:
            return "paused"
        if self._live:
            return "streaming"
        if self._submitted or getattr(self._agent, "is_running", False) is True:
            return "submitted"
        if self.error:
            return "error"
        return self._waiting_for_user() or "ready"

    def client_tool_names(self) -> set[str]:
        """Names of the tools the panel runs (Python-declared and panel-registered)."""
        names = set(getattr(self._agent, "_client_tool_names", ()) or ())
        specs = getattr(self._agent, "client_tool_specs", None)
        if callable(specs):
            try:
                names |= {s["name"] for s in specs()}
            except Exception:  # noqa: BLE001 - specs come from user code (get_tools)
                _log.exception("client_tool_specs() failed")
        return names | self._panel_tools

    def _waiting_for_user(self) -> str | None:
        messages = list(getattr(self._agent, "messages", []) or [])
        states = [(p.get("state"), p.get("type", "")) for m in messages[-3:] for p in m.get("parts", [])]
        if any(state == "approval-requested" for state, _ in states):
            return "awaiting-approval"
        client = {f"tool-{n}" for n in self.client_tool_names()}
        if any(state == "input-available" and kind in client for state, kind in states):
            return "awaiting-client-tool"
        return None

    # -- SQLite ---------------------------------------------------------------------------
    def _open_db(self) -> None:
        if self._db is None:
            return
        now = time.time()
        with self._db.write() as c:
            c.execute("UPDATE stream_metadata SET status = 'interrupted', updated_at = ? WHERE agent_key = ? AND "
                      "status = 'streaming' AND owner != ?", (now, self._key, _PROCESS))
        self._drop_old(now)

    def _drop_old(self, now: float) -> None:
        old = [r[0] for r in self._db.read(  # type: ignore[union-attr]
            "SELECT request_id FROM stream_metadata WHERE agent_key = ? AND status != 'streaming' AND "
            "updated_at < ?", (self._key, now - KEEP_FINISHED_S))]
        if old:
            with self._db.write() as c:  # type: ignore[union-attr]
                for rid in old:
                    c.execute("DELETE FROM stream_chunks WHERE agent_key = ? AND request_id = ?", (self._key, rid))
                    c.execute("DELETE FROM stream_metadata WHERE agent_key = ? AND request_id = ?", (self._key, rid))

    def _write_meta(self, request_id: str, continuation: bool, status: str) -> None:
        if self._db is None:
            chunks = self._memory.get(request_id, ([], continuation, status))[0]
            self._memory[request_id] = (chunks, continuation, status)
            return
        now = time.time()
        with self._db.write() as c:
            c.execute("INSERT INTO stream_metadata VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_key, request_id) "
                      "DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at",
                      (self._key, request_id, int(continuation), status, _PROCESS, now, now))
        if status != "streaming":
            self._drop_old(now)

    def _save(self, request_id: str, live: _Live) -> None:
        live.deltas, live.saved_at = 0, time.monotonic()
        if not live.unsaved:
            return
        segment, live.unsaved = live.unsaved, []
        if self._db is None:
            for chunk in segment:
                merge_chunk(self._memory[request_id][0], chunk)
        else:
            self._db.execute("INSERT INTO stream_chunks (agent_key, request_id, chunks, created_at) "
                             "VALUES (?, ?, ?, ?)", (self._key, request_id, json.dumps(segment), time.time()))
