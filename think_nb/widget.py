"""ChatPanel: the anywidget chat panel of one agent, and the kernel side of its frames.

The panel subscribes to an agent (``agent.subscribe(listener)``) and turns what the agent
streams into frames for the front end (``js/src/widget.ts``):

- every UIMessageChunk goes through a :class:`_ChunkBatcher`, which coalesces deltas and
  sends at most one ``use_chat_response`` frame per ``FLUSH_INTERVAL_S`` (platform-facts
  §7: Jupyter Server drops IOPub traffic above 1000 msg/s, so never a frame per delta);
- the authoritative transcript is the synced ``messages`` trait, replaced whenever the
  agent reports a change, so a re-displayed or reloaded view rebuilds from the kernel;
- frames from the panel (send, stop, clear, resume) are parsed by
  :mod:`think_nb.protocol` and dispatched to the agent; malformed ones are logged and
  ignored, never raised.

It is not the agent: it never runs a turn or stores a message itself.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import anywidget
import traitlets

from think_nb import protocol
from think_nb.protocol import UIMessage, UIMessageChunk

__all__ = ["FLUSH_INTERVAL_S", "AgentLike", "ChatPanel"]

_log = logging.getLogger(__name__)

ESM_PATH = Path(__file__).parent / "static" / "widget.js"
_ESM_STUB = "export default {};"  # stands in at import time when the bundle is not built
FLUSH_INTERVAL_S = 0.04
"""Longest time a chunk waits in the kernel before it is sent (≤ 25 frames/s per panel)."""

# chunk type -> (key that must match, key whose strings concatenate)
_MERGEABLE = {
    "text-delta": ("id", "delta"),
    "reasoning-delta": ("id", "delta"),
    "tool-input-delta": ("toolCallId", "inputTextDelta"),
}
_STATUS_BY_OUTCOME = {"completed": "ready", "aborted": "ready", "error": "error"}


class AgentLike(Protocol):
    """What ChatPanel needs from an agent (``think_nb.Think`` implements it)."""

    name: str
    db_path: Path

    @property
    def messages(self) -> list[UIMessage]: ...  # noqa: D102
    def subscribe(self, listener: Any) -> Callable[[], None]: ...  # noqa: D102
    def submit(self, message: UIMessage, request_id: str | None = None) -> Any: ...  # noqa: D102
    def abort_request(self, request_id: str) -> None: ...  # noqa: D102
    def clear_messages(self) -> None: ...  # noqa: D102


def _merge_into(chunks: list[UIMessageChunk], chunk: UIMessageChunk) -> None:
    """Append ``chunk``, concatenating it into the last one if both are mergeable deltas.

    Never mutates a chunk dict: a merge builds a new one (the same dict may sit in two
    lists, the pending batch and the turn's replay log).
    """
    keys = _MERGEABLE.get(chunk.get("type", ""))
    last = chunks[-1] if chunks else None
    if keys and last is not None and last.get("type") == chunk["type"]:
        match, text = keys
        rest = {k: v for k, v in chunk.items() if k != text}
        if rest == {k: v for k, v in last.items() if k != text} and match in rest:
            chunks[-1] = {**last, text: last.get(text, "") + chunk.get(text, "")}
            return
    chunks.append(chunk)


class _Turn:
    """One in-flight turn: its continuation flag and every chunk so far (merged)."""

    def __init__(self, continuation: bool) -> None:
        self.continuation = continuation
        self.chunks: list[UIMessageChunk] = []


class _ChunkBatcher:
    """Coalesces UIMessageChunks into ``use_chat_response`` frames.

    Chunks wait in a pending batch; consecutive deltas of the same part are merged. The
    batch is sent when ``interval`` seconds have passed since the last send: by a
    ``call_later`` timer when an asyncio loop runs in the calling thread, else on the
    next chunk that arrives late enough, and always at turn end. Thread-safe.
    """

    def __init__(self, send: Callable[[dict[str, Any]], None], interval: float) -> None:
        self._send = send
        self._interval = interval
        self._lock = threading.RLock()
        self._pending: list[UIMessageChunk] = []
        self._pending_key: tuple[str, bool] | None = None
        self._turns: dict[str, _Turn] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._last_send = float("-inf")  # a quiet panel sends its first chunk at once

    def add(self, request_id: str, chunk: UIMessageChunk, continuation: bool) -> None:
        """Queue one chunk of turn ``request_id``."""
        with self._lock:
            key = (request_id, continuation)
            if self._pending and self._pending_key != key:
                self.flush()
            self._pending_key = key
            _merge_into(self._pending, chunk)
            turn = self._turns.setdefault(request_id, _Turn(continuation))
            _merge_into(turn.chunks, chunk)
            self._schedule()

    def end(self, request_id: str, *, error: bool) -> None:
        """Send what is pending for the turn plus its final ``done`` frame; forget it."""
        with self._lock:
            if self._pending_key is not None and self._pending_key[0] != request_id:
                self.flush()
            chunks, key = self._take()
            turn = self._turns.pop(request_id, None)
            continuation = key[1] if key else bool(turn and turn.continuation)
            self._emit(protocol.use_chat_response(
                request_id, chunks, done=True, error=error, continuation=continuation
            ))

    def flush(self) -> None:
        """Send the pending batch now, if there is one."""
        with self._lock:
            chunks, key = self._take()
            if key is not None and chunks:
                self._emit(protocol.use_chat_response(key[0], chunks, continuation=key[1]))

    def in_flight(self) -> list[tuple[str, _Turn]]:
        """The turns that have streamed chunks and not ended, oldest first."""
        with self._lock:
            return list(self._turns.items())

    def close(self) -> None:
        """Cancel the timer; pending chunks are dropped."""
        with self._lock:
            self._cancel_timer()
            self._pending, self._pending_key = [], None

    def _take(self) -> tuple[list[UIMessageChunk], tuple[str, bool] | None]:
        self._cancel_timer()
        chunks, key = self._pending, self._pending_key
        self._pending, self._pending_key = [], None
        return chunks, key

    def _emit(self, frame: dict[str, Any]) -> None:
        self._last_send = time.monotonic()
        self._send(frame)

    def _schedule(self) -> None:
        if self._timer is not None and not self._timer_loop.is_closed():  # type: ignore[union-attr]
            return
        delay = max(0.0, self._last_send + self._interval - time.monotonic())
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            if delay == 0.0:
                self.flush()
            return
        self._timer, self._timer_loop = loop.call_later(delay, self.flush), loop

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._timer_loop = None


class _Listener:
    """The object the panel hands to ``agent.subscribe`` (the listener interface)."""

    def __init__(self, panel: ChatPanel) -> None:
        self._panel = panel

    def on_chunk(self, request_id: str, chunk: UIMessageChunk, continuation: bool) -> None:
        """Every UIMessageChunk of every turn, in order."""
        self._panel._on_chunk(request_id, chunk, continuation)

    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        """A turn ended (completed | error | aborted), after its message was persisted."""
        self._panel._on_turn_end(request_id, status, error)

    def on_messages(self, messages: list[UIMessage]) -> None:
        """The authoritative transcript changed."""
        self._panel._set_transcript(messages)


class ChatPanel(anywidget.AnyWidget):
    """The chat panel of one agent; display it in a notebook cell.

    Args:
        agent: the agent to show and drive (see :class:`AgentLike` for what is used).

    Raises:
        FileNotFoundError: the front end bundle ``think_nb/static/widget.js`` was not
            built; the message names the command that builds it.

    Synced traits: ``uid`` (uuid hex, keys the front end's per-model state),
    ``agent_name``, ``db_path``, ``status`` (ready | submitted | streaming | error),
    ``error`` (text of the latest turn error, "" if none) and ``messages`` (the
    transcript: a list of UIMessage dicts, replaced, never mutated in place).
    """

    _esm = ESM_PATH if ESM_PATH.is_file() else _ESM_STUB

    uid = traitlets.Unicode().tag(sync=True)
    agent_name = traitlets.Unicode().tag(sync=True)
    db_path = traitlets.Unicode().tag(sync=True)
    status = traitlets.Unicode("ready").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    messages = traitlets.List().tag(sync=True)

    def __init__(self, agent: AgentLike, **kwargs: Any) -> None:
        if not ESM_PATH.is_file():
            raise FileNotFoundError(
                f"The chat panel's front end is not built: {ESM_PATH} is missing. "
                "Build it with `cd js && npm install && npm run build` in the think_nb "
                "repository, or reinstall with `pip install -e .`."
            )
        if type(self)._esm == _ESM_STUB:
            self._esm = ESM_PATH.read_text()  # built after this module was imported
        super().__init__(
            uid=uuid.uuid4().hex,
            agent_name=str(agent.name),
            db_path=str(agent.db_path),
            messages=copy.deepcopy(list(agent.messages)),
            **kwargs,
        )
        self._agent = agent
        self._tasks: set[Any] = set()
        self._batcher = _ChunkBatcher(self._send_frame, FLUSH_INTERVAL_S)
        self.on_msg(self._on_panel_msg)
        self._unsubscribe: Callable[[], None] | None = agent.subscribe(_Listener(self))

    def close(self) -> None:
        """Detach from the agent, then close the widget and all its views."""
        unsubscribe = getattr(self, "_unsubscribe", None)  # None if __init__ failed early
        if unsubscribe is not None:
            self._unsubscribe = None
            unsubscribe()
            self._batcher.close()
        super().close()

    # --- agent -> panel ---------------------------------------------------------------

    def _send_frame(self, frame: dict[str, Any]) -> None:
        self.send(frame)

    def _on_chunk(self, request_id: str, chunk: UIMessageChunk, continuation: bool) -> None:
        if self.status != "streaming":
            self.status = "streaming"
        self._batcher.add(request_id, chunk, continuation)

    def _on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        failed = status == "error"
        self._batcher.end(request_id, error=failed)
        if not self._batcher.in_flight():
            self.status = _STATUS_BY_OUTCOME.get(status, "ready")
        if failed:
            self.error = error or "The turn failed."
        self._set_transcript(self._agent.messages)

    def _set_transcript(self, messages: list[UIMessage]) -> None:
        # A deep copy: the agent may mutate its list later, and traitlets only syncs a
        # value that compares unequal to the previous one.
        self.messages = copy.deepcopy(list(messages))

    # --- panel -> agent ---------------------------------------------------------------

    def _on_panel_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        # ipywidgets swallows handler exceptions: catch and log them ourselves.
        try:
            self._dispatch(content)
        except Exception:
            _log.exception("panel frame %.200r failed", content)

    def _dispatch(self, content: Any) -> None:
        frame = protocol.parse_frame(content, logger=_log)
        if frame is None:
            return
        kind = frame["type"]
        if kind == protocol.USE_CHAT_REQUEST:
            self._handle_chat_request(frame)  # type: ignore[arg-type]
        elif kind == protocol.CHAT_REQUEST_CANCEL:
            self._agent.abort_request(frame["id"])  # type: ignore[typeddict-item]
        elif kind == protocol.CHAT_CLEAR:
            self._agent.clear_messages()
            self.error = ""
            self._send_frame(protocol.chat_clear())
        elif kind == protocol.STREAM_RESUME_REQUEST:
            self._handle_resume_request()
        else:
            _log.warning("ignored %r frame: the kernel does not accept it", kind)

    def _handle_chat_request(self, frame: protocol.UseChatRequest) -> None:
        request_id = frame["id"]
        if frame["trigger"] != protocol.SUBMIT_MESSAGE:
            _log.warning("ignored %r request %s: not supported yet", frame["trigger"], request_id)
            self._send_frame(protocol.use_chat_response(request_id, [], done=True))
            return
        self.error = ""
        if self.status != "streaming":
            self.status = "submitted"
        try:
            task = self._agent.submit(frame["messages"][-1], request_id=request_id)
        except Exception as exc:  # the agent refused: tell the panel, keep the kernel alive
            _log.exception("agent.submit failed for request %s", request_id)
            self._send_frame(protocol.use_chat_response(
                request_id, [{"type": "error", "errorText": str(exc)}], done=True, error=True
            ))
            self.status, self.error = "error", str(exc)
            return
        if task is not None and hasattr(task, "add_done_callback"):
            self._tasks.add(task)  # a strong reference until the turn ends
            task.add_done_callback(self._tasks.discard)

    def _handle_resume_request(self) -> None:
        self._batcher.flush()
        turns = self._batcher.in_flight()
        if not turns:
            self._send_frame(protocol.stream_resume_none())
        for request_id, turn in turns:
            self._send_frame(protocol.stream_resuming(request_id))
            self._send_frame(protocol.use_chat_response(
                request_id, list(turn.chunks), continuation=turn.continuation, replay=True
            ))
