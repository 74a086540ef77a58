"""Recovering the turns a dead process left unfinished (Think's `onChatRecovery`).

A turn persists its message at step boundaries; between them, what streamed lives only in the
stream tables (`think_nb.store.streams`, written before any listener hears a chunk, by the
engine's `StreamRecorder`, for every turn, panel or not). When an agent is created it looks for

- stream rows still `streaming` that another process wrote, and
- turn-log rows still `running` that another process ran (`TurnLog.orphaned`),

and, for each interrupted turn (an *incident*), oldest first:

1. rebuilds the partial reply from the recorded chunks (settled tool results included: they are
   flushed at once, so a recovered turn never runs a finished tool again);
2. asks `agent.on_chat_recovery(ctx)` (`ChatRecoveryContext`: request id, partial message, the
   user message it answered, the turn's trigger, the attempt) for a `RecoveryDecision`
   (default: `persist=True, continue_=False`);
3. persists the partial with `metadata.interrupted = True` (`persist=False` keeps only its
   settled tool results), marks the stream row `interrupted` and settles the turn-log row
   `interrupted`;
4. when `continue_` is set, and while the turn's chain is not sealed (its incident record,
   `think_nb.turns.incidents`: attempts reset by progress, a work budget, a no-progress window,
   `should_keep_recovering`; a sealed chain calls `on_exhausted`), starts a turn:
   `continue_last_turn` when the branch ends with the (partial) assistant reply
   (`trigger="recovery-continue"`), else a retry that answers the unanswered user message
   without appending it again (`trigger="recovery-retry"`); either is
   `skipped` when, by the time it starts, the branch ends with another message (one the user sent
   meanwhile: Think's superseded continuations skip).
5. a submission whose turn started the chain (`think_nb.submissions`) stays `running` meanwhile
   and is settled with the outcome of the turn that ends the chain (completed, error, skipped,
   aborted; `error` when the hook declines or the chain is sealed): Think's "recovery continuation
   completes submissions", chained continuations keeping the root submission. One cancelled
   before its continuation starts is not continued.

A turn the stall watchdog ends in a live process takes the same route (`route_stall`, Think's
`_routeStallToBoundedRecovery`): its partial is already persisted; the hook is asked with
`ctx.reason == "stalled"` and may continue it, within the same attempt budget.

Steps 1-3 run in the agent's constructor; an async `on_chat_recovery` is awaited later, in the
recovery task, so the partial is stored with the default decision first (a process that exits
before the hook answers loses nothing) and the hook's decision is applied when it answers.
Step 4 needs an event loop: it runs as a task (`agent.recovery_task`) on the running loop, or on
the script loop that `agent.run()` drives. `Think.chat_recovery = False`
keeps steps 1 and 3 (nothing recorded is lost) and skips the hook.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from think_nb import events
from think_nb.aio import maybe_await, task_loop
from think_nb.messages.accumulator import SETTLED_TOOL_STATES, MessageAccumulator, is_tool_part
from think_nb.messages.ids import new_id
from think_nb.store.agent import AgentStore
from think_nb.turns import incidents, stash

if TYPE_CHECKING:
    from think_nb.conversation import Conversation
    from think_nb.turns.broadcast import Event

log = logging.getLogger("think_nb")

INTERRUPTED_ERROR = "The process running this turn ended before the turn finished."
STALLED_ERROR = "The turn stalled and was not continued."
SETTLED_TURN = ("completed", "error", "aborted", "skipped")


@dataclass
class ChatRecoveryContext:
    """What `on_chat_recovery(ctx)` sees (Think's `ChatRecoveryContext`).

    Attributes:
        request_id: the interrupted turn's request id.
        partial: the assistant reply as far as it was recorded (a UIMessage, marked
            `metadata.interrupted`), or None when nothing streamed. `partial_text` (its text)
            and `partial_parts` (its parts) read it as Think's `partialText` / `partialParts`.
        user_message: the last user message of the branch (what the turn answered), or None.
        trigger: the interrupted turn's trigger (`panel`, `chat`, `recovery-continue`, ...).
        attempt: 1 for the first recovery of this turn, 2 when the turn recovering it was
            interrupted too, ...
        exhausted: True when the chain has no attempt left (`continue_` will be ignored).
        reason: `process-ended` (a dead kernel's turn, found when the agent is created) or
            `stalled` (the stall watchdog ended the turn in this process).
        incident_id: the chain's first request id (Think's `incidentId`).
        max_attempts: `chat_recovery_max_attempts` (Think's `maxAttempts`).
        work: parts the chain's recovery turns recorded so far (Think's `work`).
        age_ms: milliseconds since the chain's first interruption (Think's `ageMs`).
        exhausted_reason: why the chain is sealed, when it is (Think's exhaustion reasons:
            `max_attempts_exceeded`, `work_budget_exceeded`, `no_progress_timeout`,
            `recovery_aborted` when `should_keep_recovering` returned False), else None.
        recovery_data: what the interrupted turn last passed to `agent.stash(data)` (Think's
            `recoveryData`), or None.
    `think_nb.turns.incidents` keeps the chain's record (attempts reset on progress).
    """

    request_id: str
    partial: dict | None
    user_message: dict | None
    trigger: str
    attempt: int = 1
    exhausted: bool = False
    reason: str = "process-ended"
    incident_id: str = ""
    max_attempts: int = 0
    work: int = 0
    age_ms: int = 0
    exhausted_reason: str | None = None
    recovery_data: Any = None

    @property
    def partial_parts(self) -> list[dict]:
        """The partial reply's parts (Think's `partialParts`); [] when nothing streamed."""
        return list((self.partial or {}).get("parts") or [])

    @property
    def partial_text(self) -> str:
        """The partial reply's text parts joined (Think's `partialText`); "" when nothing streamed."""
        return "".join(str(p.get("text", "")) for p in self.partial_parts if p.get("type") == "text")


@dataclass
class RecoveryDecision:
    """What `on_chat_recovery` may return (Think's `ChatRecoveryOptions`); None means the default.

    Attributes:
        persist: store the partial reply (else only its settled tool results are kept).
        continue_: start a turn that continues the partial reply (or, when nothing was
            persisted, answers the user message again without duplicating it).
    Dicts `{"persist": ..., "continue": ...}` are accepted too.
    """

    persist: bool = True
    continue_: bool = False

    @classmethod
    def coerce(cls, value: Any) -> RecoveryDecision:
        if value is None:
            return cls()
        if isinstance(value, RecoveryDecision):
            return value
        if isinstance(value, dict):
            return cls(persist=bool(value.get("persist", True)),
                       continue_=bool(value.get("continue_", value.get("continue", False))))
        raise TypeError(f"on_chat_recovery() must return a RecoveryDecision, a dict or None, not "
                        f"{type(value).__name__}.")


@dataclass
class Incident:
    request_id: str
    trigger: str = "unknown"
    partial: dict | None = None
    stream: bool = False
    logged: bool = False
    pending: list[Any] = field(default_factory=list)
    continues: asyncio.Future[bool] | None = None
    """stalled incidents: resolved once the hook has answered, True when a continuation will run."""


def collect(store: AgentStore) -> list[Incident]:
    """The interrupted turns of `store`'s agent, oldest first; their rows are settled at once
    (stream `interrupted`, turn log `interrupted`), so no other opener handles them again."""
    found: dict[str, Incident] = {}
    for request_id in store.streams.orphaned():
        row = store.turn_log.get(request_id)
        if row is not None and row["status"] in SETTLED_TURN:  # ended; killed before the stream was closed
            store.streams.mark(request_id, row["status"])
            continue
        incident = found[request_id] = Incident(request_id, stream=True)
        incident.partial = _rebuild([c for segment in store.streams.segments(request_id) for c in segment])
        if row is not None:
            incident.trigger, incident.logged = row["trigger"], True
        store.streams.mark(request_id, "interrupted")
    for row in store.turn_log.orphaned():
        incident = found.setdefault(row["request_id"], Incident(row["request_id"]))
        incident.trigger, incident.logged = row["trigger"], True
        store.turn_log.settle_interrupted(row["request_id"], INTERRUPTED_ERROR)
    return list(found.values())


class RecoveredSubmissions(Protocol):
    """What recovery needs of the submission ledger (`think_nb.submissions.Submissions`): a
    submission whose turn a dead process left is continued by the recovery of that turn's chain,
    and settled when the continuation ends (Think's submission recovery: recoverable → continued)."""

    def continue_begins(self, incident_id: str, request_id: str) -> bool | None: ...
    """`request_id` continues chain `incident_id`: None when no recovered submission is linked to
    it, False when the linked one was cancelled meanwhile (then nothing is continued), else True."""

    async def continue_ends(self, incident_id: str, status: str, error: str | None) -> None: ...
    """The chain's continuation ended `status`: its submission (if any) is settled so."""


class RecoveryHost(Protocol):
    """What recovery needs of its agent (`think_nb.runtime.AgentRuntime` implements it): the user's
    object (whose `on_chat_recovery` is asked), the settings, the store and, once created, the branch
    and the submission ledger (None when the agent has none)."""

    agent: Any
    key: str
    store: AgentStore
    conversation: Conversation
    chat_recovery: bool
    chat_recovery_max_attempts: int
    chat_recovery_max_recovery_work: int
    chat_recovery_no_progress_timeout: float | None

    @property
    def recovered_submissions(self) -> RecoveredSubmissions | None: ...


class RecoveryEngine(Protocol):
    """What recovery needs of the turn engine."""

    @property
    def start(self) -> Callable[..., Any]: ...  # `TurnEngine.start(messages, request_id, trigger=..., ...)`

    def notify(self, event: Event, *args: Any) -> None: ...
    def messages_changed(self) -> None: ...


def recover(host: RecoveryHost, prepare: Callable[[list[Incident]], None] | None = None) -> list[tuple[Incident, Any]]:
    """Steps 1-3 for every incident (see the module docstring); returns what is left for the
    recovery task: `(incident, decision or awaitable)` pairs. `prepare(incidents)` runs after the
    partials are rebuilt, before the hook sees them (agent-tool runs deliver their outcomes to the
    tool calls that started them: `think_nb.agent_tools.Reattach`)."""
    store = host.store
    incidents = collect(store)
    if prepare is not None:
        prepare(incidents)
    left: list[tuple[Incident, Any]] = []
    for incident in incidents:
        if not host.chat_recovery:
            apply(host.conversation, incident, RecoveryDecision())
            stash.take(store, incident.request_id)  # no hook reads it: it goes with the turn
            continue
        ctx = _context(host, incident.request_id, incident.partial, incident.trigger, "process-ended")
        if inspect.iscoroutinefunction(host.agent.on_chat_recovery):  # asked in the task; keep the partial now
            apply(host.conversation, incident, RecoveryDecision())
            left.append((incident, (ctx, _Ask(host.agent.on_chat_recovery, ctx))))
            continue
        try:
            value = host.agent.on_chat_recovery(ctx)
        except Exception:
            log.exception("on_chat_recovery raised; the partial reply of %s is kept", incident.request_id)
            value = None
        if inspect.isawaitable(value):  # keep the partial now (the default): the hook answers later, if ever
            apply(host.conversation, incident, RecoveryDecision())
            left.append((incident, (ctx, value)))
            continue
        decision = _decision(value, incident)
        apply(host.conversation, incident, decision)
        if _told_decision(host, ctx, decision):
            left.append((incident, (ctx, decision)))
    return left


def chains(left: list[tuple[Incident, Any]]) -> set[str]:
    """The incident ids (each chain's first request id) of what `recover` left to continue, or to
    decide later (an async hook): a submission whose turn started one of these chains stays
    `running` until its continuation ends."""
    return {ctx.incident_id for _, (ctx, _) in left}


def route_stall(host: RecoveryHost, engine: RecoveryEngine, request_id: str, partial: dict | None,
                trigger: str) -> tuple[asyncio.Task, asyncio.Future[bool]] | None:
    """A turn the stall watchdog ended in this process (Think's `_routeStallToBoundedRecovery`):
    its partial is already persisted (`metadata.interrupted`); `on_chat_recovery` is asked as for
    a dead process's turn (`ctx.reason == "stalled"`), and a `continue_` starts a
    `recovery-continue` turn while the chain has attempts left. Returns the task (on the running
    loop) and a future resolved, once the hook has answered, with whether a continuation will
    own the answer (what a `chat()` caller's `on_interrupted` waits for); None when
    `chat_recovery` is off."""
    if not host.chat_recovery:
        return None
    ctx = _context(host, request_id, partial, trigger, "stalled")
    try:
        value = host.agent.on_chat_recovery(ctx)
    except Exception:
        log.exception("on_chat_recovery raised; the partial reply of %s is kept", request_id)
        value = None
    loop = asyncio.get_running_loop()
    incident = Incident(request_id, trigger, partial, logged=True, continues=loop.create_future())
    task = loop.create_task(_finish(host, engine, [(incident, (ctx, value))]), name=f"think-stall-recovery-{host.key}")
    task.add_done_callback(lambda _: _decided(incident, False))  # the task failed or was cancelled before deciding
    assert incident.continues is not None
    return task, incident.continues


@dataclass
class _Ask:
    """An async `on_chat_recovery` call made inside the recovery task (never a coroutine left
    unawaited when a script ends before the task runs)."""

    hook: Any
    ctx: ChatRecoveryContext

    def __call__(self) -> Any:
        return self.hook(self.ctx)


def schedule(host: RecoveryHost, engine: RecoveryEngine, left: list[tuple[Incident, Any]],
             first: Callable[[], Awaitable[None]] | None = None) -> asyncio.Task | None:
    """Run step 4 (and async hooks) as a task: on the running loop, else on the script loop.
    `first()` is awaited before anything continues (sub-agents resumed for the agent's tool calls)."""
    if not left and first is None:
        return None
    loop = task_loop()
    return loop.create_task(_finish(host, engine, left, first), name=f"think-recovery-{host.key}")


async def _finish(host: RecoveryHost, engine: RecoveryEngine, left: list[tuple[Incident, Any]],
                  first: Callable[[], Awaitable[None]] | None = None) -> list[Any]:
    if first is not None:
        await first()
    if not left:
        return []
    root = left[0][0].request_id
    engine.notify("on_recovering", True, root)
    try:
        return await _finish_all(host, engine, left)
    finally:
        engine.notify("on_recovering", False, root)


async def _finish_all(host: RecoveryHost, engine: RecoveryEngine, left: list[tuple[Incident, Any]]) -> list[Any]:
    results = []
    for incident, (ctx, pending) in left:
        if not isinstance(pending, RecoveryDecision) or ctx.reason == "stalled":
            try:
                value = await maybe_await(pending() if isinstance(pending, _Ask) else pending)
            except Exception:
                log.exception("on_chat_recovery raised; the partial reply of %s is kept", incident.request_id)
                value = None
            pending = _decision(value, incident)
            apply(host.conversation, incident, pending)
            host.conversation.reload()
            engine.messages_changed()
            _decided(incident, pending.continue_ and not ctx.exhausted)
            if not _told_decision(host, ctx, pending):
                await _settle(host, ctx, "error", INTERRUPTED_ERROR if ctx.reason == "process-ended" else STALLED_ERROR)
                continue
        results.append(await _resume(host, engine, incident, ctx))
    return results


async def _resume(host: RecoveryHost, engine: RecoveryEngine, incident: Incident, ctx: ChatRecoveryContext) -> Any:
    """Continue the partial reply, or answer the user message again (no duplicate)."""
    last = host.conversation.last
    request_id = new_id("req")
    incidents.begin_attempt(host.store, incident.request_id, request_id)
    role = last["role"] if last is not None else None
    if role not in ("assistant", "user"):
        _tell(host, "skipped", ctx, "nothing-to-resume")
        await _settle(host, ctx, "skipped", "nothing to resume")
        return None
    link = host.recovered_submissions
    if link is not None and link.continue_begins(ctx.incident_id, request_id) is False:
        _tell(host, "skipped", ctx, "submission-cancelled")  # Think: a recovered continuation respects cancel
        incidents.close(host.store, request_id)
        return None
    kind = "continue" if role == "assistant" else "retry"
    _tell(host, "attempt", ctx, kind=kind)
    expect = last["id"] if last is not None else None  # a message sent meanwhile supersedes the resume
    try:
        if kind == "continue":
            result = await engine.start([], request_id, trigger="recovery-continue", continuation=True,
                                        expect_last=expect)
        else:
            result = await engine.start([], request_id, trigger="recovery-retry", regenerate=True, expect_last=expect)
    except Exception as exc:
        await _settle(host, ctx, "error", f"{type(exc).__name__}: {exc}")
        raise
    status = getattr(result, "status", None)
    if status == "completed":
        _tell(host, "completed", ctx, kind=kind)
        incidents.close(host.store, request_id)  # the chain ended: its incident record goes
    else:
        _tell(host, "failed", ctx, str(status), kind=kind)
        if status != "aborted":  # error or skipped: the chain ended (an aborted one may be a stall's, routed again)
            incidents.close(host.store, request_id)
    if not getattr(result, "interrupted", False):  # a stalled one: the stall's recovery settles it
        await _settle(host, ctx, str(status), getattr(result, "error", None) or getattr(result, "reason", None))
    return result


async def _settle(host: RecoveryHost, ctx: ChatRecoveryContext, status: str, error: str | None) -> None:
    """The chain of `ctx` ended `status`: the submission its first turn ran (if recovery kept one
    running) is settled so (Think: the recovery continuation completes the submission; chained
    continuations keep the root submission, the chain's incident id)."""
    link = host.recovered_submissions
    if link is not None:
        await link.continue_ends(ctx.incident_id, status, error)


def _told_decision(host: RecoveryHost, ctx: ChatRecoveryContext, decision: RecoveryDecision) -> bool:
    """Emit what `on_chat_recovery` decided (scheduled, exhausted or skipped); True when a turn
    will resume the incident."""
    if not decision.continue_:
        _tell(host, "skipped", ctx, "declined")
        incidents.close(host.store, ctx.request_id)
        return False
    if ctx.exhausted:
        _seal(host, ctx)
        return False
    _tell(host, "scheduled", ctx)
    return True


def _tell(host: RecoveryHost, what: str, ctx: ChatRecoveryContext, reason: str | None = None, *,
          kind: str | None = None) -> None:
    """One `chat:recovery:<what>` event about `ctx`'s incident (see `think_nb.events`): its id is
    the first request id of the interrupted chain; `kind` (`continue` | `retry`) defaults to
    `continue` when something streamed before the interruption."""
    fields: dict[str, Any] = {
        "incident_id": ctx.incident_id or incidents.incident_of(host.store, ctx.request_id),
        "request_id": ctx.request_id, "attempt": ctx.attempt, "max_attempts": host.chat_recovery_max_attempts,
        "recovery_kind": kind or ("continue" if ctx.partial is not None else "retry")}
    if reason:
        fields["reason"] = reason
    events.emit(f"chat:recovery:{what}", fields, agent=host.key, request_id=ctx.request_id)


def _decided(incident: Incident, continues: bool) -> None:
    if incident.continues is not None and not incident.continues.done():
        incident.continues.set_result(continues)


def _decision(value: Any, incident: Incident) -> RecoveryDecision:
    try:
        return RecoveryDecision.coerce(value)
    except TypeError:
        log.exception("on_chat_recovery returned an unusable value for %s; the default is used", incident.request_id)
        return RecoveryDecision()


def apply(conversation: Conversation, incident: Incident, decision: RecoveryDecision) -> None:
    """Store the incident's partial reply as the decision says (settled tool results always),
    through the agent's `Conversation` (the only writer of messages)."""
    message = incident.partial
    if message is None:
        return
    store = conversation.store
    stored = store.messages.get(message["id"])
    if not decision.persist:
        settled = [p for p in message["parts"] if is_tool_part(p) and p.get("state") in SETTLED_TOOL_STATES]
        if not settled:
            if stored is not None:  # the turn's own step-boundary copy: the branch leaves it (kept in the tree)
                conversation.set_leaf(_parent(store, message["id"]))
            return
        message = {**message, "parts": [{"type": "step-start"}, *settled]}
    if stored is not None:
        conversation.replace(message)
    else:
        conversation.append(message)


def _rebuild(chunks: list[dict]) -> dict | None:
    start = next((c for c in chunks if c.get("type") == "start" and c.get("messageId")), None)
    if start is None:
        return None
    acc = MessageAccumulator(start["messageId"])
    for chunk in chunks:
        if chunk.get("type") in ("abort", "error"):
            continue
        acc.apply(chunk)
    for part in acc.parts:
        if part.get("state") == "streaming":
            part["state"] = "done"
    if not acc.parts:
        return None
    message = acc.message
    message.setdefault("metadata", {})["interrupted"] = True
    return message


def _last_user(store: AgentStore) -> dict | None:
    return next((m for m in reversed(store.messages.branch()) if m.get("role") == "user"), None)


def _parent(store: AgentStore, message_id: str) -> str | None:
    branch = store.messages.branch()
    ids = [m["id"] for m in branch]
    if message_id in ids:
        n = ids.index(message_id)
        return ids[n - 1] if n else None
    return store.messages.leaf_id


def _context(host: RecoveryHost, request_id: str, partial: dict | None, trigger: str,
             reason: str) -> ChatRecoveryContext:
    """The context `on_chat_recovery` sees: the chain's record read (progress credited, budgets
    checked, `think_nb.turns.incidents`), then `should_keep_recovering` asked unless already sealed."""
    verdict = incidents.observe(host.store, request_id, incidents.progress_of(partial),
                                max_attempts=host.chat_recovery_max_attempts,
                                max_work=host.chat_recovery_max_recovery_work,
                                no_progress_s=host.chat_recovery_no_progress_timeout)
    ctx = ChatRecoveryContext(request_id, partial, _last_user(host.store), trigger, verdict.attempt,
                              exhausted=verdict.exhausted is not None, reason=reason,
                              incident_id=verdict.incident_id, max_attempts=host.chat_recovery_max_attempts,
                              work=verdict.work, age_ms=verdict.age_ms, exhausted_reason=verdict.exhausted,
                              recovery_data=stash.take(host.store, request_id))
    if not ctx.exhausted and not _keep_recovering(host, ctx):
        ctx.exhausted, ctx.exhausted_reason = True, "recovery_aborted"
    _tell(host, "detected", ctx)
    return ctx


def _keep_recovering(host: RecoveryHost, ctx: ChatRecoveryContext) -> bool:
    try:
        return host.agent.should_keep_recovering(ctx) is not False
    except Exception:
        log.exception("should_keep_recovering raised; recovery of %s goes on", ctx.request_id)
        return True


def _seal(host: RecoveryHost, ctx: ChatRecoveryContext) -> None:
    """The chain is sealed: say so, delete its record, then tell `on_exhausted` (whatever it does,
    raising included, the turn already ended `interrupted`/`aborted` in the store, which the views
    replay as the terminal state)."""
    _tell(host, "exhausted", ctx, ctx.exhausted_reason or "max_attempts_exceeded")
    incidents.close(host.store, ctx.request_id)
    try:
        value = host.agent.on_exhausted(ctx)
        if inspect.isawaitable(value):
            _run_later(value)
    except Exception:
        log.exception("on_exhausted raised; the sealed chain of %s stays ended", ctx.request_id)


def _run_later(value: Awaitable[Any]) -> None:
    """An async `on_exhausted`: awaited in a task on the loop; its exception is logged."""
    async def wait() -> None:
        try:
            await value
        except Exception:
            log.exception("on_exhausted raised; the sealed chain stays ended")
    task_loop().create_task(wait(), name="think-on-exhausted")


def _count(store: AgentStore, interrupted: str, new_request: str) -> None:
    """Remember that `new_request` recovers `interrupted`'s chain, one attempt more."""
    incidents.begin_attempt(store, interrupted, new_request)
