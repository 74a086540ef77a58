"""`AgentRuntime`: the machinery behind one agent, kept off the class the user subclasses.

A `Think` subclass is the user's: it holds Think's names (`think_nb.names`) and whatever the user
adds (`self.store = ...`, `self.key = ...`). Everything that makes it work lives here, one runtime
per agent, bound to it by `think_nb.binding` (`runtime_of(agent)`):

- storage: `store` (`AgentStore`, every table of this agent) and `conversation` (the branch, the
  only writer of messages);
- turns: `engine` (`TurnEngine`), which sees the agent only through `think_nb.turns.host.AgentHost`,
  implemented here: the user's overridables and hooks are called on `agent` (the user's object),
  the settings (`max_steps`, `message_concurrency`, ...) are read from it at each use;
- the subsystems, each given this runtime through the narrow protocol its own module declares:
  memory (`session`), the workspace, MCP servers, extensions, scheduled tasks, durable
  submissions, actions (`actions`) and recovery of a dead kernel's turns;
- what the panel hub asks (`think_nb.panel.hub.PanelSource`): what streams, the replay of a stream,
  pending turns, the last terminal state.

The runtime composes the subsystems from above; none of them imports it (or `Think`) back.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import os
import sys
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from think_nb.conversation import Conversation
from think_nb.models.litellm_env import preload_for
from think_nb.models.resolve import LOCAL_MODEL
from think_nb.startup import StartUp
from think_nb.store import AgentStore, default_db_path, open_database
from think_nb.store.db import resolve_path
from think_nb.store.presence import Presence, presence
from think_nb.turns.engine import TurnEngine
from think_nb.turns.hooks import user_code

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

    from think_nb.actions.runner import ActionRunner
    from think_nb.extensions.manager import ExtensionManager
    from think_nb.mcp.servers import McpServers
    from think_nb.schedules.scheduler import Scheduler
    from think_nb.session.builder import Session
    from think_nb.session.media_eviction import MediaEvictor
    from think_nb.submissions import Submissions
    from think_nb.turns.result import TurnResult

__all__ = ["AgentRuntime"]


class _Setting:
    """A setting the runtime reads from the user's agent at each use (a class attribute the user may
    override in the subclass or set on the instance, e.g. `max_steps`)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, runtime: AgentRuntime | None, owner: type | None = None) -> Any:
        if runtime is None:
            return self
        return getattr(runtime.agent, self.name)


