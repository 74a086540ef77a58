"""Observability events: one subscription API for what agents do (Think's `agents/observability`).

    from think_nb import events

    stop = events.subscribe(print)                                  # chat:* events of every agent
    stop = events.subscribe(handler, agent=agent, names=["chat:turn:*", "tool:*"])
    stop()                                                          # unsubscribe (idempotent)
    with events.subscribe(seen.append, names="*"):                  # or for one block
        await agent.send("hi")

Think publishes each event to a `node:diagnostics_channel` channel (`agents:chat`, `agents:message`,
...) as `{type, agent, name, payload, timestamp}`. Here every event goes to the handlers whose glob
patterns (`fnmatch`, `*` crosses `:`) match its name and whose `agent` filter (a `Think`, or its
storage key `"<Class>:<name>"`; a sub-agent has its own key) matches its agent. A handler gets one
`Event`: `name`, `agent` (the agent's storage key, or None), `request_id` (the turn it belongs to
or happened in, or None), `timestamp` (seconds, `time.time()`) and `payload` (a fresh dict per
event: Think's payload fields, snake_case — `requestId` → `request_id`, `durationMs` →
`duration_ms`). Nothing is built when nobody subscribes (as a channel without subscribers).

Handlers:
- a sync handler is called where the event happens, on that thread (a turn's: the kernel's event
  loop), so it must be quick; an async handler (or one returning an awaitable) is scheduled as a
  task on the running loop and never awaited by the turn, so a slow one never holds it;
- a handler that raises (or whose task fails) never reaches the code that emitted: its first
  failure is logged with its traceback, later ones only counted (`Subscription.errors`), so a
  handler failing on every event does not flood the cell's output. `KeyboardInterrupt` (the
  kernel's interrupt) is not swallowed.

Names and payloads (`NAMES` is the complete list; `emit` refuses any other name). Think's names
unless marked *think_nb* (Think has no event there):

Turns
- `chat:turn:start` — request_id, trigger, admission, continuation, generation. `trigger`:
  think_nb's (`panel`, `cell`, `send`, `save_messages`, `programmatic`, `chat`, `continuation`,
  `regenerate`, `step`, `submission`, `scheduled`, `recovery-continue`, `recovery-retry`);
  `admission`: `execute-submission` for a submission's turn, else `queue`. A skipped turn has none.
- `chat:turn:finish` — the same + status (completed | error | aborted), duration_ms, error (text,
  when it failed).
- `chat:step:finish` (*think_nb*) — step (0-based), finish_reason (`stop`, `tool-calls`,
  `length`, ...), tool_calls (the step's tool names), usage (`{prompt_tokens, completion_tokens,
  total_tokens, source}`).
- `chat:tool:call` (*think_nb*) — tool_call_id, tool_name, step: a server tool call starts
  (before `before_tool_call`; an approved call when its continuation runs it).
- `chat:tool:result` (*think_nb*) — tool_call_id, tool_name, step, state (`output-available` |
  `output-error`), duration_ms (hooks and tool), error (when it failed). No output (it can be big).
- `chat:approval:requested` (*think_nb*) — tool_call_id, tool_name, approval_id: a call waits
  behind Approve/Deny.
- `tool:approval` — tool_call_id, approved: `approve` / `deny` decided a call.
- `tool:result` — tool_call_id, tool_name: a client tool's result was applied (`add_tool_output`).
- `chat:request:failed` — request_id, stage (`stream`: the model failed, `turn`: a hook or
  think_nb, `persist`: the reply could not be stored), messages_persisted, error.
- `message:error` — error: the model's call failed (with `chat:request:failed`).
- `chat:stream:stalled` — request_id, timeout_ms: the stall watchdog ended the turn.
- `chat:transcript:repaired` — request_id, removed_tool_calls, normalized_inputs, tool_call_ids:
  calls left without a result were settled before a turn (`repair_interrupted_tool_part`).
- `chat:context:compacted` — reason (`proactive`: `compact_after`'s threshold was passed before
  a turn, or `context_overflow`'s proactive layer before a step; `reactive`: a model call
  overflowed, `think_nb.turns.overflow`), shortened, request_id, attempt (reactive ones: 1, 2, ...).

Recovery (`think_nb.turns.recovery`): incident_id (the interrupted chain's first request id),
request_id, attempt, max_attempts, recovery_kind (`continue` | `retry`), reason (skipped,
failed, exhausted):
- `chat:recovery:detected` (a dead process's turn, or a stalled one), `chat:recovery:scheduled`
  (`on_chat_recovery` chose to continue), `chat:recovery:attempt` (its turn starts),
  `chat:recovery:completed`, `chat:recovery:failed` (that turn ended error or aborted),
  `chat:recovery:skipped` (declined, or nothing to resume), `chat:recovery:exhausted` (the chain is
  sealed; reason `max_attempts_exceeded`, `work_budget_exceeded`, `no_progress_timeout` or
  `recovery_aborted`: `think_nb.turns.incidents`).

Durable work
- `submission:create` — submission_id, request_id (None until it runs), idempotency_key.
- `submission:status` — submission_id, request_id, status (pending | running | completed |
  aborted | skipped | error), on every change (accept, start, end, cancel, clear, restart).
- `submission:error` — submission_id, request_id, error (with the `error` status).
- `schedule:create` / `schedule:cancel` / `schedule:execute` — callback (the task's prompt or
  handler as shown by `get_schedules()`), id. `schedule:error` — callback, id, error, attempts.
- `tool:fetch` — tool, ok, requested_url, final_url, status, bytes, truncated, code (failures),
  on every `fetch_tool` call, refused ones included.

- `action:ledger:replayed` / `pending` / `conflict` / `settled` / `reclaimed` — action, key,
  input_hash (`think_nb.actions.ledger`); `action:pause:created` — action, execution_id,
  tool_call_id; `action:pause:approved` / `rejected` — action, execution_id
  (`think_nb.actions.pause`); `action:reply-attached` — action, attachment_type.
- `notice:delivered` — channel, kind, inform_model (`Think.deliver_notice`).

Memory (cloudflare/agents#1710)
- `chat:hydration:windowed` — total_messages (the stored branch's length; None for rows older than
  m016), budget_messages (`hydration_limit`), hydrated_messages: the branch read into memory is a
  window of a longer one; once per change of those numbers (Think counts bytes: `totalContentBytes`,
  `budgetBytes`).
- `chat:media:evicted` — messages, parts, bytes, externalized_bytes (characters kept in the workspace,
  0 when dropping): a background pass moved aged media out of the stored transcript
  (`think_nb.session.media_eviction`); once per pass that changed something.

Declared, not emitted yet: `action:ledger:swept` (settled, pending), `action:pause:swept` (swept),
`channel:resolved` (channel, kind, request_id), `channel:delivered` (channel, kind, turn_ended),
`notice:failed` (channel, error), `chat:onstart:degraded` (step, error). Such code emits with one
line where the thing happens:

    events.emit("action:pause:created", {"action": name, "execution_id": eid, "tool_call_id": cid},
                agent=runtime.key)

Inside a turn (its hooks, its tools, code they call, threads they start with `asyncio.to_thread`)
`agent` and `request_id` may be left out: the turn's scope (`scope`, set by the engine) fills them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fnmatch
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from think_nb.errors import UserError

__all__ = ["NAMES", "Event", "Subscription", "current", "emit", "scope", "subscribe"]

log = logging.getLogger("think_nb")

_RECOVERY = "incident_id, request_id, attempt, max_attempts, recovery_kind, reason?"
_LEDGER = "action, key, input_hash"
NAMES: dict[str, str] = {
    "chat:turn:start": "request_id, trigger, admission, continuation, generation",
    "chat:turn:finish": "request_id, trigger, admission, continuation, generation, status, duration_ms, error?",
    "chat:step:finish": "step, finish_reason, tool_calls, usage",
    "chat:tool:call": "tool_call_id, tool_name, step",
    "chat:tool:result": "tool_call_id, tool_name, step, state, duration_ms, error?",
    "chat:approval:requested": "tool_call_id, tool_name, approval_id",
    "tool:approval": "tool_call_id, approved",
    "tool:result": "tool_call_id, tool_name",
    "chat:request:failed": "request_id, stage, messages_persisted, error",
    "message:error": "error",
    "chat:stream:stalled": "request_id, timeout_ms",
    "chat:transcript:repaired": "request_id, removed_tool_calls, normalized_inputs, tool_call_ids",
    "chat:context:compacted": "reason, shortened, request_id, attempt?",
    **{f"chat:recovery:{kind}": _RECOVERY
       for kind in ("detected", "scheduled", "attempt", "completed", "skipped", "failed", "exhausted")},
    "submission:create": "submission_id, request_id, idempotency_key",
    "submission:status": "submission_id, request_id, status",
    "submission:error": "submission_id, request_id, error",
    "schedule:create": "callback, id",
    "schedule:cancel": "callback, id",
    "schedule:execute": "callback, id",
    "schedule:error": "callback, id, error, attempts",
    "tool:fetch": "tool, ok, requested_url, final_url, status, bytes, truncated, code",
    # declared for work other branches add (see the module docstring)
    **{f"action:ledger:{kind}": _LEDGER for kind in ("replayed", "pending", "conflict", "settled")},
    "action:ledger:reclaimed": _LEDGER + ", age_ms",
    "action:ledger:swept": "settled, pending",
    "action:pause:created": "action, execution_id, tool_call_id",
    "action:pause:approved": "action, execution_id",
    "action:pause:rejected": "action, execution_id",
    "action:pause:swept": "swept",
    "action:reply-attached": "action, attachment_type",
    "channel:resolved": "channel, kind, request_id",
    "channel:delivered": "channel, kind, turn_ended",
    "notice:delivered": "channel, kind, inform_model",
    "notice:failed": "channel, error",
    "chat:hydration:windowed": "total_messages, budget_messages, hydrated_messages",
    "chat:media:evicted": "messages, parts, bytes, externalized_bytes",
    "chat:onstart:degraded": "step, error",
}
"""Every event name, with its payload's keys (`?`: only when it applies)."""



