"""`Think`: the chat-agent base class. Subclass it, override what you need, talk to it.

    from think_nb import Think, tool

    @tool
    def add(a: float, b: float) -> float:
        '''Add two numbers.'''
        return a + b

    class Calc(Think):
        def get_tools(self):
            return [add]

    agent = Calc("calc")                     # transcript in .think/<notebook>.sqlite
    result = await agent.send("What is 2 plus 40?")
    agent.panel()                            # the chat panel (what `%think Calc` shows)

Overridable (Think's names in snake_case; each may be sync or async):
    get_model()            litellm model string or ModelConfig; default: the embedded SmolLM2 model
    get_system_prompt()    the system prompt
    get_tools()            list of functions / Tools, or dict name -> tool
    max_steps              class attribute, default 10 (model calls per turn)
Hooks (no-ops by default):
    on_chunk(chunk)        every UIMessageChunk, observation only
    on_step_finish(ctx)    after each step (`StepContext`)
    on_chat_response(res)  after the turn's message is persisted and the queue released (`TurnResult`)
    on_chat_error(error)   may return a replacement error (its text is shown to the user)
This class keeps the public surface; the work is done in `turns/`, `models/`, `store/`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from think_nb.errors import UserError
from think_nb.messages import new_id, user_message
from think_nb.models.litellm_env import preload as preload_litellm
from think_nb.models.resolve import LOCAL_MODEL, ModelConfig
from think_nb.store import MessageStore, default_db_path, open_database
from think_nb.subagents import SubAgentAPI
from think_nb.turns.admission import TurnQueue
from think_nb.turns.entry import TurnEntryPoints
from think_nb.turns.interactions import Interactions
from think_nb.turns.recovery import recover_interrupted_streams
from think_nb.turns.hooks import ToolCallContext, ToolCallResultContext, TurnConfig, TurnContext
from think_nb.turns.repair import default_repair, repaired
from think_nb.turns.result import StepContext, TurnResult

log = logging.getLogger("think_nb")

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Use the tools you are given when they help."


class Think(TurnEntryPoints, Interactions, SubAgentAPI):
    """A chat agent whose turns stream AI SDK UIMessageChunks and persist to SQLite.

    Args:
        name: the agent's name; with the class name it keys the agent's storage.
        db: SQLite file path; default `.think/<notebook-stem>.sqlite` beside the notebook
            (see `think_nb.store.location`). The resolved path is `self.db_path`.
        key: storage key; default `"<ClassName>:<name>"` (sub-agents get one under their parent's).
    """

    max_steps: int = 10
    hydration_limit: int | None = 2_000
    """Messages of the current branch loaded into memory (the newest; never fewer than 4); older
    ones stay in SQLite (search, DataFrames). Think's `hydrationByteBudget`, counted in messages.
    None loads everything."""

    def __init__(self, name: str = "default", *, db: str | Path | None = None, key: str | None = None) -> None:
        self.name = name
        self.db_path = Path(db).expanduser().resolve() if db else default_db_path().resolve()
        cls = type(self)
        self._store = MessageStore(open_database(self.db_path), key or f"{cls.__name__}:{name}", cls.__name__, name)
        self._current_turn: Any = None
        self._continue_after: set[str] = set()  # messages whose client results arrived mid-turn
        self._client_tool_names: set[str] = set()
        self._steppers: dict[str, Any] = {}  # request id -> Stepper (step mode)
        preload_litellm()
        self._turns_run: dict[str, Any] = {}  # request id -> Turn, until on_chat_response has fired
        self._messages: list[dict] = self._store.branch(limit=self._hydration_limit())
        recover_interrupted_streams(self)  # a kernel that died mid-stream left chunks in the buffer
        self._listeners: list[Any] = []
        self._queue = TurnQueue()
        self._active: dict[str, asyncio.Task] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {len(self._messages)} messages in {self.db_path}>"

    # -- overridable -----------------------------------------------------------
    def get_model(self) -> str | ModelConfig:
        """The model for this turn: a litellm model string (`"openai/gpt-4o-mini"`,
        `"anthropic/claude-3-5-haiku-latest"`, `"ollama/llama3.2"`) or a `ModelConfig`.
        Default: the embedded SmolLM2-135M-Instruct model, offline (`LOCAL_MODEL`)."""
        return LOCAL_MODEL

    def get_system_prompt(self) -> str:
        """The system prompt sent first on every model call."""
        return DEFAULT_SYSTEM_PROMPT

    def get_tools(self) -> list | dict:
        """Tools offered to the model: functions or `@tool` objects, as a list or a dict name -> tool."""
        return []

    def before_turn(self, ctx: TurnContext) -> TurnConfig | dict | None:
        """Called once per turn after assembly, before the first model call. Return a `TurnConfig`
        (or a dict of its fields) to change this turn's model, system prompt, messages, tools,
        active tools, tool choice, max steps or sampling options; None keeps the defaults."""

    def before_tool_call(self, ctx: ToolCallContext) -> Any:
        """Called before each tool runs. Return None (run), `ToolCallDecision.allow(input)`,
        `ToolCallDecision.block(reason)` (the reason becomes the output; the tool does not run) or
        `ToolCallDecision.substitute(output)` (the tool does not run)."""

    def after_tool_call(self, ctx: ToolCallResultContext) -> Any:
        """Called after each tool call (run, blocked or substituted) with its input, output or
        error, success and `duration_ms`."""

    def on_chunk(self, chunk: dict) -> Any:
        """Called with every UIMessageChunk of every turn. Observation only."""

    def on_step_finish(self, ctx: StepContext) -> Any:
        """Called after each step with its text, tool calls and results, and token usage."""

    def on_chat_response(self, result: TurnResult) -> Any:
        """Called after a turn's message is persisted and the turn queue is released."""

    def on_chat_error(self, error: Exception) -> Any:
        """Called when a turn fails (the partial message is already persisted). Return an
        exception or string to replace what the user sees, or None to keep it."""

    # -- messages ---------------------------------------------------------------
    @property
    def messages(self) -> list[dict]:
        """The current branch of the transcript, oldest first (a live view; do not mutate)."""
        return list(self._messages)

    def get_messages(self) -> list[dict]:
        """A deep copy of the current branch."""
        return copy.deepcopy(self._messages)

    def clear_messages(self) -> None:
        """Delete this agent's transcript (storage and views), cancel the running turn and skip
        queued ones (Think's `clearMessages`)."""
        self._queue.invalidate()
        if self._queue.active is not None:
            self.abort_request(self._queue.active.request_id)
        self._store.clear()
        self._store.set_state("unloaded_tool_calls", None)
        if getattr(self, "_session", None) is not None:
            self._session.reset()  # Think refreshes the prompt and skill state on clear
        self._messages = []
        self._broadcast_messages()

    # -- turn assembly (used by turns/runner.py) -----------------------------------
    async def _system_prompt_for_turn(self) -> str:
        """The system prompt of the next model call (session context blocks, else `get_system_prompt()`)."""
        from think_nb.turns.runner import maybe_await

        prompt = await (await self._session_ready()).system_prompt()
        return prompt if prompt is not None else await maybe_await(self.get_system_prompt())

    async def _tools_for_turn(self) -> dict:
        """The merged tools of a turn, `{name: Tool}`; later sources win (Think's merge order:
        `get_tools()` → session tools → client tools)."""
        from think_nb.tools.toolset import resolve_tools
        from think_nb.turns.runner import maybe_await

        return {**resolve_tools(await maybe_await(self.get_tools())), **await (await self._session_ready()).tools()}

    async def _history_for_turn(self) -> list[dict]:
        """The UIMessages the model sees (compaction overlays applied), oldest first."""
        session = await self._session_ready()
        if session._threshold is None:
            return session.history()
        return await session.prepare_history(await self._system_prompt_for_turn())

    def _hydration_limit(self) -> int | None:
        return None if self.hydration_limit is None else max(4, int(self.hydration_limit))

    # -- config and branches ---------------------------------------------------------------
    def configure(self, config: Any) -> None:
        """Persist one JSON-compatible config value for this agent; survives kernel restarts
        (Think's `configure`, stored under `_think_config`)."""
        try:
            json.dumps(config, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise UserError(f"configure() needs a JSON value (dicts, lists, strings, finite numbers): {exc}") from None
        self._store.set_state("_think_config", config)

    def get_config(self) -> Any:
        """The value stored by `configure`, or None if never set (Think's `getConfig`)."""
        return self._store.get_state("_think_config")

    def get_branches(self, message_id: str) -> list[dict]:
        """The alternatives at `message_id`'s position (itself and its siblings, oldest first),
        e.g. every reply produced by `regenerate()`. Raises `UserError` for an unknown id."""
        self._known_message(message_id)
        return self._store.siblings(message_id)

    def switch_branch(self, message_id: str) -> None:
        """Make the branch through `message_id` current (following its newest descendants).
        Raises `UserError` for an unknown id (nothing changes)."""
        self._known_message(message_id)
        self._store.set_leaf(self._store.newest_leaf_under(message_id))
        self._messages = self._store.branch(limit=self._hydration_limit())
        self._broadcast_messages()

    def _known_message(self, message_id: str) -> None:
        if not isinstance(message_id, str) or self._store.get(message_id) is None:
            raise UserError(f"No message {message_id!r} in this conversation; ids are in agent.messages "
                            "and agent.get_branches(id).")

    def repair_interrupted_tool_part(self, part: dict) -> dict:
        """How a tool part left without a result is repaired before the next model call (Think's
        `repairInterruptedToolPart`): default `output-error` "The tool call was interrupted before a
        result was recorded."."""
        return default_repair(part)

    def _repair_interrupted_tools(self) -> None:
        for n, message in enumerate(self._messages):
            fixed = repaired(message, self.repair_interrupted_tool_part)
            if fixed is not None:
                self._store.update(fixed)
                self._messages[n] = fixed
                self._broadcast_messages()

    def _rewind_to_last_user_message(self) -> bool:
        for n in range(len(self._messages) - 1, -1, -1):
            if self._messages[n]["role"] == "user":
                self._store.set_leaf(self._messages[n]["id"])
                self._messages = self._messages[: n + 1]
                self._broadcast_messages()
                return True
        return False

    # -- persistence (used by turns/) ---------------------------------------------
    def _append_user_messages(self, messages: list[dict]) -> None:
        for message in messages:
            if not isinstance(message, dict) or "role" not in message or "parts" not in message:
                raise UserError(f"Not a UIMessage: {message!r}; use {{'id', 'role', 'parts': [...]}} "
                                "or think_nb.messages.user_message(text).")
            message = {**message, "id": message.get("id") or new_id("msg")}
            self._store.append(message, self._messages[-1]["id"] if self._messages else None)
            self._messages.append(message)
        self._broadcast_messages()

    def _save_assistant(self, message: dict) -> None:
        stored = copy.deepcopy(message)
        for n, existing in enumerate(self._messages):
            if existing["id"] == stored["id"]:
                self._store.update(stored)
                self._messages[n] = stored
                return
        self._store.append(stored, self._messages[-1]["id"] if self._messages else None)
        self._messages.append(stored)

    # -- listeners (panels, terminal) -------------------------------------------------
    def subscribe(self, listener: Any) -> Callable[[], None]:
        """Attach a listener with `on_chunk(request_id, chunk, continuation)`,
        `on_turn_end(request_id, status, error)` and `on_messages(messages)`; returns `unsubscribe()`."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _notify(self, method: str, *args: Any) -> None:
        for listener in list(self._listeners):
            try:
                handler = getattr(listener, method, None)  # optional methods (on_message_updated)
                if handler is not None:
                    handler(*args)
            except Exception:  # noqa: BLE001 - one broken view must not break the turn
                log.exception("listener %r failed in %s", listener, method)

    def _broadcast_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        self._notify("on_chunk", request_id, chunk, continuation)

    def _broadcast_turn_end(self, result: TurnResult) -> None:
        self._notify("on_messages", self.messages)
        self._notify("on_turn_end", result.request_id, result.status, result.error)

    def _broadcast_messages(self) -> None:
        self._notify("on_messages", self.messages)

    def _overrides(self, hook: str) -> bool:
        return getattr(type(self), hook) is not getattr(Think, hook)

    # -- session (memory) -------------------------------------------------------------
    # Thin delegation to think_nb.session (blocks, tools, compaction, search, skills, sessions)
    # and think_nb.views (DataFrames).
    def configure_session(self, session: Any) -> Any:
        """Configure this agent's memory and return the builder (Think's `configureSession`),
        called once, on first use; may be async. Default: no blocks (the prompt is
        `get_system_prompt()`). See `think_nb.session.builder.Session` for the builder methods::

            def configure_session(self, session):
                return session.with_context("memory", description="Facts learned.", max_tokens=2000)
        """
        return session

    def get_skills(self) -> list:
        """Skill sources (Think's `getSkills`): `SkillDirectory(path)` or `Skill(...)` objects.
        Their catalogue becomes the `skills` context block; the model uses `activate_skill`."""
        return []

    @property
    def session(self) -> Any:
        """This agent's `Session` (memory), configured by `configure_session` on first access."""
        if getattr(self, "_session", None) is None:
            from think_nb.session import Session

            session = Session(self)
            self._session = session
            configured = self.configure_session(session)
            self._session_pending = configured if hasattr(configured, "__await__") else None
        return self._session

    async def _session_ready(self) -> Any:
        session = self.session
        pending, self._session_pending = getattr(self, "_session_pending", None), None
        if pending is not None:
            await pending
        return session

    def context_blocks(self) -> Any:
        """The context blocks as a DataFrame: label, description, kind, writable, tokens,
        max_tokens, percent_used, content (`think_nb.views.context_blocks`)."""
        from think_nb import views

        return views.context_blocks(self)

    def messages_df(self) -> Any:
        """The current branch as a DataFrame (`think_nb.views.messages`)."""
        from think_nb import views

        return views.messages(self)

    def tool_calls_df(self) -> Any:
        """Every tool call on the current branch as a DataFrame (`think_nb.views.tool_calls`)."""
        from think_nb import views

        return views.tool_calls(self)

    def usage_df(self) -> Any:
        """Token usage and cost per turn as a DataFrame (`think_nb.views.usage`)."""
        from think_nb import views

        return views.usage(self)

    def search(self, query: str, limit: int = 20, all_sessions: bool = False) -> Any:
        """Full-text search of the transcript (FTS5) as a DataFrame, best match first."""
        from think_nb import views

        return views.search(self, query, limit, all_sessions)

    async def compact(self) -> dict | None:
        """Compact the current session now (`Session.compact`); returns the overlay or None."""
        return await (await self._session_ready()).compact()

    def sessions(self) -> Any:
        """This agent's sessions as a DataFrame (`think_nb.views.sessions`)."""
        from think_nb import views

        return views.sessions(self)

    @property
    def session_id(self) -> str:
        """The active session's id ("" = the default session)."""
        return self._store.session_id

    def create_session(self, name: str | None = None, *, switch: bool = True) -> str:
        """Create an empty session (and switch to it unless `switch=False`); returns its id."""
        from think_nb.session import sessions

        session_id = sessions.create(self, name)
        if switch:
            sessions.switch(self, session_id)
        return session_id

    def switch_session(self, ref: str) -> str:
        """Make session `ref` (id or name; "" or "default" = the default) active; returns its id."""
        from think_nb.session import sessions

        return sessions.switch(self, ref)

    def rename_session(self, ref: str, name: str) -> None:
        """Rename session `ref` (id or name)."""
        from think_nb.session import sessions

        sessions.rename(self, ref, name)

    def fork_session(self, at_message_id: str | None = None, name: str | None = None, *,
                     switch: bool = False) -> str:
        """Copy the current branch up to `at_message_id` (default: all of it) into a new session
        with new ids (Think's `SessionManager.fork`); returns its id."""
        from think_nb.session import sessions

        session_id = sessions.fork(self, at_message_id, name)
        if switch:
            sessions.switch(self, session_id)
        return session_id

    def delete_session(self, ref: str) -> None:
        """Delete session `ref` and its messages (the default session cannot be deleted)."""
        from think_nb.session import sessions

        sessions.delete(self, ref)

    # -- views ----------------------------------------------------------------------
    def panel(self) -> Any:
        """A new chat panel view of this agent (an anywidget `ChatPanel`); display it in a cell."""
        from think_nb.widget import ChatPanel

        return ChatPanel(self)
