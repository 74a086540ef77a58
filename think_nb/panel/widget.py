"""ChatPanel: the anywidget chat panel of one agent, and the kernel side of its frames.

The panel listens to its agent's :class:`~think_nb.panel.hub.ViewHub` (shared by every panel of
that agent: the multi-view broadcast and the status; the resume buffer is the engine's
recorded stream) and turns what the agent streams into frames for the front end
(``js/src/widget.ts``):

- every UIMessageChunk goes through a :class:`~think_nb.panel.batcher.ChunkBatcher`, which coalesces deltas and
  sends at most one ``use_chat_response`` frame per ``FLUSH_INTERVAL_S`` (platform-facts
  §7: Jupyter Server drops IOPub traffic above 1000 msg/s, so never a frame per delta);
- the transcript goes by message id (:mod:`think_nb.panel.transcript`): a view opens on the newest
  window (the ``messages`` and ``transcript`` traits, kept current but not synced on each change), every
  change is one ``transcript_patch`` frame as big as what changed, and a view asks for older messages
  (``transcript_request``) when scrolled up, or for the window again when it missed a patch;
- frames from the panel (send, regenerate, stop, clear, approve/deny, client tool
  results, resume) are parsed by :mod:`think_nb.panel.protocol` and dispatched to the agent;
  malformed ones, and ones the agent refuses (unknown or settled tool calls), are logged
  and ignored, never raised; a message the agent refuses is answered with a ``refused``
  ``use_chat_response`` saying why (the view marks the message not sent).

It is not the agent: it never runs a turn or stores a message itself.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import uuid
import weakref
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from think_nb import interrupts
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.panel import protocol
from think_nb.panel.batcher import ChunkBatcher
from think_nb.panel.hub import ViewHub
from think_nb.panel.protocol import UIMessage, UIMessageChunk
from think_nb.panel.transcript import PAGE, TranscriptMirror

__all__ = ["FLUSH_INTERVAL_S", "ChatPanel", "follow_newest"]

_log = logging.getLogger(__name__)

ESM_PATH = Path(__file__).parent.parent / "static" / "widget.js"
_ESM_STUB = "export default {};"  # stands in at import time when the bundle is not built
INTERRUPTED_TEXT = "The turn was interrupted before it finished; its partial reply was kept."
FLUSH_INTERVAL_S = 0.04
"""Longest time a chunk waits in the kernel before it is sent (≤ 25 frames/s per panel)."""



_PANELS: weakref.WeakSet[ChatPanel] = weakref.WeakSet()
"""Every open panel of this kernel (`follow_newest` moves those of a superseded agent)."""


def follow_newest(old: Any, new: Any) -> int:
    """Make every open panel of agent `old` show and drive agent `new` (`ChatPanel.follow`); returns
    how many panels follow it. Called by `%think` when a redefined class supersedes `old`."""
    panels = [p for p in list(_PANELS) if p._agent is old and p._unsubscribe is not None]
    for panel in panels:
        panel.follow(new)
    return len(panels)


def follow_redefined(new: Any) -> int:
    """Make every open panel of an agent of an older object of `new`'s class (same module and
    qualified name: the class was redefined in a cell) with `new`'s name and SQLite file follow
    `new`, however that agent was made and shown (`agent = Calc("q")` then `%think agent`, as the
    quickstart does, or `agent.panel()`); returns how many. Called whenever an agent is created
    (`AgentRuntime.open`: the class cell that makes `agent = Calc("q")` ran again) and by `%think Calc q`."""
    cls = type(new)

    def older(agent: Any) -> bool:
        kind = type(agent)
        return (kind is not cls and (kind.__module__, kind.__qualname__) == (cls.__module__, cls.__qualname__)
                and agent.name == new.name and agent.db_path == new.db_path)

    panels = [p for p in list(_PANELS) if older(p._agent) and p._unsubscribe is not None]
    for panel in panels:
        panel.follow(new)
    return len(panels)


class _Listener:
    """What the panel hands to its agent's ViewHub (the agent's listener events plus the
    hub's own ``on_status`` and ``on_runner``)."""

    def __init__(self, panel: ChatPanel) -> None:
        self._panel = panel

    def on_chunk(self, request_id: str, chunk: UIMessageChunk, continuation: bool) -> None:
        """Every UIMessageChunk of every turn, in order."""
        self._panel._batcher.add(request_id, chunk, continuation)

    def on_chunks(self, request_id: str, chunks: list[UIMessageChunk], continuation: bool) -> None:
        """A recorded batch of chunks of one turn, in order (deltas joined)."""
        self._panel._batcher.add_many(request_id, chunks, continuation)

    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        """A turn ended (completed | error | aborted | skipped)."""
        self._panel._on_turn_end(request_id, status, error)

    def on_messages(self, messages: list[UIMessage]) -> None:
        """The authoritative transcript changed."""
        self._panel._set_transcript()

    def on_message_updated(self, message: UIMessage) -> None:
        """A stored message changed: update it in the transcript, tell the views."""
        self._panel._on_message_updated(message)

    def on_clear(self) -> None:
        """The transcript was cleared (from any panel of the agent)."""
        self._panel._batcher.close()
        self._panel._send_frame(protocol.chat_clear())

    def on_status(self, status: str) -> None:
        """The shared status changed."""
        self._panel._sync_status()
        self._panel._follow_if_idle()

    def on_session(self, frame: protocol.SessionFrame) -> None:
        """The agent's memory changed: a ``session`` frame for the context tab."""
        self._panel._on_session(frame)

    def on_mcp_servers(self, frame: protocol.McpServersFrame) -> None:
        """An MCP server changed: an ``mcp_servers`` frame for the context tab."""
        self._panel._send_frame(frame)

    def on_recovering(self, recovering: bool, request_id: str) -> None:
        """Recovery of a dead kernel's turns started or ended."""
        self._panel._send_frame(protocol.chat_recovering(recovering, request_id))

    def on_runner(self, client_id: str) -> None:
        """Another view now runs client tools."""
        self._panel.client_tool_runner = client_id

    def on_annotations(self) -> None:
        """What the panel shows beside the transcript changed (a blocked call, a running turn)."""
        self._panel._sync_annotations()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class ChatPanel(anywidget.AnyWidget):
    """The chat panel of one agent; display it in a notebook cell.

    Args:
        agent: the `think_nb.Think` agent to show and drive (typed `Any` here: `Think.panel()` imports
            this module, and nothing imports `think_nb.agent` back).

    Raises:
        FileNotFoundError: the front end bundle ``think_nb/static/widget.js`` was not
            built; the message names the command that builds it.

    Synced traits: ``uid`` (uuid hex, keys the front end's per-model state),
    ``agent_name``, ``db_path``, ``status`` (one of
    :data:`think_nb.panel.protocol.STATUSES`, shared by every panel of the agent), ``status_detail``
    (what the running turn waits for: "loading litellm…", "loading the local model…",
    with "1 queued" beside it; "" when nothing is said; :attr:`think_nb.panel.hub.ViewHub.detail`),
    ``error`` (text of the latest turn error, "" if none), ``messages`` (the newest
    ``think_nb.panel.transcript.WINDOW`` UIMessage dicts of the branch) and ``transcript`` (``{rev,
    more, usage}``: its revision, whether older messages exist, the usage totals of the whole branch) —
    both kept current in the kernel for a view that opens, not synced on a change once a view attached
    (``transcript_patch`` frames carry the changes) —, ``client_tools`` (the
    agent's browser-run tools ``[{name, description, parameters, js}]``) and
    ``client_tool_runner`` (the id of the one view that runs client tool calls),
    ``session_state`` (the last ``session`` frame: the context tab of a view displayed later),
    ``annotations`` (:meth:`think_nb.panel.hub.ViewHub.annotations`: finish reasons, blocked or
    substituted calls, versions of regenerated replies, running request ids) and ``agent_info``
    (``{class, model, offline}``: the header and the empty panel's hint) and ``kernel_id`` (the
    Jupyter kernel's id, "" outside one: the panel's Stop of a running ``run_code`` POSTs
    ``/api/kernels/<id>/interrupt``, since the kernel reads no comm message while code runs).
    """

    _esm = ESM_PATH if ESM_PATH.is_file() else _ESM_STUB

    uid = traitlets.Unicode().tag(sync=True)
    agent_name = traitlets.Unicode().tag(sync=True)
    db_path = traitlets.Unicode().tag(sync=True)
    status = traitlets.Unicode("ready").tag(sync=True)
    status_detail = traitlets.Unicode("").tag(sync=True)  # what the running turn waits for (ViewHub.detail)
    paused_at = traitlets.Unicode("").tag(sync=True)  # step mode: the hook the turn waits at
    error = traitlets.Unicode("").tag(sync=True)
    messages: traitlets.List[UIMessage] = traitlets.List().tag(sync=True)
    client_tools: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    client_tool_runner = traitlets.Unicode("").tag(sync=True)
    session_state = traitlets.Dict().tag(sync=True)  # the last `session` frame (context tab)
    annotations = traitlets.Dict().tag(sync=True)  # finish reasons, tool decisions, branches, running ids
    agent_info = traitlets.Dict().tag(sync=True)  # {class, model, offline}
    kernel_id = traitlets.Unicode("").tag(sync=True)  # the Jupyter kernel's id: Stop POSTs its interrupt
    transcript = traitlets.Dict().tag(sync=True)  # {rev, more, usage} of `messages` (think_nb.panel.transcript)

    _QUIET = frozenset({"messages", "transcript"})
    """Traits a view reads when it opens and never hears change: `transcript_patch` frames carry the changes."""

    def __init__(self, agent: Any, **kwargs: Any) -> None:
        if not ESM_PATH.is_file():
            raise FileNotFoundError(
                f"The chat panel's front end is not built: {ESM_PATH} is missing. "
                "Build it with `cd js && npm install && npm run build` in the think_nb "
                "repository, or reinstall with `pip install -e .`."
            )
        if type(self)._esm == _ESM_STUB:
            self._esm = ESM_PATH.read_text()  # built after this module was imported
        hub = ViewHub.for_agent(runtime_of(agent))
        branch = list(agent.messages)
        mirror = TranscriptMirror(branch)
        window, meta = mirror.trait(branch, _older(agent, branch))
        super().__init__(
            uid=uuid.uuid4().hex,
            agent_name=str(agent.name),
            db_path=str(agent.db_path),
            messages=window,
            transcript=meta,
            status=hub.status,
            status_detail=hub.detail,
            error=hub.error,
            client_tools=_client_tool_specs(agent),
            client_tool_runner=hub.runner,
            session_state=hub.session_state(),
            annotations=_annotations(hub),
            agent_info=_agent_info(agent),
            kernel_id=_kernel_id(),
            **kwargs,
        )
        self._agent = agent
        self._hub = hub
        self._mirror = mirror
        self._views_attached = False  # a panel view sent its resume probe (it applies transcript patches)
        self._static_stale = False  # the static transcript output waits for the turn's end
        self._tasks: set[Any] = set()
        self._display_ids: list[str] = []
        self._batcher = ChunkBatcher(self._send_frame, FLUSH_INTERVAL_S)
        self._home_loop = _running_loop()  # the kernel's loop: the agent's turns all run on it
        self.on_msg(self._on_panel_msg)
        self._successor: Any = None  # the agent this panel follows once its own agent is idle (`follow`)
        self._unsubscribe: Callable[[], None] | None = hub.subscribe(_Listener(self))
        _PANELS.add(self)

    # --- following a redefined class ----------------------------------------------------------

    def follow(self, agent: Any) -> None:
        """Show and drive `agent` from now on: the newest object of this panel's agent (issue 27 §3).

        `%think Demo` after `class Demo` was redefined in a cell creates a new agent of the new class on
        the same storage (key `Demo:<name>`, same SQLite file: the same transcript); every panel of the
        older agent then follows the new one (`follow_newest`), so a message typed in a panel drawn
        above runs the new class's tools and prompt, and every panel of the agent shows the turn. We
        chose following over a "stale — switch?" notice: the class is the code behind one stored
        conversation, not a different conversation, and in front of a class (a teacher changing the
        prompt and re-running) the panel on screen should simply use the new code, with nothing to
        click or scroll to. Think's nearest behaviour: a deploy replaces a Durable Object's class, and
        every client still connected then talks to the new code.

        A turn of the older agent that is running (or queued) is never cut: the panel follows once that
        agent is idle. The older agent object itself is untouched (a variable holding it still drives
        the old class, with no panel)."""
        if agent is self._agent:
            self._successor = None
            return
        self._successor = agent
        self._follow_if_idle()

    def _follow_if_idle(self) -> None:
        successor = self._successor
        if successor is None or self._unsubscribe is None or self._agent.is_running:
            return
        self._successor = None
        unsubscribe, self._unsubscribe = self._unsubscribe, None
        unsubscribe()
        self._batcher.flush()
        hub = ViewHub.for_agent(runtime_of(successor))
        if not hub.runner and self.client_tool_runner:
            hub.set_runner(self.client_tool_runner)  # this view keeps running client tools
        self._agent, self._hub = successor, hub
        with self.hold_trait_notifications():
            self.agent_name = str(successor.name)
            self.db_path = str(successor.db_path)
            self.client_tool_runner = hub.runner
            self.session_state = hub.session_state()
            self._set_transcript()
            self._sync_status()
        self._unsubscribe = hub.subscribe(_Listener(self))

    # --- display: the live view plus a static transcript for saved notebooks ----------------

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict] | None:
        """The widget view, plus the transcript as sanitised `text/html` and markdown `text/plain`
        (`think_nb.frontends.export.static_transcript`, bounded), for a caller that asks for one bundle.
        Displayed in a notebook (`_ipython_display_`), the transcript is an output of its own."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        markdown, html = self.static_transcript()
        return {**data, "text/html": html, "text/plain": markdown}, metadata

    def static_transcript(self) -> tuple[str, str]:
        """`(markdown, sanitised html)` of the agent's current branch, bounded (see `_repr_mimebundle_`)."""
        from think_nb.frontends.export import static_transcript

        return static_transcript(self._agent.messages, title=self._title())

    def _title(self) -> str:
        return f"{type(self._agent).__name__} {self._agent.name!r}"

    def _static_bundle(self) -> dict[str, str]:
        """The static transcript output: html marked `think-static-transcript` (the live panel's CSS
        hides it beside a rendered panel; in a trusted notebook its own `<style>` hides the widget
        error beside it) and markdown text/plain."""
        from think_nb.frontends.export import STATIC_TRANSCRIPT_STYLE

        markdown, html = self.static_transcript()
        return {"text/html": f'{STATIC_TRANSCRIPT_STYLE}<div class="think-static-transcript">{html}</div>',
                "text/plain": markdown}

    def _ipython_display_(self) -> None:
        """Display two outputs: the live widget view, then the static transcript (display id kept, so it
        follows the conversation: `refresh_display`, at every transcript change). A front end that
        cannot render the widget (a saved notebook reopened without its kernel, in JupyterLab with its
        default settings, nbconvert, nbviewer, GitHub) shows the transcript; while the live panel is
        rendered its CSS hides the transcript beside it, so one conversation shows."""
        from IPython.display import display

        bundle = super()._repr_mimebundle_()
        if bundle is None:
            return
        data, metadata = bundle
        static = self._static_bundle()  # first (its first call imports markdown-it and nh3): the two
        # outputs then arrive together, and a notebook saved meanwhile never holds the view alone
        line = f"{self._title()}: think_nb chat panel (live when its cell runs; the transcript follows)"
        display({**data, "text/plain": line}, metadata=metadata, raw=True)
        self._display_ids.append(uuid.uuid4().hex)
        display(static, raw=True, display_id=self._display_ids[-1])

    def refresh_display(self) -> None:
        """Rewrite every static transcript output of this panel with the current transcript (the
        saved notebook then holds the conversation as it is now). Called whenever the transcript
        changes; the live view is a separate output and is not rendered again."""
        from IPython.display import update_display

        if not self._display_ids:
            return
        bundle = self._static_bundle()
        for display_id in list(self._display_ids):
            update_display(bundle, raw=True, display_id=display_id)

    def close(self) -> None:
        """Detach from the agent, then close the widget and all its views."""
        unsubscribe = getattr(self, "_unsubscribe", None)  # None if __init__ failed early
        if unsubscribe is not None:
            self._unsubscribe = None
            unsubscribe()
            self._batcher.close()
        super().close()

    # --- agent -> panel ---------------------------------------------------------------

    def _send_frame(self, frame: protocol.KernelFrame) -> None:
        self.send(frame)

    def _should_send_property(self, key: str, value: Any) -> bool:
        # ipywidgets asks before syncing a changed trait: once a panel view has attached (its resume
        # probe), the quiet ones are read by a view that opens (the widget's state is read whole then),
        # never pushed on a change; before that (nbclient running the notebook headless, storing the
        # widget state it hears) the window is synced, so a saved widget state holds the conversation
        if key in self._QUIET and self._views_attached:
            return False
        return super()._should_send_property(key, value)

    def _sync_status(self) -> None:
        if self.paused_at != self._hub.paused_at:
            self.paused_at = self._hub.paused_at
        if self.error != self._hub.error:
            self.error = self._hub.error
        if self.status_detail != self._hub.detail:  # before the status: a view renders both at once
            self.status_detail = self._hub.detail
        if self.status != self._hub.status:
            self.status = self._hub.status
        self._sync_annotations()

    def _sync_annotations(self) -> None:
        annotations = _annotations(self._hub)
        if annotations != self.annotations:
            self.annotations = annotations

    def _on_session(self, frame: protocol.SessionFrame) -> None:
        # The trait serves views displayed later; the frame updates the open ones now.
        self.session_state = copy.deepcopy(dict(frame))
        self._send_frame(frame)

    def _on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        self._batcher.end(request_id, error=status == "error")
        self._set_transcript()
        self._sync_status()
        loop = _running_loop()
        if self._static_stale and loop is not None:
            loop.call_soon(self._set_transcript)  # once the engine has let the turn go: not running
        if self._successor is not None:
            if loop is not None:
                loop.call_soon(self._follow_if_idle)  # once the engine has let the turn go
            else:
                self._follow_if_idle()

    def _set_transcript(self) -> None:
        """Tell the views what changed in the agent's branch (one `transcript_patch`, if anything did);
        the static transcript output follows once no turn runs (it is the newest 20 messages, at most
        12,000 characters of markdown, `think_nb.frontends.export.static_transcript`:
        rewritten once a turn, not at each message the turn stores)."""
        self._static_stale = self._sync_transcript() or self._static_stale
        if self._static_stale and not self._agent.is_running:
            self._static_stale = False
            self.refresh_display()  # the saved notebook's transcript follows the conversation
        self._sync_annotations()
        info = _agent_info(self._agent)
        if info != self.agent_info:
            self.agent_info = info
        specs = _client_tool_specs(self._agent)
        if specs != self.client_tools:
            self.client_tools = specs

    def _sync_transcript(self) -> bool:
        """Send the patch from what the views heard to the branch now; keep the quiet traits current
        (what a view that opens reads). True when the branch changed."""
        branch = list(self._agent.messages)
        older = _older(self._agent, branch)
        patch = self._mirror.patch(branch, older)
        if patch is None:
            return False
        self._send_frame(patch)
        self.messages, self.transcript = self._mirror.trait(branch, older)
        return True

    def _on_message_updated(self, message: UIMessage) -> None:
        self._sync_transcript()

    # --- panel -> agent ---------------------------------------------------------------

    def _on_panel_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        # ipykernel 7 may deliver a comm message on a subshell's thread and loop (it routes replies
        # to the subshell that last used the comm): hand the frame to the kernel's loop, so every
        # turn of the agent runs on one loop (one queue lock, one set of tasks).
        home = self._home_loop
        if home is not None and home.is_running() and _running_loop() is not home:
            home.call_soon_threadsafe(self._on_panel_msg, _widget, content, _buffers)
            return
        # ipywidgets swallows handler exceptions: catch and log them ourselves.
        try:
            with interrupts.frame_latches_interrupt():  # a Stop as an Approve starts its continuation
                self._dispatch(content)
        except Exception:  # noqa: BLE001 - logged; ipywidgets would swallow it silently
            _log.exception("panel frame %.200r failed", content)

    def _dispatch(self, content: Any) -> None:
        frame: Any = protocol.parse_frame(content, logger=_log)
        if frame is None:
            return
        kind = frame["type"]
        if kind == protocol.USE_CHAT_REQUEST:
            self._handle_chat_request(frame)
        elif kind == protocol.CHAT_REQUEST_CANCEL:
            self._agent.abort_request(frame["id"])
        elif kind == protocol.CHAT_CLEAR:
            self._hub.clear()
        elif kind == protocol.TOOL_APPROVAL:
            self._handle_approval(frame)
        elif kind == protocol.TOOL_RESULT:
            self._handle_tool_result(frame)
        elif kind == protocol.STREAM_RESUME_REQUEST:
            self._views_attached = True
            self._resync_view(frame.get("probeId"), frame.get("transcriptRev"))
            self._handle_resume_request(frame.get("probeId"))
        elif kind == protocol.STREAM_RESUME_ACK:
            self._handle_resume_ack(frame["id"], frame.get("probeId"))
        elif kind == protocol.SESSION_SWITCH:
            self._hub.switch_session(frame["session"])
        elif kind == protocol.CONTINUE_REQUEST:
            self._handle_continue(frame["id"])
        elif kind == protocol.SWITCH_BRANCH:
            self._handle_switch_branch(frame["messageId"])
        elif kind == protocol.TOOL_UNDO:
            self._call_agent(self._agent.undo, frame["toolCallId"])
        elif kind == protocol.TRANSCRIPT_REQUEST:
            self._handle_transcript_request(frame)
        else:
            _log.warning("ignored %r frame: the kernel does not accept it", kind)

    def _handle_chat_request(self, frame: protocol.UseChatRequest) -> None:
        request_id = frame["id"]
        self._hub.set_runner(frame.get("clientId", ""))
        tools = [dict(t) for t in frame.get("clientTools") or []]
        self._hub.note_submitted(request_id, tools)
        task: asyncio.Future[Any]
        try:
            if frame["trigger"] == protocol.REGENERATE_MESSAGE:
                # streams under the panel's request id, so Stop cancels it from the start
                task = asyncio.ensure_future(self._agent.regenerate(request_id))
            else:
                task = self._agent.submit(frame["messages"][-1], request_id=request_id, trigger="panel",
                                          client_tools=tools or None, body=dict(frame.get("body") or {}) or None)
        except Exception as exc:  # noqa: BLE001 - the agent refused: tell the panel, keep the kernel alive
            _log.exception("the agent refused request %s", request_id)
            # every view hears why: the one that sent it marks its message not sent, with why; no turn ran,
            # so none failed (the shared status stays as it was, not `error`)
            self._send_frame(protocol.use_chat_response(
                request_id, [{"type": "error", "errorText": str(exc)}], done=True, error=True, refused=True
            ))
            self._hub.forget_submitted(request_id)
            return
        self._tasks.add(task)  # a strong reference until the turn ends
        task.add_done_callback(self._tasks.discard)

    def _handle_continue(self, request_id: str) -> None:
        """Continue the last assistant message (a reply cut at its token limit) as `request_id`."""
        self._hub.note_submitted(request_id)
        task = asyncio.ensure_future(self._agent.continue_last_turn(request_id=request_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _handle_switch_branch(self, message_id: str) -> None:
        """Show another version of a regenerated reply; refused while a turn runs."""
        if self._agent.is_running:
            _log.warning("ignored switch_branch(%r): a turn is running", message_id)
            return
        try:
            self._agent.switch_branch(message_id)
        except UserError as exc:
            _log.warning("ignored switch_branch(%r): %s", message_id, exc)
            return
        self._set_transcript()

    def _resync_view(self, probe_id: str | None, rev: int | None) -> None:
        """A view attached on transcript revision `rev` (the state it read): when the transcript moved
        since (a page reloaded from a stale state, patches sent before its model listened), it gets the
        newest window before anything else."""
        self._sync_transcript()
        if probe_id and rev is not None and rev != self._mirror.rev:
            branch = list(self._agent.messages)
            self._send_frame(self._mirror.window(branch, probe_id, _older(self._agent, branch)))

    def _handle_transcript_request(self, frame: protocol.TranscriptRequest) -> None:
        """View `probeId` asks for the newest window again (it missed a patch), or for the messages
        before `before` (scrolled to the top of what it holds)."""
        self._sync_transcript()  # a change not sent yet goes first: the answer is at the newest revision
        branch = list(self._agent.messages)
        older = _older(self._agent, branch)
        before = frame.get("before")
        if before is None:
            self._send_frame(self._mirror.window(branch, frame["probeId"], older))
            return
        read = partial(_read_older, self._agent)
        self._send_frame(self._mirror.page(branch, before, frame.get("limit") or PAGE, frame["probeId"], read, older))

    def _handle_approval(self, frame: protocol.ToolApproval) -> None:
        call_id = frame["toolCallId"]
        if frame["approved"]:  # an edited input is checked by the engine as approve(input=...) is
            self._call_agent(self._agent.approve, call_id, input=frame.get("input"))
        else:
            self._call_agent(self._agent.deny, call_id, reason=frame.get("reason"))

    def _handle_tool_result(self, frame: protocol.ToolResult) -> None:
        failed = frame.get("state") == protocol.OUTPUT_ERROR
        error_text = (frame.get("errorText") or "The client tool failed.") if failed else None
        self._call_agent(self._agent.add_tool_output, frame["toolCallId"], output=frame.get("output"),
                         error_text=error_text)

    def _call_agent(self, method: Callable[..., Any], tool_call_id: str, **kw: Any) -> None:
        """Call ``method(tool_call_id, **kw)`` (approve / deny / add_tool_output); the agent's
        refusal (unknown, settled or out-of-order tool call) is logged, never raised."""
        try:
            task = method(tool_call_id, **kw)
        except UserError as exc:
            _log.warning("ignored %s(%r): %s", method.__name__, tool_call_id, exc)
            return
        if isinstance(task, asyncio.Future):  # the continuation turn it started (undo returns its report)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _handle_resume_request(self, probe_id: str | None) -> None:
        if probe_id:
            self._hub.set_runner(probe_id)
        mcp = self._hub.mcp_frame()
        if mcp["servers"]:
            self._send_frame(mcp)  # Think sends cf_agent_mcp_servers on connect
        if self._hub.recovering():
            self._send_frame(protocol.chat_recovering(True))
        active = self._hub.active()
        for request_id in active:
            self._send_frame(protocol.stream_resuming(request_id, probe_id))
        if active:
            return
        pending = self._hub.pending()
        terminal = self._hub.terminal()
        if pending:  # accepted, nothing streamed: its chunks reach this view live from the first
            self._send_frame(protocol.stream_pending(pending[0], probe_id))
        elif terminal is not None:  # the last turn's error / interruption, replayed on ack
            self._send_frame(protocol.stream_resuming(terminal[0], probe_id))
        else:
            self._send_frame(protocol.stream_resume_none(probe_id))

    def _handle_resume_ack(self, request_id: str, probe_id: str | None) -> None:
        self._batcher.flush()  # what this panel already sent goes before the replay
        replay = self._hub.replay(request_id)
        if replay is None:
            _log.warning("ignored resume ack for unknown turn %r", request_id)
            self._send_frame(protocol.stream_resume_none(probe_id))
            return
        chunks, continuation, finished = replay
        terminal = self._hub.terminal() if finished else None
        failed = terminal is not None and terminal[0] == request_id
        if failed and terminal is not None and terminal[1] == "interrupted" and not any(
                c.get("type") == "error" for c in chunks):
            chunks = [*chunks, {"type": "error", "errorText": INTERRUPTED_TEXT}]
        self._send_frame(protocol.use_chat_response(
            request_id, chunks, done=finished, error=failed, continuation=continuation, replay=True
        ))


def _older(agent: Any, branch: list[UIMessage]) -> bool:
    """Whether SQLite may hold messages before the branch in memory (it is cut at `hydration_limit`)."""
    limit = getattr(getattr(runtime_of(agent), "conversation", None), "limit", None)
    return limit is not None and len(branch) >= limit


def _read_older(agent: Any, before: str, n: int) -> list[UIMessage]:
    """The `n` messages before message `before` on its path in SQLite, oldest first ([] if unknown)."""
    try:
        path = runtime_of(agent).conversation.store.messages.branch(limit=n + 1, leaf_id=before)
    except Exception:  # noqa: BLE001 - a view scrolled up: the chat must go on
        _log.exception("reading older messages failed")
        return []
    return path[:-1] if path and path[-1].get("id") == before else []


def _kernel_id() -> str:
    from think_nb.kernel.ident import kernel_id

    return kernel_id()


def _annotations(hub: ViewHub) -> dict[str, Any]:
    try:
        return hub.annotations()
    except Exception:  # noqa: BLE001 - the panel must still open
        _log.exception("annotations() failed")
        return {}


def _agent_info(agent: Any) -> dict[str, Any]:
    """`{class, model, offline}`: the agent's class name, its model string, and whether that model
    runs in the kernel (the embedded or a scripted model: no network, no key)."""
    from think_nb.models.resolve import IN_PROCESS_PROVIDERS, ModelConfig

    try:
        value = agent.get_model()
        model = value.model if isinstance(value, ModelConfig) else str(value)
    except Exception:  # noqa: BLE001 - get_model is user code; the turn will report it
        model = ""
    provider = model.split("/", 1)[0] if "/" in model else ""
    return {"class": type(agent).__name__, "model": model, "offline": provider in IN_PROCESS_PROVIDERS}


def _client_tool_specs(agent: Any) -> list[dict[str, Any]]:
    """The agent's browser-run tools ``[{name, description, parameters, js}]`` (or [])."""
    try:
        return copy.deepcopy([dict(s) for s in runtime_of(agent).client_tool_specs()])
    except Exception:  # noqa: BLE001 - specs come from user code (get_tools)
        _log.exception("client_tool_specs() failed")
        return []
