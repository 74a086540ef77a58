"""The ways a turn starts (Think's entry points), mixed into `Think`.

- `submit(message)`: a user submission (panel, `%%think`): background task, subject to
  `message_concurrency`.
- `save_messages(messages | fn, signal=)`: programmatic turn; the function form receives the
  current messages when the turn actually starts (after queued predecessors).
- `continue_last_turn(body=None)`: one more model call after the latest assistant message,
  persisted as a new assistant message marked `metadata.continuation = True`; `skipped`
  (request id "") when the last message is not from the assistant.
- `regenerate()`: a new reply to the last user message, added as a sibling branch.
All of them go through one queue per agent and fire every hook; `abort_request`,
`abort_all_requests`, `wait_until_stable` and `has_pending_interaction` observe and stop them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from think_nb import interrupts
from think_nb.errors import UserError
from think_nb.messages import new_id, user_message
from think_nb.turns import log as turn_log
from think_nb.turns.admission import Submission
from think_nb.turns.result import TurnResult
from think_nb.turns.signal import AbortSignal

_log = logging.getLogger("think_nb")
_thread = threading.local()


def script_loop() -> asyncio.AbstractEventLoop:
    """The event loop synchronous calls (`agent.run`, a stepper's `next`) drive outside a running
    loop: one per thread, kept, so turns of one agent started from a script share one queue."""
    loop = getattr(_thread, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread.loop = asyncio.new_event_loop()
    return loop

Messages = list[dict] | Callable[[list[dict]], Any]


class TurnEntryPoints:
    """Public turn entry points of `Think` (see the module docstring)."""

    message_concurrency: Any = "queue"

    def submit(self, message: dict | str, request_id: str | None = None, *, trigger: str = "programmatic",
               body: dict | None = None, client_tools: list[dict] | None = None) -> asyncio.Task:
        """Start a turn with one user message (UIMessage or text) in the background; returns at once.

        `trigger` (`panel`, `cell`, `programmatic`) is recorded in the turn log; `client_tools`: the
        panel's own client tool schemas `{name, description?, parameters?}` (a panel request without
        them forgets earlier ones, as Think does).
        Subject to `message_concurrency` when another turn is running or queued. Needs a running
        event loop (a notebook cell, a coroutine); raises `UserError` without one. The task's
        result is a `TurnResult`.
        """
        message = user_message(message) if isinstance(message, str) else message
        if trigger == "panel" or client_tools is not None:  # a panel request without them clears them
            self.set_client_tools(client_tools)
        return self._start([message], request_id or new_id("req"), trigger=trigger, user_submit=True, body=body)

    async def send(self, text: str) -> TurnResult:
        """Send one user message and wait for the turn: `result = await agent.send("hi")`."""
        return await self.submit(text, trigger="programmatic")

    def run(self, text: str) -> TurnResult:
        """Synchronous `send` for scripts and the terminal (no running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return script_loop().run_until_complete(self.send(text))
        raise UserError("agent.run() cannot be used inside a running event loop (a notebook cell); "
                        "use `await agent.send(...)`, `agent.submit(...)` or `%%think`.")

    async def save_messages(self, messages: Messages, *, signal: AbortSignal | None = None) -> TurnResult:
        """Append messages (or `fn(current_messages) -> messages`, evaluated when the turn starts)
        and run a turn (Think's `saveMessages`).

        Returns:
            `TurnResult`: `completed`; `error` (partial persisted); `aborted` (`signal` aborted or
            `abort_request`; partial persisted); `skipped` (invalidated by `clear_messages`, or
            nothing to send).
        """
        return await self._start(messages, new_id("req"), trigger="programmatic", signal=signal)

    async def continue_last_turn(self, body: dict | None = None, *, signal: AbortSignal | None = None) -> TurnResult:
        """Run one more model call after the latest assistant message (Think's `continueLastTurn`)."""
        return await self._start([], new_id("req"), trigger="continuation", continuation=True, body=body,
                                 signal=signal)

    async def regenerate(self, request_id: str | None = None, *, signal: AbortSignal | None = None) -> TurnResult:
        """Answer the last user message again; the new reply is a sibling branch (the old one is kept,
        see `get_branches`). `request_id` lets a caller (the panel) cancel it from the start."""
        return await self._start([], request_id or new_id("req"), trigger="regenerate", regenerate=True,
                                 signal=signal)

    def step(self, message: str | dict) -> Any:
        """Start a turn in step mode: it pauses before each hook; see `think_nb.turns.stepper`.

        Returns a `Stepper`: `stepper.next()` (or `await stepper.next()`) runs to the next pause and
        returns a `HookEvent`; `stepper.run()` finishes; `stepper.cancel()` aborts.
        """
        from think_nb.turns.stepper import Stepper

        return Stepper(self, message)

    def abort_request(self, request_id: str, reason: str | None = None) -> None:
        """Cancel one turn by request id; its partial message is kept (status `aborted`). No-op for
        unknown or finished ids."""
        task = self._active.get(request_id)
        if task is not None:
            task.cancel(reason)

    def abort_all_requests(self) -> None:
        """Cancel every running or queued turn of this agent."""
        for task in list(self._active.values()):
            task.cancel()

    @property
    def is_running(self) -> bool:
        """True while a turn is running or queued."""
        return bool(self._active)

    def has_pending_interaction(self) -> bool:
        """True when a tool call waits for the user: an `approval-requested` part, or a client
        tool call without a result (Think's `hasPendingInteraction`)."""
        client = self._client_tool_names
        for message in self._messages:
            for part in message.get("parts", []):
                state = part.get("state")
                if state == "approval-requested":
                    return True
                if state == "input-available" and part.get("type", "")[len("tool-"):] in client:
                    return True
        return False

    async def wait_until_stable(self, timeout: float | None = None) -> bool:
        """Wait until no turn is running or queued and nothing waits for the user (Think's
        `waitUntilStable`). `timeout` in seconds (None: for ever); returns False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._active or self.has_pending_interaction():
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            if self._active:
                await asyncio.wait(list(self._active.values()), timeout=remaining)
            else:
                await asyncio.sleep(min(0.05, remaining) if remaining is not None else 0.05)
        return True

    def trace(self, request_id: str | None = None) -> Any:
        """The hook trace of a turn (default: the latest) as a pandas DataFrame: one row per hook call
        and per group of consecutive same-type chunks, with columns `t_ms` (offset from the turn's
        start), `kind` (hook | chunks), `hook` (hook name or chunk type), `step`, `tool`, `summary`,
        `duration_ms`. Empty when no turn was traced."""
        import pandas as pd

        from think_nb.turns import trace as turn_trace

        found = turn_trace.load(self._store.db, self._store.agent_key, request_id)
        columns = ["t_ms", "kind", "hook", "step", "tool", "summary", "duration_ms"]
        frame = pd.DataFrame(found[1] if found else [], columns=columns)
        frame["step"] = frame["step"].astype("Int64")  # nullable: hooks outside a step have none
        frame.attrs["request_id"] = found[0] if found else None
        return frame

    def recording(self, request_id: str | None = None) -> Any:
        """The recorded chunks of a turn (default: the latest) as a `Recording`; None if none."""
        from think_nb.turns import trace as turn_trace
        from think_nb.turns.replay import Recording

        found = turn_trace.load(self._store.db, self._store.agent_key, request_id)
        return Recording(found[0], [(t, c) for t, c in found[2]]) if found else None

    async def replay(self, request_id: str | None = None, *, speed: float = 1.0, recording: Any = None) -> list[dict]:
        """Play a recorded turn into this agent's views (panels, terminal) at `speed`× the recorded
        pace (0 = as fast as possible); the transcript is not changed. Returns the chunks played.
        Raises `UserError` when there is no recording."""
        from think_nb.turns.replay import play

        if not isinstance(speed, (int, float)) or speed < 0:
            raise UserError(f"replay(speed={speed!r}): use a number >= 0 (1 = recorded pace, 0 = no waiting).")
        recording = recording or self.recording(request_id)
        if recording is None:
            which = f"turn {request_id!r}" if request_id else "turn"
            raise UserError(f"No recorded {which} to replay (see agent.turns()); run a turn first, or pass "
                            "recording=Recording.load(path).")
        return await play(self, recording, speed)

    def turns(self, limit: int | None = None) -> list[dict]:
        """The turn log, oldest first: `{request_id, trigger, continuation, status, error,
        started_at, finished_at (epoch seconds), duration_ms}`."""
        return turn_log.read(self._store.db, self._store.agent_key, limit)

    # -- internals ----------------------------------------------------------------------------
    def _start(self, messages: Messages, request_id: str, *, trigger: str, user_submit: bool = False,
               continuation: bool = False, regenerate: bool = False, body: dict | None = None,
               signal: AbortSignal | None = None) -> asyncio.Task:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UserError("Starting a turn needs a running event loop: use `await agent.send(...)` in a "
                            "notebook cell, or `agent.run(...)` in a script.") from None
        sub = Submission(request_id, messages, trigger, user_submit, self._queue.generation)
        if not self._queue.admit(sub, self.message_concurrency):
            future = loop.create_future()
            future.set_result(TurnResult(request_id, "skipped"))
            self._broadcast_turn_end(future.result())
            return future  # type: ignore[return-value]
        coro = self._run_submission(sub, continuation=continuation, regenerate=regenerate, body=body, signal=signal)
        task = loop.create_task(coro, name=f"think-turn-{request_id}")
        self._active[request_id] = task
        interrupts.watch(self)
        return task

    async def _run_submission(self, sub: Submission, *, continuation: bool, regenerate: bool, body: dict | None,
                              signal: AbortSignal | None) -> TurnResult:
        if signal is not None and signal.aborted:  # pre-aborted: no inference at all
            _discard(self._queue.waiting, sub)
            self._active.pop(sub.request_id, None)
            result = TurnResult(sub.request_id, "aborted")
            self._broadcast_turn_end(result)
            return result
        remove = signal.add_listener(lambda: self.abort_request(sub.request_id)) if signal else (lambda: None)
        try:
            if sub.debounce_s:
                await asyncio.sleep(sub.debounce_s)
            async with self._queue.lock():
                self._queue.active = sub
                _discard(self._queue.waiting, sub)
                try:
                    result = await self._admitted(sub, continuation, regenerate, body, signal)
                finally:
                    self._queue.active = None
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            _discard(self._queue.waiting, sub)
            result = TurnResult(sub.request_id, "aborted")
        finally:
            self._active.pop(sub.request_id, None)
            interrupts.unwatch(self)
            remove()
        self._broadcast_turn_end(result)
        self._after_turn()
        turn = self._turns_run.pop(sub.request_id, None)
        if turn is not None:
            await self._finish_turn(turn, result)
        return result

    async def _finish_turn(self, turn: Any, result: TurnResult) -> None:
        """After the queue is released: `on_chat_response` (errors logged, as Think), then store the
        turn's trace and recording."""
        try:
            await turn.hooks.fire("on_chat_response", result)
        except Exception:  # noqa: BLE001 - Think logs hook errors after the turn
            _log.exception("on_chat_response raised")
        finally:
            self._steppers.pop(turn.request_id, None)
            turn.tracer.save(self._store.db, self._store.agent_key)

    async def _admitted(self, sub: Submission, continuation: bool, regenerate: bool, body: dict | None,
                        signal: AbortSignal | None) -> TurnResult:
        from think_nb.turns.runner import Turn, maybe_await

        if self._queue.stale(sub):
            return TurnResult(sub.request_id, "skipped")
        if signal is not None and signal.aborted:  # aborted while queued
            return TurnResult(sub.request_id, "aborted")
        if continuation and (not self._messages or self._messages[-1]["role"] != "assistant"):
            return TurnResult("", "skipped", continuation=True)
        if regenerate and not self._rewind_to_last_user_message():
            return TurnResult(sub.request_id, "skipped")
        messages = sub.messages(self.get_messages()) if callable(sub.messages) else sub.messages
        new = sub.carried + list(await maybe_await(messages) or [])
        if not new and not (continuation or regenerate):
            return TurnResult(sub.request_id, "skipped")
        self._repair_interrupted_tools()
        self._append_user_messages(new)
        started = turn_log.record_start(self._store.db, self._store.agent_key, sub.request_id, sub.trigger,
                                        continuation)
        turn = Turn(self, sub.request_id, continuation=continuation, body=body, trigger=sub.trigger,
                    generation=sub.generation)
        self._turns_run[sub.request_id] = turn
        result = await turn.run()
        turn_log.record_finish(self._store.db, self._store.agent_key, sub.request_id, result.status, result.error,
                               started)
        return result


def _discard(items: list, item: Any) -> None:
    if item in items:
        items.remove(item)
