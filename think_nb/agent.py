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
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from think_nb.errors import UserError
from think_nb.messages import new_id, user_message
from think_nb.models.resolve import LOCAL_MODEL, ModelConfig
from think_nb.store import MessageStore, default_db_path, open_database
from think_nb.turns.admission import TurnQueue
from think_nb.turns.result import StepContext, TurnResult

log = logging.getLogger("think_nb")

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Use the tools you are given when they help."


class Think:
    """A chat agent whose turns stream AI SDK UIMessageChunks and persist to SQLite.

    Args:
        name: the agent's name; with the class name it keys the agent's storage.
        db: SQLite file path; default `.think/<notebook-stem>.sqlite` beside the notebook
            (see `think_nb.store.location`). The resolved path is `self.db_path`.
    """

    max_steps: int = 10

    def __init__(self, name: str = "default", *, db: str | Path | None = None) -> None:
        self.name = name
        self.db_path = Path(db).expanduser().resolve() if db else default_db_path().resolve()
        cls = type(self)
        self._store = MessageStore(open_database(self.db_path), f"{cls.__name__}:{name}", cls.__name__, name)
        self._messages: list[dict] = self._store.branch()
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
        """Delete this agent's transcript (storage and views) and cancel running turns."""
        self.abort_all_requests()
        self._store.clear()
        self._messages = []
        self._broadcast_messages()

    # -- turns --------------------------------------------------------------------
    def submit(self, message: dict | str, request_id: str | None = None) -> asyncio.Task:
        """Start a turn with one user message (UIMessage or text) in the background; returns at once.

        Must be called with a running event loop (a notebook cell, a coroutine). The task's
        result is a `TurnResult`. Raises `UserError` without a running loop.
        """
        message = user_message(message) if isinstance(message, str) else message
        return self._start([message], request_id or new_id("req"))

    async def save_messages(self, messages: list[dict] | Callable[[list[dict]], list[dict]]) -> TurnResult:
        """Append messages (or `fn(current_messages) -> messages`, evaluated when the turn starts)
        and run a turn. Returns `TurnResult` with status completed | error | aborted | skipped."""
        return await self._start(messages, new_id("req"))

    async def send(self, text: str) -> TurnResult:
        """Send one user message and wait for the turn: `result = await agent.send("hi")`."""
        return await self.submit(text)

    def run(self, text: str) -> TurnResult:
        """Synchronous `send` for scripts and the terminal (no running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.send(text))
        raise UserError("agent.run() cannot be used inside a running event loop (a notebook cell); "
                        "use `await agent.send(...)`, `agent.submit(...)` or `%%think`.")

    def abort_request(self, request_id: str) -> None:
        """Cancel one turn by request id; its partial message is kept (status `aborted`)."""
        task = self._active.get(request_id)
        if task is not None:
            task.cancel()

    def abort_all_requests(self) -> None:
        """Cancel every running or queued turn of this agent."""
        for task in list(self._active.values()):
            task.cancel()

    async def wait_until_stable(self, timeout: float | None = None) -> bool:
        """Wait until no turn is running or queued (Think's `waitUntilStable`).

        Args:
            timeout: seconds to wait at most; None waits for ever.

        Returns:
            True when stable, False when the timeout passed first.
        """
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._active:
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(list(self._active.values()), timeout=remaining)
        return True

    @property
    def is_running(self) -> bool:
        """True while a turn is running or queued."""
        return bool(self._active)

    def _start(self, messages: Any, request_id: str) -> asyncio.Task:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UserError("Starting a turn needs a running event loop: use `await agent.send(...)` in a "
                            "notebook cell, or `agent.run(...)` in a script.") from None
        task = loop.create_task(self._run_turn(messages, request_id), name=f"think-turn-{request_id}")
        self._active[request_id] = task
        return task

    async def _run_turn(self, messages: Any, request_id: str) -> TurnResult:
        from think_nb.turns.runner import Turn, maybe_await

        try:
            async with self._queue.lock():
                new = await maybe_await(messages(self.get_messages())) if callable(messages) else messages
                if not new:
                    result = TurnResult(request_id, "skipped")
                else:
                    self._append_user_messages(new)
                    result = await Turn(self, request_id).run()
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            result = TurnResult(request_id, "aborted")
        finally:
            self._active.pop(request_id, None)
        self._broadcast_turn_end(result)
        if self._overrides("on_chat_response"):
            try:
                await maybe_await(self.on_chat_response(result))
            except Exception:  # noqa: BLE001 - Think logs hook errors after the turn
                log.exception("on_chat_response raised")
        return result

    # -- turn assembly (used by turns/runner.py) -----------------------------------
    async def _system_prompt_for_turn(self) -> str:
        """The system prompt of the next model call (session context blocks, else `get_system_prompt()`)."""
        from think_nb.turns.runner import maybe_await

        return await maybe_await(self.get_system_prompt())

    async def _tools_for_turn(self) -> dict:
        """The merged tools of a turn, `{name: Tool}`; later sources win (Think's merge order:
        `get_tools()` → session tools → client tools)."""
        from think_nb.tools.toolset import resolve_tools
        from think_nb.turns.runner import maybe_await

        return resolve_tools(await maybe_await(self.get_tools()))

    async def _history_for_turn(self) -> list[dict]:
        """The UIMessages the model sees (compaction overlays applied), oldest first."""
        return self.messages

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
                getattr(listener, method)(*args)
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

    # -- views ----------------------------------------------------------------------
    def panel(self) -> Any:
        """A new chat panel view of this agent (an anywidget `ChatPanel`); display it in a cell."""
        from think_nb.widget import ChatPanel

        return ChatPanel(self)
