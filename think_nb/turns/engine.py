"""`TurnEngine`: one per agent; owns every turn's life from entry to report.

    entry (submit, save_messages, continue_last_turn, regenerate, step, chat, approve/deny,
           add_tool_output)
      → admission (`TurnQueue`: one queue per agent, `message_concurrency`, clear's generation)
      → assemble (`assemble.py`: prompt, tools, history; `before_turn`)
      → steps (`runner.Turn`: model call → chunks → tools, `tool_calls.StepTools`)
      → persist (`Conversation`; the stream is recorded by `StreamRecorder` as it goes)
      → respond (listeners, turn log, `on_chat_response`, trace), still holding the queue

State the engine owns: the queue, the running tasks, the turn being streamed, steppers, the
calls whose client results arrived mid-turn, the live tracers, the recorder, the listeners.
It talks to the agent only through `AgentHost` (`host.py`). `Think` keeps the public surface
and delegates here.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from think_nb import events, interrupts
from think_nb.aio import close_unawaited, maybe_await
from think_nb.errors import InternalError, UserError
from think_nb.messages import new_id, validate
from think_nb.messages.accumulator import SETTLED_TOOL_STATES, is_tool_part, tool_name_of
from think_nb.tools.tool import PAUSE_PREFIX, dump_output
from think_nb.turns import assemble, blame, last_body, stash
from think_nb.turns.admission import Submission, TurnQueue
from think_nb.turns.broadcast import Event, Listeners
from think_nb.turns.hooks import user_code
from think_nb.turns.host import AgentHost
from think_nb.turns.recorder import StreamRecorder
from think_nb.turns.repair import checked_repair, repaired
from think_nb.turns.result import SKIPPED, TurnResult
from think_nb.turns.signal import AbortSignal
from think_nb.turns.structured import check_output_type
from think_nb.turns.task import TurnTask

log = logging.getLogger("think_nb")
DEFAULT_TOOL_ERROR = "Tool execution denied by user"
Messages = list[dict] | Callable[[list[dict]], Any]
_RESPONDING: contextvars.ContextVar[tuple[Any, Submission] | None] = contextvars.ContextVar(
    "think_nb_responding", default=None)  # (engine, submission) while that submission's on_chat_response runs
_IN_TURN: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "think_nb_in_turn", default=None)  # (engine, request id) of the admitted turn running in this context
NESTED_TEXT = ("agent.{entry}() cannot be called from inside an active turn of this agent (one of its tools or "
               "hooks): it would wait for that turn, which waits for it. Use agent.add_messages(messages) to add "
               "messages without a turn, or agent.submit(message) without awaiting it (or "
               "agent.run_turn(input, mode=\"submit\")) to run a turn after this one.")
"""The `UserError` of a nested blocking entry (Think's `_assertNotInsideAdmittedTurn`)."""


class TurnEngine:
    """Runs the turns of one agent (see the module docstring)."""

    def __init__(self, host: AgentHost) -> None:
        self.host = host
        self.conversation = host.conversation
        self.store = host.store
        self.listeners = Listeners()
        self.recorder = StreamRecorder(host.store.streams, self._broadcast_chunks)
        self.queue = TurnQueue()
        self.active: dict[str, asyncio.Task] = {}
        self.unstarted: dict[str, bool] = {}  # request id -> stopped, for a task whose code has not run yet
        self.stop_on_start: set[str] = set()  # turns stopped before their task ran, with nothing ahead of them
        self.steppers: dict[str, Any] = {}  # request id -> Stepper (step mode)
        self.turns_run: dict[str, Any] = {}  # request id -> Turn, until on_chat_response has fired
        self.current_turn: Any = None
        self.continue_after: set[str] = set()  # messages whose client results arrived mid-turn
        self.structured_waits: dict[str, Any] = {}  # message id -> the output_type of the turn paused on it
        self.client_tool_names: set[str] = set()
        self.rpc_tools: dict[str, dict[str, Any]] = {}  # request id -> the client tools chat() gave that turn only
        self.responding: dict[str, asyncio.Task] = {}  # request id -> its task, while on_chat_response runs
        self.stall_outcomes: dict[str, Any] = {}  # chat() turns the watchdog ended: future[continuation will run]
        self.resolved_model: str | None = None  # the last turn's model, for sync readers
        self.resolved_tools: dict[str, Any] | None = None  # the last turn's tools, for sync readers

    # -- listeners --------------------------------------------------------------------------
    def subscribe(self, listener: Any) -> Callable[[], None]:
        """Attach a listener (see `broadcast.py`); returns `unsubscribe()`."""
        return self.listeners.add(listener)

    def notify(self, event: Event, *args: Any) -> None:
        """Tell every listener `event` (a declared `think_nb.turns.broadcast.Event`)."""
        self.listeners.notify(event, *args)

    def publish_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        """Record a chunk in the stream; the recorder broadcasts it once it is in SQLite
        (write-ahead: a view never hears of an unrecorded chunk; `turns/recorder.py`)."""
        self.recorder.record(request_id, chunk, continuation)

    def publish_deltas(self, request_id: str, deltas: list[dict], continuation: bool) -> None:
        """`publish_chunk` for a run of delta chunks a turn held (`Turn.release`)."""
        self.recorder.record_deltas(request_id, deltas, continuation)

    def _broadcast_chunks(self, request_id: str, chunks: list[dict], joined: list[dict], continuation: bool) -> None:
        self.listeners.notify_chunks(request_id, chunks, joined, continuation)

    def messages_changed(self) -> None:
        self.listeners.notify("on_messages", self.conversation.messages)

    def _turn_ended(self, result: TurnResult) -> None:
        self.recorder.end(result.request_id, result.status)
        self.listeners.notify("on_messages", self.conversation.messages)
        self.listeners.notify("on_turn_end", result.request_id, result.status, result.error)

    # -- entry ------------------------------------------------------------------------------
    def start(self, messages: Messages, request_id: str, *, trigger: str, user_submit: bool = False,
              continuation: bool = False, regenerate: bool = False, body: dict | None = None,
              signal: AbortSignal | None = None,
              extra_parts: dict[str, Awaitable[list[dict]]] | None = None, output_type: Any = None,
              expect_last: str | None = None, fork: Any = None) -> asyncio.Future:
        """Admit a turn and run it as a task on the running loop; returns the task (or a finished
        future with a `skipped` result when admission drops it). Raises `UserError` without a loop.
        `extra_parts` (`{message id: awaitable of parts}`): parts prepared off the loop, awaited when
        the turn starts (in queue order) and appended to that message before it is stored.
        `output_type`: a pydantic model class for a structured turn (`UserError` otherwise, before
        anything is stored; `think_nb.turns.structured`). `expect_last`: the message id the branch
        must still end with when the turn starts, else it is `skipped` (recovery turns). `fork`: a
        `think_nb.turns.fork.ForkPlan`: the turn answers the recorded turn's message again (the
        branch is moved there first, as regenerate does) and reproduces it up to the fork point."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise UserError("Starting a turn needs a running event loop: use `await agent.send(...)` in a "
                            "notebook cell, or `agent.run(...)` in a script.") from None
        check_output_type(output_type)
        if not callable(messages):
            messages = self.admit_messages(messages)  # refused here, before anything is queued or stored
        sub = Submission(request_id, messages, trigger, user_submit, self.queue.generation,
                         extra_parts=dict(extra_parts or {}), output_type=output_type, parent=self._responding(),
                         expect_last=expect_last, fork=fork)
        if not self.queue.admit(sub, self.host.message_concurrency):
            future = loop.create_future()
            future.set_result(TurnResult(request_id, "skipped", reason=SKIPPED["dropped"]))
            self._turn_ended(future.result())
            return future
        coro = self._run_submission(sub, continuation=continuation, regenerate=regenerate, body=body, signal=signal)
        task = TurnTask(coro, loop=loop, request_id=request_id)  # an asyncio.Task with a readable repr
        self.active[request_id] = task
        self.unstarted[request_id] = False
        if sub.parent is not None:  # started by an on_chat_response: the parent keeps the queue until it ends
            sub.parent.children.append(task)
        interrupts.watch(self)
        self.listeners.notify("on_submitted", request_id, task)  # panels show `submitted` (and Stop) at once
        return task

    def refuse_nested(self, entry: str) -> None:
        """Raise `UserError` (`NESTED_TEXT`, naming `add_messages` and `submit`) when called from
        inside this agent's admitted turn (a hook or a tool of it): `entry` would start a turn and
        wait for it behind the running one, forever (Think's nested admission guard: `wait`,
        `stream`, `continuation`, `saveMessages`, `chat`, `continueLastTurn` throw inside an active
        turn). `on_chat_response` runs after the turn and may start one."""
        current = _IN_TURN.get()  # a task the turn started that outlives it (a scheduler) carries an ended one
        if current is not None and current[0] is self and current[1] in self.active:
            raise UserError(NESTED_TEXT.format(entry=entry))

    async def add_messages(self, messages: Messages, parent_id: Any = ..., broadcast: bool = True) -> list[dict]:
        """Store `messages` (or `fn(current) -> messages`) without a turn (Think's `addMessages`);
        returns the messages stored. `parent_id`: `...` the leaf, None the root, else a stored id
        (`UserError` if unknown); the batch is chained linearly and its last message becomes the
        leaf. Validated as `save_messages`' messages (`admit_messages`). Views are told unless
        `broadcast` is False or a turn is streaming (its next update carries them, as in Think)."""
        if callable(messages):
            with user_code(getattr(messages, "__name__", "messages"), subject="add_messages"):
                messages = await maybe_await(messages(copy.deepcopy(self.conversation.messages)))
        if parent_id is not ... and parent_id is not None and self.conversation.get(parent_id) is None:
            raise UserError(f"add_messages: parent_id {parent_id!r} does not exist in this session; ids are in "
                            "agent.messages and agent.get_branches(id).")
        new = self.admit_messages(messages)  # refused before anything is stored
        if not new:
            return []
        if parent_id is ...:
            with self.store.transaction():  # all or none
                stored = [self.conversation.append(message) for message in new]
        else:
            stored = self.conversation.attach(new, parent_id)
        if broadcast and self.current_turn is None:
            self.messages_changed()
        self._grew()
        return stored

    def abort_request(self, request_id: str, reason: str | None = None) -> None:
        """Abort one turn: its flag is set first (nothing it streams after this is kept, even if
        the awaited code swallows the cancellation), then its task is cancelled."""
        turn = self.turns_run.get(request_id)
        if turn is not None:
            turn.abort()
            try:  # what streamed before the abort reaches the views now; after it, only the abort chunk
                turn.release()
                self.recorder.flush(request_id)
            except Exception:
                log.exception("could not flush the stream of %s at its abort", request_id)
        task = self.active.get(request_id)
        if request_id in self.unstarted:  # cancelled now, its task would run none of its code (no cleanup):
            self.unstarted[request_id] = True  # it ends `aborted` as it starts
        elif task is not None:
            task.cancel(reason)

    def abort_all(self) -> None:
        for request_id in list(self.active):
            self.abort_request(request_id)

    @property
    def is_running(self) -> bool:
        return bool(self.active)

    def has_pending_interaction(self) -> bool:
        """True when a tool call waits for the user (Think's `hasPendingInteraction`): a part
        `approval-requested`, or `input-available` for a client tool (`known_client_tools`: also
        after a restart, when no turn has run yet), in the branch or in the turn streaming now.
        A server tool's `input-available` orphan does not count: nothing will answer it."""
        parts = [p for m in self._messages_in_play() for p in m.get("parts", []) if is_tool_part(p)]
        if any(p.get("state") == "approval-requested" for p in parts):
            return True
        waiting = [p for p in parts if p.get("state") == "input-available"]
        if not waiting:
            return False
        client = self.known_client_tools()
        return any(tool_name_of(p) in client for p in waiting)

    def _messages_in_play(self) -> list[dict]:
        """The branch, and the streaming turn's message when it is not stored yet (or stored older)."""
        messages = list(self.conversation)
        turn = self.current_turn
        if turn is not None:
            messages.append(turn.acc.message)
        return messages

    async def wait_until_stable(self, timeout: float | None = None) -> bool:
        """Think's `waitUntilStable`: until no turn runs or is queued, no `on_chat_response` runs
        (the queue is still held; not counting the one calling this, which would wait for
        itself) and nothing waits for the user. `timeout` in seconds; False when it passed."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        me = asyncio.current_task()

        def busy() -> list[asyncio.Task]:
            return [*self.active.values(), *(t for t in self.responding.values() if t is not me)]

        while busy() or self.has_pending_interaction():
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            if busy():
                await asyncio.wait(busy(), timeout=remaining)
            else:
                await asyncio.sleep(min(0.05, remaining) if remaining is not None else 0.05)
        return True

    def clear(self) -> None:
        """Cancel the running turn, skip queued ones, delete the transcript and its stream rows."""
        self.queue.invalidate()
        self.structured_waits.clear()
        if self.queue.active is not None:
            self.abort_request(self.queue.active.request_id)
        calls = [p.get("toolCallId") for m in self.conversation for p in m.get("parts", []) if is_tool_part(p)]
        self.conversation.clear()
        for call_id in calls:  # no call of the cleared transcript can resume
            self.store.state.delete(PAUSE_PREFIX + str(call_id))
        self.store.approvals.forget([str(c) for c in calls])  # nor decide a new call with a reused id
        self.store.actions.forget_calls([str(c) for c in calls])  # nor replay an action call's result for it
        self.store.child_runs.forget([str(c) for c in calls])  # nor a sub-agent's answer (think_nb.agent_tools)
        self.set_client_tools(None)  # Think: clear forgets the client tool schemas of the last request
        last_body.remember(self.store.state, None)  # and its custom body
        self.client_tool_names = set()
        self.recorder.clear()
        self.listeners.notify("on_clear")
        self.messages_changed()

    # -- running ----------------------------------------------------------------------------
    async def _run_submission(self, sub: Submission, *, continuation: bool, regenerate: bool, body: dict | None,
                              signal: AbortSignal | None) -> TurnResult:
        stopped = self.unstarted.pop(sub.request_id, False)  # Stop came before this line first ran
        if stopped and self.queue.active is None and not self.queue.lock(sub).locked():
            # nothing ahead of it: it ends as a turn stopped as it starts does (its message stored,
            # one `abort` chunk: the panels say "stopped before the model answered")
            self.stop_on_start.add(sub.request_id)
            stopped = False
        if stopped or (signal is not None and signal.aborted):  # pre-aborted: no inference at all
            _discard(self.queue.waiting, sub)
            self.active.pop(sub.request_id, None)
            interrupts.unwatch(self)
            result = TurnResult(sub.request_id, "aborted")
            self._turn_ended(result)
            return result
        _RESPONDING.set(None)  # this task's context was copied from its starter's: it is not in a hook
        _IN_TURN.set(None)  # nor in its starter's turn (a tool's `submit` runs after that turn)
        lock = self.queue.lock(sub)
        remove = signal.add_listener(lambda: self.abort_request(sub.request_id)) if signal else (lambda: None)
        held = False
        try:
            if sub.debounce_s:
                await asyncio.sleep(sub.debounce_s)
            await lock.acquire()
            held = True
            result = await self._holding_queue(sub, continuation, regenerate, body, signal)
        except (asyncio.CancelledError, KeyboardInterrupt):
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            _discard(self.queue.waiting, sub)
            result = TurnResult(sub.request_id, "aborted")
        except BaseException as exc:  # before or around the turn (admission, storage): named by its source
            error = blame.classify(exc, self.host.agent)
            if isinstance(error, InternalError):
                log.error("turn %s: %s", sub.request_id, error, exc_info=exc)
            _discard(self.queue.waiting, sub)
            result = TurnResult(sub.request_id, "error", str(error))
        finally:
            self.active.pop(sub.request_id, None)
            interrupts.unwatch(self)
            remove()
        try:
            if sub.output_type is not None and result.waiting and result.message:  # its continuation answers it
                self.structured_waits[str(result.message.get("id"))] = sub.output_type
            self._turn_ended(result)
            self._after_turn()
            turn = self.turns_run.pop(sub.request_id, None)
            if turn is not None:
                self.responding[sub.request_id] = asyncio.current_task()  # type: ignore[assignment]
                await self._finish_turn(turn, sub, result)
        finally:
            self.responding.pop(sub.request_id, None)
            if held:  # the next queued turn starts only now: after on_chat_response (Think awaits it in the turn)
                lock.release()
        self._grew()
        if result.interrupted:  # the stall watchdog ended it: bounded recovery (Think's stall routing)
            continues = self.host.recover_stalled_turn(sub.request_id, result.message, sub.trigger)
            if continues is not None and sub.trigger == "chat":  # its caller asks `continuation_scheduled`
                self.stall_outcomes[sub.request_id] = continues
        stash.drop(self.store, sub.request_id)  # ended here: its checkpoint goes (recovery read it already)
        return result

    async def continuation_scheduled(self, request_id: str) -> bool:
        """For a turn the stall watchdog ended: True once `on_chat_recovery` has decided that a
        continuation owns the answer, False when none will (recovery off, declined, exhausted).
        Asked once per turn (by `chat()`, Think's `onInterrupted` rule)."""
        continues = self.stall_outcomes.pop(request_id, None)
        return bool(await continues) if continues is not None else False

    async def _holding_queue(self, sub: Submission, continuation: bool, regenerate: bool, body: dict | None,
                             signal: AbortSignal | None) -> TurnResult:
        """Run `sub` as the queue's active submission (restoring the one before: a child runs while
        its parent still holds the queue)."""
        previous, self.queue.active = self.queue.active, sub
        _discard(self.queue.waiting, sub)
        token = _IN_TURN.set((self, sub.request_id))  # its hooks and tools may not wait for a turn (`refuse_nested`)
        try:
            with events.scope(self.host.key, sub.request_id):  # what its hooks and tools emit is this turn's
                return await self._admitted(sub, continuation, regenerate, body, signal)
        finally:
            _IN_TURN.reset(token)
            self.queue.active = previous

    def _responding(self) -> Submission | None:
        """The submission of this agent whose `on_chat_response` is running in this context, if any."""
        current = _RESPONDING.get()
        if current is None or current[0] is not self or not current[1].responding:
            return None
        return current[1]

    async def _admitted(self, sub: Submission, continuation: bool, regenerate: bool, body: dict | None,
                        signal: AbortSignal | None) -> TurnResult:
        from think_nb.turns.runner import Turn

        conversation = self.conversation
        if conversation.sync():  # another process appended to this agent since
            self.messages_changed()
        if self.queue.stale(sub):
            return TurnResult(sub.request_id, "skipped", reason=SKIPPED["stale"])
        if signal is not None and signal.aborted:  # aborted while queued
            return TurnResult(sub.request_id, "aborted")
        if sub.expect_last is not None and (conversation.last or {}).get("id") != sub.expect_last:
            return TurnResult(sub.request_id, "skipped", continuation=continuation, reason=SKIPPED["superseded"])
        if continuation and (conversation.last is None or conversation.last["role"] != "assistant"):
            return TurnResult("", "skipped", continuation=True,  # Think: {requestId: "", status: "skipped"}
                              reason=SKIPPED["nothing-to-continue"])
        if sub.fork is not None:  # a sibling of the recorded reply, under the message it answered
            conversation.set_leaf(sub.fork.parent_id)
            self.messages_changed()
        if regenerate:
            if not conversation.rewind_to_last_user():
                return TurnResult(sub.request_id, "skipped", reason=SKIPPED["nothing-to-regenerate"])
            self.messages_changed()
        if callable(sub.messages):  # save_messages(fn): the caller's function of the current messages
            with user_code(getattr(sub.messages, "__name__", "messages"), subject="save_messages"):
                messages = await maybe_await(sub.messages(copy.deepcopy(conversation.messages)))
        else:
            messages = sub.messages
        new = self.admit_messages(sub.carried + list(messages or []))  # again: the branch moved
        for message in new:
            if message.get("id") in sub.extra_parts:  # e.g. attached data, described in a worker thread
                message["parts"] = [*message["parts"], *await sub.extra_parts[message["id"]]]
        if not new and not (continuation or regenerate or sub.fork is not None):
            return TurnResult(sub.request_id, "skipped", reason=SKIPPED["no-new-messages"])
        self.repair_interrupted_tools()
        try:
            with self.store.transaction():  # a kill leaves both the user messages and the turn's row, or neither
                for message in new:
                    conversation.append(message)
                started = self.store.turn_log.start(sub.request_id, sub.trigger, continuation)
        except BaseException:
            conversation.reload()  # rolled back: memory shows what is stored
            raise
        self.messages_changed()
        if body is None and (continuation or sub.trigger == "recovery-retry"):  # Think: the last request's body
            body = last_body.last(self.store.state)
        turn = Turn(self, sub.request_id, continuation=continuation, body=body, trigger=sub.trigger,
                    generation=sub.generation, output_type=sub.output_type, fork=sub.fork)
        self.turns_run[sub.request_id] = turn
        if sub.request_id in self.stop_on_start:
            self.stop_on_start.discard(sub.request_id)
            turn.abort()  # it stops at its first hook, before the model is called
        outcome: tuple[str, str | None] = ("error", "the turn ended without an outcome")
        fields = _turn_fields(sub, continuation)
        events.emit("chat:turn:start", fields)
        try:
            result = await turn.run()
            outcome = (result.status, result.error)
            return result
        except BaseException as exc:
            outcome = ("error", str(blame.classify(exc, self.host.agent)))
            raise
        finally:  # the turn log never stays `running` for a turn that ended
            try:
                self.store.turn_log.finish(sub.request_id, outcome[0], outcome[1], started)
            except Exception:
                log.exception("could not settle turn %s in the turn log", sub.request_id)
            events.emit("chat:turn:finish", {**fields, "status": outcome[0], "duration_ms": _ms_since(started),
                                             **({"error": outcome[1]} if outcome[1] else {})})

    async def _finish_turn(self, turn: Any, sub: Submission, result: TurnResult) -> None:
        """While the turn still holds the queue: `on_chat_response` (errors logged, as Think), then
        every turn the hook started (`Submission.parent`), then store the turn's trace."""
        sub.responding = True
        token = _RESPONDING.set((self, sub))
        try:
            await turn.hooks.fire("on_chat_response", result)
        except (Exception, KeyboardInterrupt) as exc:  # raised out of the turn's task, it would stop the event loop
            error = blame.classify(exc, self.host.agent) if isinstance(exc, Exception) else type(exc).__name__
            log.error("turn %s ended %s; then %s", turn.request_id, result.status, error, exc_info=exc)
        finally:
            _RESPONDING.reset(token)
            self.steppers.pop(turn.request_id, None)
            turn.tracer.save(self.store.traces)
            try:
                turn.save_record()
            except Exception:  # a record that cannot be stored costs the turn nothing but its forks
                log.exception("could not store the record of turn %s", turn.request_id)
        try:
            while sub.children:  # a chained turn the hook did not await still runs before the next queued one
                await asyncio.wait(list(sub.children))
                sub.children = [t for t in sub.children if not t.done()]
        finally:
            sub.responding = False

    def live_tracer(self, request_id: str | None = None) -> Any:
        """The tracer of a turn that has not finished reporting (the newest when `request_id` is
        None), or None: `agent.trace()` reads it while a turn runs or is paused in step mode."""
        if request_id is not None:
            turn = self.turns_run.get(request_id)
            return turn.tracer if turn is not None else None
        return next(reversed(self.turns_run.values())).tracer if self.turns_run else None

    # -- persistence ------------------------------------------------------------------------
    def admit_messages(self, messages: Any) -> list[dict]:
        """The trust boundary for incoming messages (`think_nb.messages.validate.admit`): checked
        before anything is stored; resent identical messages dropped; `UserError` otherwise."""
        return validate.admit(messages, self.conversation.get)

    def save_assistant(self, message: dict, generation: int | None) -> None:
        """Persist a turn's assistant message, unless the conversation was cleared under the turn."""
        if generation is not None and generation != self.queue.generation:
            return
        self.conversation.save(message)

    def repair_interrupted_tools(self) -> None:
        """Settle tool parts left without a result (Think's `repairInterruptedToolPart`). Only a
        message that is not final can hold one (`think_nb.messages.final`): when every message
        is, nothing is read further (the usual case; `Conversation.unfinished` looks only past the
        final messages it already counted)."""
        if not self.conversation.unfinished():
            return
        settled: list[str] = []

        def repair(part: dict) -> dict:
            settled.append(str(part.get("toolCallId")))
            with user_code("repair_interrupted_tool_part", self.host.agent):
                value = self.host.repair_interrupted_tool_part(part)
            return checked_repair(part, value)

        if self.conversation.rewrite(lambda m: repaired(m, repair, self.store.approvals.used)):
            for call_id in settled:  # superseded or interrupted: it never resumes
                self.store.state.delete(PAUSE_PREFIX + call_id)
            self.messages_changed()
            events.emit("chat:transcript:repaired", {"removed_tool_calls": len(settled), "normalized_inputs": 0,
                                                     "tool_call_ids": list(settled)}, agent=self.host.key)

    def replace_message(self, message: dict) -> None:
        """Store a new version of a message of the branch and tell the views (what was stored)."""
        self.listeners.notify("on_message_updated", self.conversation.replace(message))

    # -- interactions: approvals and client tools ---------------------------------------------
    def pending_approvals(self) -> list[dict]:
        return [_pending(m, p) for m in self.conversation for p in m.get("parts", [])
                if is_tool_part(p) and p.get("state") == "approval-requested"]

    def decide(self, tool_call_id: str, approved: bool, reason: str | None, auto_continue: bool,
               edited_input: Any = None) -> asyncio.Task | None:
        """`approve` / `deny`: the only way a gated call moves on. `edited_input` (approvals only):
        the input the user approved instead of the model's, validated against the tool's schema
        first (`UserError` naming the bad field; nothing is recorded); the ledger keeps both, the
        part's `approval.input` shows it, and the call runs with it (`Approvals.claim`)."""
        message, part = self._find_part(tool_call_id, ("approval-requested",))
        approval = {**(part.get("approval") or {}), "approved": approved}
        if reason:
            approval["reason"] = reason
        if edited_input is not None:
            if not approved:
                raise UserError("An edited input is for approve(), not deny(); nothing was changed.")
            if isinstance((part.get("approval") or {}).get("descriptor"), dict):
                raise UserError(f"Tool call {tool_call_id!r} is an action's, or an `execute` paused inside its run "
                                "at a gated inner call, so its input cannot be edited now; approve or deny it. "
                                "Nothing was changed.")
            edited_input = self._checked_edit(part, edited_input)
            if edited_input == part.get("input"):
                edited_input = None  # unchanged: an approval as proposed
            else:
                approval["input"] = edited_input
        self.store.approvals.record(tool_call_id, approval.get("id"), approved, reason, part.get("input"),
                                    edited_input)
        part.update(state="approval-responded" if approved else "output-denied", approval=approval)
        if not approved:  # a denied call never resumes: what its tool kept to resume goes now
            self.store.state.delete(PAUSE_PREFIX + tool_call_id)
        events.emit("tool:approval", {"tool_call_id": tool_call_id, "approved": approved}, agent=self.host.key)
        return self._apply_and_continue(message, auto_continue)

    def _checked_edit(self, part: dict, edited: Any) -> dict:
        """`edited` validated as the input of the part's tool (the tools of the latest turn, else
        `get_tools()` now); `UserError` when it is not an object, the tool is unknown, or the schema
        refuses it. Returns the input as given (what is stored and run is what the user wrote)."""
        from think_nb.tools.tool import ToolInputError
        from think_nb.tools.toolset import resolve_tools

        name = tool_name_of(part)
        if not isinstance(edited, dict):
            raise UserError(f"The edited input of tool call {part.get('toolCallId')!r} must be a dict of the "
                            f"tool's arguments, e.g. {{'code': '...'}}, not {type(edited).__name__}; nothing was "
                            "changed.")
        tools = dict(self.resolved_tools or {})
        if name not in tools:
            found = self.host.get_tools()
            if asyncio.iscoroutine(found):
                close_unawaited(found)
            else:
                tools.update(resolve_tools(found))
        tool = tools.get(name)
        if tool is None:
            raise UserError(f"Tool {name!r} is not among the agent's tools now, so its edited input cannot be "
                            "checked; approve it as proposed or deny it. Nothing was changed.")
        try:
            tool.validate(edited)
        except ToolInputError as exc:
            raise UserError(f"{exc}; nothing was changed (the call still waits for approval).") from None
        return copy.deepcopy(edited)

    def add_tool_output(self, tool_call_id: str, output: Any, error_text: str | None, state: str | None,
                        auto_continue: bool) -> asyncio.Task | None:
        failed = state == "output-error" or error_text is not None
        output = dump_output(output)  # JSON-compatible before anything changes (sets, datetimes, objects)
        chunk = ({"type": "tool-output-error", "toolCallId": tool_call_id,
                  "errorText": error_text or DEFAULT_TOOL_ERROR}
                 if failed else {"type": "tool-output-available", "toolCallId": tool_call_id, "output": output})
        turn = self.current_turn
        in_flight = turn.acc.find_tool_part(tool_call_id) if turn is not None else None
        if in_flight is not None and not self._is_client_call(in_flight):
            raise UserError(f"Tool call {tool_call_id!r} is a server tool ({tool_name_of(in_flight)!r}); only a "
                            "client tool's result can be sent; nothing was changed.")
        if turn is not None and in_flight is not None and _waiting(in_flight, ("input-available",)):
            turn.acc.apply(chunk)  # in flight: persisted with the turn; the barrier runs when it ends
            turn.publish(chunk)
            if auto_continue:
                self.continue_after.add(turn.acc.message["id"])
            self._client_result(in_flight)
            return None
        # only calls waiting for a client result: a tool that needs approval never gets an output
        # from a frame (Think also accepts approval states here; think_nb does not)
        message, part = self._find_part(tool_call_id, ("input-available",))
        if not self._is_client_call(part):
            raise UserError(f"Tool call {tool_call_id!r} is a server tool ({tool_name_of(part)!r}); only a "
                            "client tool's result can be sent; nothing was changed.")
        if failed:
            part.update(state="output-error", errorText=chunk["errorText"])
        else:
            part.update(state="output-available", output=output)
        self._client_result(part)
        return self._apply_and_continue(message, auto_continue)

    def _client_result(self, part: dict) -> None:
        events.emit("tool:result", {"tool_call_id": part.get("toolCallId"), "tool_name": tool_name_of(part)},
                    agent=self.host.key)

    def _is_client_call(self, part: dict) -> bool:
        """True when `part` calls a client tool (`known_client_tools`)."""
        return tool_name_of(part) in self.known_client_tools()

    def known_client_tools(self) -> set[str]:
        """Names of the tools the browser answers: those the latest turn merged as client tools,
        the Python-declared ones (`client_tool`), and those of the panel's stored schemas (Think's
        `lastClientTools`, kept in SQLite, so a restarted kernel still knows a call waits for the
        browser), except a name the agent's own server tools hold. A `get_tools()` that raises is
        not asked here: the last turn's tools are used (its error is the next turn's to report)."""
        try:
            local = self._local_tools()
        except Exception:  # noqa: BLE001 - user code, reported where a turn calls it
            local = dict(self.resolved_tools or {})
        stored = self.store.state.get(assemble.LAST_CLIENT_TOOLS) or []
        panel = {str(s.get("name")) for s in stored if isinstance(s, dict) and s.get("name")} - \
            {n for n, t in local.items() if not t.client}
        return set(self.client_tool_names) | {n for n, t in local.items() if t.client} | panel

    def set_client_tools(self, schemas: list[dict] | None) -> None:
        self.store.state.set(assemble.LAST_CLIENT_TOOLS, list(schemas) if schemas else None)

    def client_tool_specs(self) -> list[dict]:
        """Python-declared client tools as `{name, description, parameters, js}` (for the panel)."""
        return [{"name": t.name, "description": t.description, "parameters": t.parameters, "js": t.js}
                for t in self._local_tools().values() if t.client and t.js]

    def _local_tools(self) -> dict[str, Any]:
        """`get_tools()` resolved now, `{name: Tool}`. An async `get_tools()` cannot run here: the
        tools of the last turn are used (none before)."""
        from think_nb.tools.toolset import resolve_tools

        tools = self.host.get_tools()
        if asyncio.iscoroutine(tools):
            close_unawaited(tools)
            return dict(self.resolved_tools or {})
        return resolve_tools(tools)

    def _apply_and_continue(self, message: dict, auto_continue: bool) -> asyncio.Task | None:
        """Store the changed message, start the continuation (if the batch is complete), then tell
        the views, so they never see a "ready" gap between the two."""
        message = self.conversation.replace(message)
        task = self._continue_if_settled(message) if auto_continue else None
        self.listeners.notify("on_message_updated", message)
        return task

    def _find_part(self, tool_call_id: str, states: tuple[str, ...]) -> tuple[dict, dict]:
        for message in reversed(self.conversation.messages):
            for part in message.get("parts", []):
                if is_tool_part(part) and part.get("toolCallId") == tool_call_id:
                    if part.get("state") not in states:
                        raise UserError(f"Tool call {tool_call_id!r} is {part.get('state')!r}, not waiting "
                                        f"({' or '.join(states)}); nothing was changed.")
                    return message, part
        waiting = [p["toolCallId"] for m in self.conversation for p in m.get("parts", [])
                   if is_tool_part(p) and p.get("state") in states]
        raise UserError(f"No tool call {tool_call_id!r} in this conversation; calls waiting ({' or '.join(states)}): "
                        f"{waiting}.")

    def _continue_if_settled(self, message: dict) -> asyncio.Task | None:
        """Think's batch barrier: continue once no call of `message` waits for the user."""
        last = self.conversation.last
        if last is not None and last["id"] != message["id"]:
            return None  # the conversation moved on; the next turn will see the result
        if any(_waiting(p, ("approval-requested", "input-available")) for p in message.get("parts", [])):
            return None
        self.continue_after.discard(message["id"])
        output_type = self.structured_waits.pop(str(message["id"]), None)  # a structured turn stays structured
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a script (`agent.run`): the continuation runs now, on the script loop, as run() does
            from think_nb.aio import script_loop

            async def continuation() -> Any:
                return await self.start([], new_id("req"), trigger="continuation", continuation=True,
                                        output_type=output_type)

            script_loop().run_until_complete(continuation())
            return None
        return self.start([], new_id("req"), trigger="continuation", continuation=True,  # type: ignore[return-value]
                          output_type=output_type)

    def _grew(self) -> None:
        """Tell the host the branch may have grown (after a turn, `add_messages`); never fails the caller."""
        try:
            self.host.messages_grew()
        except Exception:
            log.exception("background maintenance after a change of the branch could not start")

    def _after_turn(self) -> None:
        """A turn ended: results that arrived while it streamed may complete a batch now."""
        last = self.conversation.last
        if last is not None and last["id"] in self.continue_after:
            self._continue_if_settled(last)


def _turn_fields(sub: Submission, continuation: bool) -> dict:
    """The fields `chat:turn:start` and `chat:turn:finish` share (Think's)."""
    admission = "execute-submission" if sub.trigger in ("submission", "scheduled") else "queue"
    return {"request_id": sub.request_id, "trigger": sub.trigger, "admission": admission,
            "continuation": continuation, "generation": sub.generation}


def _ms_since(started: float) -> float:
    """Milliseconds since `started` (epoch seconds)."""
    return round((time.time() - started) * 1000, 3)


def _discard(items: list, item: Any) -> None:
    if item in items:
        items.remove(item)


def _waiting(part: dict | None, states: tuple[str, ...]) -> bool:
    return part is not None and is_tool_part(part) and part.get("state") in states and \
        part.get("state") not in SETTLED_TOOL_STATES


def _pending(message: dict, part: dict) -> dict:
    """One `pending_approvals()` row; `waiting_on` names the inner call an `execute` is paused at."""
    approval = part.get("approval") or {}
    descriptor = approval.get("descriptor")
    descriptor = descriptor if isinstance(descriptor, dict) else {}
    call = descriptor.get("call") if descriptor.get("kind") == "execute" else None
    return {"tool_call_id": part["toolCallId"], "tool_name": tool_name_of(part), "input": part.get("input"),
            "message_id": message["id"], "approval_id": approval.get("id"),
            "waiting_on": dict(call) if isinstance(call, dict) else None}