class _Scope:
    """A turn's scope: its agent and request id, `live` until the turn's block ends (a task the
    turn started that outlives it copied the scope, and must not name the ended turn)."""

    __slots__ = ("agent", "live", "request_id")

    def __init__(self, agent: str, request_id: str) -> None:
        self.agent, self.request_id, self.live = agent, request_id, True


_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("think_nb_event_scope", default=None)


@dataclass(frozen=True)
class Event:
    """One observability event (Think's `{type, agent, name, payload, timestamp}`).

    Attributes:
        name: the event's name (`chat:turn:start`, ...; `NAMES`).
        agent: the storage key of the agent it concerns (`"<Class>:<name>"`), or None.
        request_id: the turn it belongs to or happened in, or None.
        timestamp: when it happened, seconds since the epoch (`time.time()`).
        payload: its fields (see the module docstring); a fresh dict, shared by this event's handlers.
    """

    name: str
    agent: str | None
    request_id: str | None
    timestamp: float
    payload: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """`{name, agent, request_id, timestamp, payload}` (JSON-compatible when the payload is)."""
        return {"name": self.name, "agent": self.agent, "request_id": self.request_id,
                "timestamp": self.timestamp, "payload": dict(self.payload)}


Handler = Callable[[Event], "Awaitable[Any] | None"]