class AgentRuntime:
    """The machinery of one agent (see the module docstring).

    Args:
        agent: the user's `Think` object; hooks, overridables and settings are read from it.
        base: `Think` itself (a hook the agent's class does not override is the base's no-op).
        name: the agent's name.
        db: SQLite file path, or None for `.think/<notebook-stem>.sqlite` beside the notebook.
        key: storage key; None for `"<ClassName>:<name>"`.
        parent: the runtime of the agent that made this one with `sub_agent`, else None.
    """

    store: AgentStore
    conversation: Conversation

    max_steps = _Setting()
    send_reasoning = _Setting()
    hydration_limit = _Setting()
    message_concurrency = _Setting()
    chat_stream_stall_timeout = _Setting()
    context_overflow = _Setting()
    media_eviction = _Setting()
    chat_recovery = _Setting()
    chat_recovery_max_attempts = _Setting()
    chat_recovery_max_recovery_work = _Setting()
    chat_recovery_no_progress_timeout = _Setting()
    include_mcp_tools = _Setting()
    wait_for_mcp_connections = _Setting()
    include_extension_tools = _Setting()
    extension_timeout = _Setting()
    extension_hook_timeout = _Setting()
    extension_allowed_hosts = _Setting()
    extension_allow_private = _Setting()
    include_workspace_tools = _Setting()
    workspace_approval = _Setting()
    include_kernel_tools = _Setting()

    def __init__(self, agent: Any, base: type, name: str, db: str | os.PathLike[str] | None, key: str | None,
                 parent: AgentRuntime | None = None) -> None:
        self.agent = agent
        self.base = base
        self.name = name
        self.parent = parent
        if parent is not None:  # a sub-agent made as `cls(name)`: its parent's file, a key under the parent's
            db = db or parent.db_path
            key = key or f"{parent.key}/{type(agent).__name__}:{name}"
        self.db_path: Path = resolve_path(db if db else default_db_path())
        self.key: str = key or f"{type(agent).__name__}:{name}"
        self.recovery_task: asyncio.Task[Any] | None = None
        self._start_up: StartUp | None = None
        self._session: Session | None = None
        self._session_pending: Any = None
        self._workspace: Any = None
        self._workspace_set = False  # True once the user gave a file system (else the default, made on use)
        self._workspace_tools: tuple[Any, bool, dict[str, Any]] | None = None  # (fs, approval, tools) last built
        self._kernel_tools: tuple[str, dict[str, Any]] | None = None  # (run mode, tools) last built
        self.children: dict[tuple[type, str], Any] = {}

    def open(self) -> None:
        """Open storage, recover a dead kernel's turns and start every subsystem that has stored rows
        (`Think.__init__`, once the agent is bound to this runtime, so user code called from here may
        use the agent). One query says which subsystems have rows (`think_nb.store.presence`); the
        others are made, and read, when first used, so creating an agent writes nothing and reads
        one row (issue 29 §4). Hydration, durable-work recovery and the scheduled-task reconcile
        are best effort (`think_nb.startup`): one that fails is listed by
        `get_on_start_degradations()`, and the agent is created without it."""
        agent = self.agent
        # first: a hosted model's litellm import / the embedded model's load overlaps the set-up and typing
        preload_for(self._model_hint())
        db = open_database(self.db_path)
        found = presence(db, self.key)
        self.store = AgentStore(db, self.key, type(agent).__name__, self.name, registered=found.registered,
                                session_id=None if found.state else "")
        self.conversation = Conversation(self.store, self.hydration_limit, empty=not found.state,
                                         start_up=lambda: self.start_up)
        if found.interrupted or found.child_runs or found.expired_actions or found.submissions:
            self.start_up.run("durable-work-recovery", lambda: self._recover_durable_work(found))
        if found.mcp_servers:
            self.mcp.restore()  # servers added before reconnect in the background
        static = None
        if self.overrides("get_extensions"):
            with user_code("get_extensions", agent):
                static = agent.get_extensions()
        if static is not None or found.extensions:
            self.extensions.restore(static if static is not None else [])  # static, then stored ones load later
        if self.overrides("get_scheduled_tasks") or found.schedules:
            self.start_up.run("scheduled-task-reconcile", lambda: self._reconcile_scheduled_tasks(found.schedules))
        _panels_follow(agent)

    def _recover_durable_work(self, found: Presence) -> None:
        """A dead process's work: its turns (partial replies stored, `on_chat_recovery` asked), its
        agent-tool runs, the expired action ledger rows and its submissions (a submission whose turn
        a recovery continuation resumes stays `running` until that continuation ends)."""
        continuing: set[str] = set()
        if found.interrupted or found.child_runs:  # recovery's modules load only when there is work for them
            from think_nb.agent_tools import Reattach
            from think_nb.turns import recovery

            reattach = Reattach(self)  # sub-agent runs a dead kernel left: outcomes delivered, children resumed
            left = recovery.recover(self, reattach.prepare)  # a dead kernel's turns: partial replies stored, hook asked
            continuing = recovery.chains(left)
            self.recovery_task = recovery.schedule(self, self.engine, left, reattach.pending)
        if found.expired_actions:
            self.actions.sweep()  # get_actions(): ledger, durable pauses (think_nb.actions)
        if found.submissions:
            self.submissions.recover(continuing)  # a dead kernel's accepted submissions run again

    def _reconcile_scheduled_tasks(self, stored: bool) -> None:
        """`get_scheduled_tasks()`' declarations written, stored tasks re-armed (`stored`: there are some)."""
        declared = None
        if self.overrides("get_scheduled_tasks"):
            with user_code("get_scheduled_tasks", self.agent):
                declared = self.agent.get_scheduled_tasks()
        if declared is None and not stored:
            return
        self.scheduler.reconcile(declared)  # declared tasks; stored ones re-armed
        self.scheduler.kick()

    @property
    def start_up(self) -> StartUp:
        """The best-effort start-up steps and what failed (`get_on_start_degradations()`); made on
        first use (creating an agent whose steps all succeed makes none: issue 29 §4)."""
        if self._start_up is None:
            self._start_up = StartUp(self.key)
        return self._start_up

    def on_start_degradations(self) -> list[dict[str, str]]:
        """`Think.get_on_start_degradations()`: the hydration is done first (it is lazy), then the
        failed steps `[{"step", "error"}]` (`think_nb.startup`)."""
        self.conversation.hydrate()
        return self.start_up.list()

    @property
    def recovered_submissions(self) -> Submissions | None:
        """The submission ledger when it exists (recovery settles the submission a continuation
        resumed), else None (no submission is stored or used: nothing to settle)."""
        return self.submissions if self._made("submissions") else None

    # -- the subsystems, each made on first use (or at creation, when it has stored rows) --------------
    @cached_property
    def engine(self) -> TurnEngine:
        return TurnEngine(self)

    @cached_property
    def actions(self) -> ActionRunner:
        """`get_actions()`'s runner: ledger, durable pauses (think_nb.actions)."""
        from think_nb.actions.runner import ActionRunner  # each subsystem's modules load with it

        return ActionRunner(self)

    @cached_property
    def submissions(self) -> Submissions:
        from think_nb.submissions import Submissions

        return Submissions(self, self.engine)

    @cached_property
    def mcp(self) -> McpServers:
        from think_nb.mcp.servers import McpServers

        return McpServers(self, lambda servers: self.engine.notify("on_mcp_servers", servers))

    @cached_property
    def extensions(self) -> ExtensionManager:
        from think_nb.extensions.manager import ExtensionManager

        return ExtensionManager(self)

    @cached_property
    def media_evictor(self) -> MediaEvictor:
        """Background media eviction of the stored transcript (`media_eviction`; Think's #1710 passes)."""
        from think_nb.session.media_eviction import MediaEvictor

        return MediaEvictor(self)

    @cached_property
    def scheduler(self) -> Scheduler:
        from think_nb.schedules.scheduler import Scheduler

        return Scheduler(self, self.agent.schedule_clock)

    def _model_hint(self) -> Any:
        """The model known without calling user code: `default_model` / `THINK_NB_MODEL` when
        `get_model()` is not overridden, else None (an overridden `get_model` runs only when a turn
        resolves its model, which starts litellm's import then if the model is hosted)."""
        if not self.overrides("get_model"):
            return self.agent.get_model()
        return None

    # -- the user's overridables, as the engine and the subsystems call them ------------------
    def get_model(self) -> Any:
        return self.agent.get_model()

    def get_system_prompt(self) -> Any:
        return self.agent.get_system_prompt()

    def get_tools(self) -> Any:
        return self.agent.get_tools()

    def get_skills(self) -> Any:
        return self.agent.get_skills()

    def repair_interrupted_tool_part(self, part: dict[str, Any]) -> dict[str, Any]:
        repaired: dict[str, Any] = self.agent.repair_interrupted_tool_part(part)
        return repaired

    def on_chat_recovery(self, ctx: Any) -> Any:
        return self.agent.on_chat_recovery(ctx)

    def on_submission_status(self, inspection: dict[str, Any]) -> Any:
        return self.agent.on_submission_status(inspection)

    @property
    def on_chat_recovery_is_async(self) -> bool:
        """True when the user's `on_chat_recovery` is a coroutine function (asked in a task)."""
        return inspect.iscoroutinefunction(self.agent.on_chat_recovery)

    def overrides(self, hook: str) -> bool:
        """True when the agent's class defines `hook`, or the agent itself holds one
        (`agent.before_turn = fn`), so the engine calls it."""
        return hook in vars(self.agent) or getattr(type(self.agent), hook) is not getattr(self.base, hook)

    def observes(self, hook: str) -> bool:
        """True when the class overrides `hook` or a loaded extension defines it (the turn then
        fires it; for `on_chunk`, decided once per turn)."""
        return self.overrides(hook) or (self._made("extensions") and bool(self.extensions.subscribers(hook)))

    def _made(self, subsystem: str) -> bool:
        """Whether the subsystem exists yet (made on first use, or at creation when it has stored rows):
        one that does not holds nothing (no extension), so a turn need not import it."""
        return subsystem in vars(self)

    # -- messages ------------------------------------------------------------------------------
    @property
    def messages(self) -> list[dict[str, Any]]:
        """The current branch, oldest first (a live view; do not mutate)."""
        return self.conversation.messages

    @property
    def is_running(self) -> bool:
        return self.engine.is_running

    def messages_changed(self) -> None:
        """Tell every view the branch changed (after an import, a switch, ...)."""
        self.engine.messages_changed()

    def messages_grew(self) -> None:
        """A turn ended or `add_messages` stored messages: older ones may have aged, so media
        eviction checks (one index query) and, when it finds work, runs passes in the background."""
        from think_nb.errors import UserError

        if self.media_eviction is False:
            return
        try:
            self.media_evictor.schedule()
        except UserError:  # a media_eviction the turns refuse too, with this message
            return

    def clear(self) -> None:
        """Think's `clearMessages`: transcript, prompt and skill state, pending submissions, turns."""
        self.store.state.set("unloaded_tool_calls", None)
        if self._session is not None:
            self._session.reset()  # Think refreshes the prompt and skill state on clear
        self.submissions.skip_pending()
        self.engine.clear()

    # -- memory ----------------------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The agent's `Session`, configured by the user's `configure_session` on first access."""
        if self._session is None:
            from think_nb.session.builder import Session

            session = Session(self, self.engine)
            self._session = session
            with user_code("configure_session", self.agent):
                configured = self.agent.configure_session(session)
            self._session_pending = configured if inspect.isawaitable(configured) else None
        return self._session

    async def session_ready(self) -> Session:
        """The `Session`, after an async `configure_session` has finished."""
        session = self.session
        pending, self._session_pending = self._session_pending, None
        if pending is not None:
            with user_code("configure_session", self.agent):  # the body of an async configure_session
                await pending
        return session

    @property
    def session_configured(self) -> Session | None:
        """The `Session` if it has been created, else None."""
        return self._session

    def switch_session(self, ref: str) -> str:
        """Make session `ref` (id or name; "" or "default" = the default) active; returns its id.
        Raises `UserError` for an unknown session or while a turn runs."""
        from think_nb.session import sessions

        session_id = sessions.resolve(self.store, ref)
        if self.is_running:
            from think_nb.errors import UserError

            raise UserError("A turn is running; wait for it (await agent.wait_until_stable()) before switching "
                            "sessions.")
        self.conversation.open_session(session_id)
        if self._session is not None:
            self._session.reset()
        self.engine.messages_changed()
        if self._session is not None:
            self._session.emit_status()
        return session_id

    def sessions_changed(self) -> None:
        """A session was created, renamed, forked or deleted (from a cell): the panels' session
        lists are redrawn at once, not at the next turn."""
        if self._session is not None:
            self._session.emit_status()

    def list_sessions(self) -> list[dict[str, Any]]:
        from think_nb.session import sessions

        return sessions.list_sessions(self.store)

    # -- the workspace ---------------------------------------------------------------------------
    @property
    def workspace(self) -> AbstractFileSystem:
        """The agent's fsspec file system (default: `WorkspaceFileSystem` over this agent's rows)."""
        if self._workspace is None:
            from think_nb.workspace.fs import WorkspaceFileSystem

            self._workspace = WorkspaceFileSystem(self.store.workspace,
                                                  self.db_path.parent / f"{self.db_path.stem}.files")
        return self._workspace

    @workspace.setter
    def workspace(self, fs: Any) -> None:
        from fsspec.spec import AbstractFileSystem

        from think_nb.errors import UserError

        if not isinstance(fs, AbstractFileSystem):
            raise UserError(f"workspace={fs!r} must be an fsspec file system, e.g. fsspec.filesystem('memory').")
        self._workspace = fs
        self._workspace_set = True

    def workspace_tools(self) -> dict[str, Any]:
        """The default tools of a turn, `{name: Tool}` (merged first; empty when
        `include_workspace_tools` is False). See `think_nb.workspace.tools.workspace_tools`."""
        if not self._wants_workspace_tools():
            return {}
        key, fs, approval = self._workspace_key()
        cached = self._workspace_tools
        if cached is None or cached[0] is not key or cached[1] != approval:  # built once (declared schemas)
            cached = self._workspace_tools = (key, approval, _build_workspace_tools(fs, approval))
        return dict(cached[2])

    async def aworkspace_tools(self) -> dict[str, Any]:
        """`workspace_tools()` for a turn. Built on the loop: the seven tools are declared from their
        schemas (`think_nb.workspace.declarations`, ~0.2 ms), their pydantic input models are built
        on a tool's first call, off the loop (`Tool.prepare`). (A worker thread for the build cost a
        fresh process's first turn its thread pool's import and start-up, issue 29 §3.)"""
        return self.workspace_tools()

    def _workspace_key(self) -> tuple[Any, Any, bool]:
        """(cache key, file system, approval) of the workspace tools: the default workspace is made
        (and fsspec imported) on the first call of a workspace tool (`Deferred`)."""
        from think_nb.workspace.tools import Deferred

        key = self._workspace if self._workspace_set else "default"
        fs = self._workspace if self._workspace_set else Deferred(lambda: self.workspace)
        return key, fs, bool(self.workspace_approval)

    def _wants_workspace_tools(self) -> bool:
        if self.include_workspace_tools is not None:
            return bool(self.include_workspace_tools)
        if inspect.iscoroutinefunction(type(self.agent).get_model):
            return True  # an async get_model() is a choice of model, not the embedded default
        model = self.agent.get_model()
        return bool(getattr(model, "model", model) != LOCAL_MODEL)

    def kernel_tools(self) -> dict[str, Any]:
        """The kernel tools `include_kernel_tools` asks for (`think_nb.kernel.kernel_tools`), or {}."""
        from think_nb.errors import UserError

        setting = self.include_kernel_tools
        if setting is False or setting is None:
            return {}
        run = "ask" if setting is True else setting
        if run not in ("ask", "allow", "off"):
            raise UserError(f"include_kernel_tools={setting!r}: use True or 'ask' (run_code needs approval), 'allow', "
                            "'off' (no run_code) or False.")
        cached = self._kernel_tools
        if cached is None or cached[0] != run:
            from think_nb.kernel.toolset import kernel_tools

            cached = self._kernel_tools = (run, kernel_tools(run))  # type: ignore[arg-type]  # checked above
        return dict(cached[1])

    def undo_kernel_run(self, tool_call_id: str) -> Any:
        """`Think.undo`: `think_nb.kernel.undo.undo_call` for this agent."""
        from think_nb.kernel.undo import undo_call

        return undo_call(self.engine, self, tool_call_id)

    async def execute_tools(self) -> dict[str, Any]:
        """The built-in tools `execute` code reaches (`think_nb.tools.builtin`, rows marked
        `in_execute`: the workspace tools), before the agent's own `get_tools()`."""
        from think_nb.tools import builtin

        return await builtin.offered(builtin.BuiltinContext(self), "first", in_execute=True)

    # -- MCP and extensions (what a turn merges) -------------------------------------------------
    def mcp_state(self) -> list[dict[str, Any]]:
        """The MCP servers as `mcp_servers()` rows plus `tool_names`; what the context tab shows."""
        return self.mcp.table()

    def mcp_tools(self) -> dict[str, Any]:
        """`{name: Tool}` of the connected MCP servers' tools (what a turn merges)."""
        if not self._made("mcp"):
            return {}  # no server was ever added or restored: a turn need not import think_nb.mcp
        return self.mcp.tools()

    async def mcp_ready(self) -> None:
        """Wait for connecting MCP servers as `wait_for_mcp_connections` says (a turn, before its
        first model call)."""
        if self._made("mcp"):  # else no server is connecting
            await self.mcp.ready(self.wait_for_mcp_connections)

    async def extension_tools(self) -> dict[str, Any]:
        """`{name: Tool}` a turn merges from extensions: the model's `load_extension` /
        `list_extensions` (when `include_extension_tools`), then the loaded extensions' tools
        (after waiting for the ones restored at creation)."""
        if not self.include_extension_tools and not self._made("extensions"):
            return {}  # no extension was ever added or restored
        from think_nb.extensions.tools import extension_tools

        await self.extensions.ready()
        model_tools = (extension_tools(self.extensions, gate_writes=bool(self.workspace_approval))
                       if self.include_extension_tools else {})
        return {**model_tools, **self.extensions.tools()}

    async def extension_hook(self, name: str, ctx: Any, value: Any) -> Any:
        """Run the extensions' hook `name` after the agent's (`think_nb.extensions.hooks`)."""
        if not self._made("extensions") or not self.extensions.subscribers(name):
            return value
        return await self.extensions.run_hook(name, ctx, value)

    # -- turns -----------------------------------------------------------------------------------
    def start(self, messages: Any, request_id: str, **kw: Any) -> asyncio.Future[TurnResult]:
        """Every entry point's `TurnEngine.start` (which tells listeners `on_submitted` at once)."""
        return cast("asyncio.Future[TurnResult]", self.engine.start(messages, request_id, **kw))

    def recover_stalled_turn(self, request_id: str, partial: dict[str, Any] | None,
                             trigger: str) -> asyncio.Future[bool] | None:
        """The stall watchdog ended a turn: ask `on_chat_recovery` (`ctx.reason == "stalled"`) and
        continue the turn if it says so; `recovery_task` is the task doing it. Returns a future of
        whether a continuation will own the answer, or None (recovery is off: none will)."""
        from think_nb.turns import recovery

        routed = recovery.route_stall(self, self.engine, request_id, partial, trigger)
        if routed is None:
            return None
        self.recovery_task, continues = routed
        return continues

    @property
    def recovering(self) -> bool:
        """True while `recovery_task` (continuing a dead process's turns) runs."""
        return self.recovery_task is not None and not self.recovery_task.done()

    async def shutdown(self) -> None:
        if self._made("media_evictor"):
            self.media_evictor.cancel()
        await self.mcp.close()
        await self.extensions.close()
        self.scheduler.stop()
        browser = sys.modules.get("think_nb.browser.host")  # the browser tools were used: close the kernel's browser
        if browser is not None:
            await browser.close_browser()

    # -- listeners and client tools ---------------------------------------------------------------
    def subscribe(self, listener: Any) -> Callable[[], None]:
        """Attach a listener (`think_nb.turns.broadcast.Listener`); returns `unsubscribe()`."""
        return self.engine.subscribe(listener)

    def has_listeners(self) -> bool:
        """True when a panel, terminal or `chat()` caller listens to this agent."""
        return bool(self.engine.listeners)

    def set_client_tools(self, schemas: list[dict[str, Any]] | None) -> None:
        """Remember the panel's client tool schemas `{name, description?, parameters?}` for this and
        later turns (Think persists the last request's `clientTools`; None clears them)."""
        self.engine.set_client_tools(schemas)

    def set_last_body(self, body: dict[str, Any] | None) -> dict[str, Any] | None:
        """Remember a request's custom body for the continuations after it (Think's `lastBody`;
        `think_nb.turns.last_body`; None clears it). `UserError` for a body that is not a JSON object."""
        from think_nb.turns import last_body

        body = last_body.checked(body, "submit")
        last_body.remember(self.store.state, body)
        return body

    def client_tool_specs(self) -> list[dict[str, Any]]:
        """Python-declared client tools as `{name, description, parameters, js}` (for the panel)."""
        return self.engine.client_tool_specs()

    def client_tool_names(self) -> set[str]:
        """Names of the tools the panel runs (as merged by the latest turn), plus Python-declared ones."""
        return set(self.engine.client_tool_names) | {s["name"] for s in self.client_tool_specs()}

    # -- what the panel hub asks (think_nb.panel.hub.PanelSource) ----------------------------------------
    def streaming_turns(self) -> list[str]:
        """Request ids of the turns streaming now, oldest first (a view resumes them)."""
        return self.engine.recorder.active()

    def replay_stream(self, request_id: str) -> tuple[list[dict[str, Any]], bool, bool] | None:
        """`(chunks so far, continuation, finished)` of a recent turn's recorded stream (Think's
        resumable stream), or None when it is unknown or older than the buffer keeps."""
        return self.engine.recorder.replay(request_id)

    def pending_turns(self) -> list[str]:
        """Request ids of turns accepted but not streaming yet (queued, debouncing, starting)."""
        queue = self.engine.queue
        streaming = set(self.engine.recorder.active())
        subs = ([queue.active] if queue.active is not None else []) + list(queue.waiting)
        return [s.request_id for s in subs if s.request_id not in streaming and not queue.stale(s)]

    def queued_messages(self) -> list[dict[str, Any]]:
        """The user messages of turns accepted and not started yet, in the order they will run (a
        `%%think` cell, `agent.submit` or another panel's send while a turn runs): stored only when
        their turn starts (Think's queue), shown by every panel at once, marked queued. A submission a
        newer one superseded (`message_concurrency` latest/merge/debounce) is listed inside the newer
        one, which carries its messages; a `save_messages(fn)` turn, whose messages are not known until
        it starts, lists none. Copies of stored-to-be dicts, each `{"requestId": ..., "message": ...}`."""
        queue = self.engine.queue
        stored = {m.get("id") for m in self.conversation.messages}
        out: list[dict[str, Any]] = []
        for sub in list(queue.waiting):
            if queue.stale(sub) or callable(sub.messages):
                continue
            out.extend({"requestId": sub.request_id, "message": copy.deepcopy(message)}
                       for message in [*sub.carried, *(sub.messages or [])]
                       if isinstance(message, dict) and message.get("role") == "user"
                       and message.get("id") not in stored)
        return out

    def debouncing_turns(self) -> list[str]:
        """Request ids of turns waiting out a debounce window (`message_concurrency` debounce)."""
        queue = self.engine.queue
        return [s.request_id for s in queue.waiting if s.debounce_s and not queue.stale(s)]

    def last_terminal(self) -> tuple[str, str] | None:
        """`(request_id, status)` of the last turn when it ended `error` or `interrupted` and nothing
        ran since (Think's terminal record, replayed to a view that opens later), else None."""
        if self.engine.is_running:
            return None
        latest = self.store.streams.latest()
        return latest if latest is not None and latest[1] in ("error", "interrupted") else None

    def get_branches(self, message_id: str) -> list[dict[str, Any]]:
        self.conversation.known(message_id)
        return self.conversation.siblings(message_id)

    def branch_revisions(self, message_ids: list[str]) -> dict[str, tuple[Any, ...]]:
        """`{message id: revision of its sibling group}` for the stored ones (`MessageRows.sibling_revisions`)."""
        return self.store.messages.sibling_revisions(message_ids)


def _build_workspace_tools(fs: Any, approval: bool) -> dict[str, Any]:
    from think_nb.workspace.tools import workspace_tools

    return workspace_tools(fs, approval=approval)


def _panels_follow(agent: Any) -> None:
    """Open panels of an agent of an older object of `agent`'s class (the class cell ran again, as
    the quickstart's does: `class Calc` and `agent = Calc("q")` in one cell) with the same name and
    file now follow `agent` (`think_nb.panel.widget.follow_redefined`; issue 27 §3): a message typed
    in a panel drawn above runs the new class, whether or not `%think` runs again. Nothing to do when
    no panel was ever opened (the widget module is then not imported)."""
    widget = sys.modules.get("think_nb.panel.widget")
    if widget is not None:
        widget.follow_redefined(agent)