class Subscription:
    """A subscribed handler; call it (or leave its `with` block) to unsubscribe.

    Attributes:
        handler: the handler. names: its glob patterns. agent: the agent key it is kept to, or None.
        errors: how many times it raised (or its task failed); only the first is logged.
        active: False once unsubscribed.
    """

    def __init__(self, handler: Handler, names: tuple[str, ...], agent: str | None) -> None:
        self.handler = handler
        self.names = names
        self.agent = agent
        self.errors = 0
        self.active = True
        self._match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in names)).match
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def __call__(self) -> None:
        """Unsubscribe (again: no-op)."""
        self.active = False
        _set_subscriptions(tuple(s for s in _subscriptions if s is not self))

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self()

    def __repr__(self) -> str:
        return (f"<Subscription {_name_of(self.handler)} names={list(self.names)} agent={self.agent!r}"
                f"{'' if self.active else ' (ended)'}>")

    def wants(self, name: str) -> bool:
        """True when one of its patterns matches the event name `name`."""
        return self._match(name) is not None

    def deliver(self, event: Event) -> None:
        """Call the handler; schedule what it returns when that is awaitable (see the module docstring)."""
        try:
            result = self.handler(event)
        except (KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as exc:  # noqa: BLE001 - a handler must not break (or end) the code that emitted
            self.failed(exc, event)
            return
        if inspect.isawaitable(result):
            self._schedule(result, event)

    def _schedule(self, awaitable: Awaitable[Any], event: Event) -> None:
        coro = awaitable if inspect.iscoroutine(awaitable) else _wait(awaitable)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None and self._loop is not None and self._loop.is_running():  # emitted on another thread
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            future.add_done_callback(lambda f: self._settled(f, event))
            return
        if loop is None:  # a script between turns: the loop `agent.run()` drives next
            from think_nb.aio import script_loop

            loop = script_loop()
        task = loop.create_task(coro, name=f"think-event-{event.name}")
        _tasks.add(task)
        task.add_done_callback(lambda t: self._settled(t, event))

    def _settled(self, future: Any, event: Event) -> None:
        _tasks.discard(future)
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            self.failed(exc, event)

    def failed(self, exc: BaseException, event: Event) -> None:
        self.errors += 1
        if self.errors == 1:
            log.error("event handler %s raised on %s (logged once; later failures are counted in "
                      "Subscription.errors)", _name_of(self.handler), event.name, exc_info=exc)


_subscriptions: tuple[Subscription, ...] = ()
_by_name: dict[str, tuple[Subscription, ...]] = {}  # event name -> the subscriptions whose patterns match it
_tasks: set[Any] = set()  # async handlers' tasks, kept until they end


def _set_subscriptions(subscriptions: tuple[Subscription, ...]) -> None:
    global _subscriptions
    _subscriptions = subscriptions
    _by_name.clear()


def subscribe(handler: Handler, *, agent: Any = None, names: str | Iterable[str] = "chat:*") -> Subscription:
    """Call `handler(event)` for every event matching `names` (and `agent`); returns the
    `Subscription`, which unsubscribes when called (or at the end of its `with` block).

    Args:
        handler: `fn(event)`, sync or async (see the module docstring).
        agent: None for every agent, a `Think` (its own events only, not its sub-agents'), or an
            agent's storage key (`"<Class>:<name>"`).
        names: a glob pattern or several (`"chat:*"`, `["chat:turn:*", "submission:*"]`, `"*"`).

    Raises:
        UserError: `handler` is not callable, a pattern matches no event name (`NAMES`), or
            `agent` is neither a `Think` nor a key.
    """
    if not callable(handler):
        raise UserError(f"events.subscribe(handler): handler must be callable (fn(event)), not "
                        f"{type(handler).__name__}.")
    patterns = (names,) if isinstance(names, str) else tuple(names)
    for pattern in patterns or ("",):
        if not isinstance(pattern, str) or not fnmatch.filter(NAMES, pattern):
            raise UserError(f"events.subscribe(names={pattern!r}) matches no event; use a glob over the names in "
                            "think_nb.events.NAMES, e.g. 'chat:*', 'chat:turn:*', 'submission:*' or '*'.")
    sub = Subscription(handler, patterns, _agent_key(agent))
    _set_subscriptions((*_subscriptions, sub))
    return sub


def emit(name: str, payload: dict[str, Any] | None = None, *, agent: str | None = None,
         request_id: str | None = None) -> None:
    """Send the event `name` to its subscribers (nothing is built when there are none).

    Args:
        name: one of `NAMES`. payload: its fields (copied into the event).
        agent: the agent's storage key. request_id: the turn it belongs to. Inside a turn's scope
            (`scope`) both default to the turn's, when `agent` is left out or is the turn's agent.

    Raises:
        ValueError: `name` is not in `NAMES` (a typo fails where it is made).
    """
    if name not in NAMES:
        raise ValueError(f"unknown event {name!r}; declare it in think_nb.events.NAMES")
    if not _subscriptions:
        return
    matching = _by_name.get(name)
    if matching is None:
        matching = _by_name[name] = tuple(s for s in _subscriptions if s.wants(name))
    if not matching:
        return
    turn = _SCOPE.get()
    if turn is not None and turn.live and agent in (None, turn.agent):
        agent, request_id = turn.agent, request_id or turn.request_id
    event: Event | None = None
    for sub in matching:
        if sub.active and (sub.agent is None or sub.agent == agent):
            if event is None:
                event = Event(name, agent, request_id, time.time(), dict(payload or {}))
            sub.deliver(event)


@contextlib.contextmanager
def scope(agent: str, request_id: str) -> Iterator[None]:
    """Within this block (and the tasks and threads it starts), events default to `agent` and
    `request_id` (the engine enters it for each admitted turn); a task started inside that
    outlives the block no longer does."""
    turn = _Scope(agent, request_id)
    token = _SCOPE.set(turn)
    try:
        yield
    finally:
        turn.live = False
        _SCOPE.reset(token)


def current() -> tuple[str, str] | None:
    """`(agent key, request id)` of the turn whose scope this code runs in, or None."""
    turn = _SCOPE.get()
    return (turn.agent, turn.request_id) if turn is not None and turn.live else None


def _agent_key(agent: Any) -> str | None:
    if agent is None or isinstance(agent, str):
        return agent
    from think_nb.binding import runtime_of

    try:
        return str(runtime_of(agent).key)
    except TypeError:
        raise UserError(f"events.subscribe(agent=...): pass a Think agent or its storage key "
                        f"('<Class>:<name>'), not {type(agent).__name__}.") from None


async def _wait(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _name_of(handler: Any) -> str:
    return getattr(handler, "__qualname__", None) or repr(handler)
