"""Running an agent's scheduled tasks in the kernel's event loop (Think's scheduled tasks).

One `Scheduler` per agent. When the agent is created it reconciles the tasks the class declares
(`get_scheduled_tasks()`) with the stored rows (new ones armed, changed ones re-armed, removed
ones deleted; runtime tasks untouched), then starts a loop task (on the running loop, or on the
script loop `agent.run()` drives) that sleeps until the soonest `next_run_at` and runs what is due:

- the next occurrence is computed and claimed *before* the run (a compare-and-set in the store,
  so a failing run still re-arms, and two processes never run one occurrence twice);
- a missed occurrence (the kernel was down) runs once, then the schedule continues from now:
  no backfill;
- a prompt task becomes an idempotent submission (`submit_messages`, idempotency key
  `think-schedule:<agent key>:<task id>:<scheduled for, ms>`, metadata `source: scheduled-task`,
  trigger `scheduled`; its `last_status` is `submitted` until that turn ends, then the
  submission's outcome); a handler task is called with a `ScheduledTaskContext` (sync or async;
  its exception is recorded as `last_error`, the loop goes on);
- one-shot tasks (`once`, `delay`) are deleted after their run (and its retries);
- a task with `retry=` runs a failed run again, the same occurrence, after a backoff, its next
  attempt stored on the row (`think_nb.schedules.retry`); a new occurrence that comes due first
  supersedes a pending retry.

Handlers are stored by reference so they can be restored: a method of the agent (`method:<name>`)
or a function importable as `<module>:<qualname>` (a function defined in a notebook cell is
`__main__:<name>`, found again once that cell has run). A lambda or closure runs while this
process lives; after a restart its row is disarmed with `last_status = "lost"`.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from think_nb import events
from think_nb.aio import maybe_await, task_loop
from think_nb.errors import UserError
from think_nb.schedules import retry as retries
from think_nb.schedules import spec as specs
from think_nb.schedules.clock import Clock, SystemClock

if TYPE_CHECKING:
    from think_nb.store.agent import AgentStore

log = logging.getLogger("think_nb")


@dataclass
class ScheduledTaskContext:
    """What a handler receives (Think's scheduled-task handler context, snake_case).

    Attributes:
        task_id: the task's id.
        scheduled_for: the occurrence being run (epoch s; may be in the past for a missed run).
        occurrence_key: `"<task_id>:<scheduled_for in ms>"`.
        idempotency_key: `"think-schedule:<agent key>:<occurrence_key>"`.
        schedule: the normalised schedule (`every 60 seconds`, a cron expression, ...).
        kind: `once` | `delay` | `interval` | `cron`.
        timezone: the zone of a cron schedule, or None.
        metadata: the task's metadata, or None.
        agent: the agent.
        attempt: 1 for the occurrence's first run, 2 for its first retry, ... (`retry=`).
    """

    task_id: str
    scheduled_for: float
    occurrence_key: str
    idempotency_key: str
    schedule: str
    kind: str
    timezone: str | None
    metadata: Any
    agent: Any = field(repr=False, default=None)
    attempt: int = 1


@dataclass
class ScheduledTask:
    """A task `get_scheduled_tasks()` declares: exactly one of `prompt` (text, or a function
    returning it, sync or async) or `handler(ctx)`, and `schedule` (see `think_nb.schedules.spec`);
    `retry`: Think's `RetryOptions` (`think_nb.schedules.retry`). Dicts with the same keys are
    accepted."""

    schedule: Any
    prompt: Any = None
    handler: Callable[..., Any] | None = None
    timezone: str | None = None
    metadata: Any = None
    retry: Any = None


class ScheduleHost(Protocol):
    """What the scheduler needs of its agent (`think_nb.runtime.AgentRuntime` implements it): the
    user's object (handlers are its methods; prompts go through its `submit_messages`), the
    storage key and the store."""

    agent: Any
    key: str
    store: AgentStore


class Scheduler:
    """The scheduled tasks of one agent (see the module docstring)."""

    def __init__(self, host: ScheduleHost, clock: Clock | None = None) -> None:
        self.host = host
        self.rows = host.store.schedules
        self.clock: Clock = clock or SystemClock()
        self.task: asyncio.Task | None = None
        self._callables: dict[str, Callable[..., Any]] = {}  # handlers and prompt functions held in memory
        self._wake: asyncio.Event | None = None

    # -- declaring and scheduling ------------------------------------------------------------
    def reconcile(self, declared: Any) -> None:
        """Make the stored `declared` rows match `get_scheduled_tasks()`'s answer."""
        if declared is None:
            declared = {}
        if not isinstance(declared, dict):
            raise UserError("get_scheduled_tasks() returns a dict {task_id: ScheduledTask(...) or dict}, "
                            f"not {type(declared).__name__}.")
        now = self.clock.now()
        for task_id, raw in declared.items():
            task = _coerce_task(task_id, raw)
            when = specs.parse(task.schedule, task.timezone)
            self._store(str(task_id), "declared", when, task.prompt, task.handler, task.metadata, now, retry=task.retry)
        for row in self.rows.all():
            if row["source"] == "declared" and row["id"] not in declared:
                self.rows.delete(row["id"])

    def schedule(self, when: Any, task: Any, task_id: str | None, metadata: Any, *, every: bool = False,
                 retry: Any = None) -> str:
        """A runtime task (see `Think.schedule`); returns its id."""
        spec = specs.interval(when) if every else specs.parse(when)
        prompt, handler = (task, None) if isinstance(task, str) else (None, task)
        if prompt is None and not callable(handler):
            raise UserError(f"schedule(when, task): task is a prompt (str) or a callable, not {type(task).__name__}.")
        if prompt is not None and not prompt.strip():
            raise UserError("schedule(when, task): the prompt is empty; pass the text the agent should receive.")
        from think_nb.messages import new_id

        task_id = task_id or new_id("sched")
        shown = self._store(task_id, "runtime", spec, prompt, handler, metadata, self.clock.now(), rearm=True,
                            retry=retry)
        events.emit("schedule:create", {"callback": shown, "id": task_id}, agent=self.host.key)
        self.kick()
        return task_id

    def cancel(self, task_id: str) -> bool:
        self._callables.pop(task_id, None)
        row = self.rows.get(task_id)
        found = self.rows.delete(task_id)
        self._poke()
        if found and row is not None:
            events.emit("schedule:cancel", {"callback": row["task_repr"], "id": task_id}, agent=self.host.key)
        return found

    def _store(self, task_id: str, source: str, spec: specs.Spec, prompt: Any, handler: Any, metadata: Any,
               now: float, rearm: bool = False, retry: Any = None) -> str:
        """Store (or re-arm) a task's row; returns how `get_schedules()` shows the task."""
        retry = retries.options(retry, f"scheduled task {task_id!r}")
        if (prompt is None) == (handler is None):
            raise UserError(f"scheduled task {task_id!r}: give exactly one of prompt= or handler=.")
        if prompt is not None and not isinstance(prompt, str):
            if not callable(prompt):
                raise UserError(f"scheduled task {task_id!r}: prompt is text or a function returning text.")
            self._callables[task_id] = prompt
            stored, shown = {"prompt_fn": _reference(self.host.agent, prompt)}, f"prompt from {_name(prompt)}()"
        elif prompt is not None:
            stored, shown = {"prompt": prompt}, prompt if len(prompt) <= 80 else prompt[:79] + "…"
        else:
            if not callable(handler):
                raise UserError(f"scheduled task {task_id!r}: handler must be callable, not {type(handler).__name__}.")
            self._callables[task_id] = handler
            stored, shown = {"handler": _reference(self.host.agent, handler)}, f"{_name(handler)}(ctx)"
        digest = hashlib.sha256(repr((spec, sorted(stored.items()), shown)).encode()).hexdigest()
        old = self.rows.get(task_id)
        keep = old is not None and old["digest"] == digest and not rearm and old["next_run_at"] is not None
        pending = {k: old[k] for k in ("attempt", "retry_at", "retry_for")} if keep and old else {}
        self.rows.put({"id": task_id, "source": source, "kind": spec.kind, "spec": spec.text,
                       "timezone": spec.timezone, "seconds": spec.seconds, "task": stored, "task_repr": shown,
                       "metadata": metadata, "digest": digest,
                       "next_run_at": old["next_run_at"] if keep and old else spec.first(now),
                       "anchor": old["anchor"] if keep and old else now, "retry": retry, **pending})
        self._poke()
        return shown

    # -- the loop ----------------------------------------------------------------------------
    def kick(self) -> asyncio.Task | None:
        """Start the loop unless it runs or there is nothing armed."""
        if self.task is not None and not self.task.done():
            self._poke()
            return self.task
        if not any(_due(r) is not None for r in self.rows.all()):
            return None
        loop = task_loop()
        self.task = loop.create_task(self._loop(), name=f"think-schedules-{self.host.key}")
        return self.task

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _loop(self) -> None:
        self._wake = asyncio.Event()
        while True:
            armed = [r for r in self.rows.all() if _due(r) is not None]
            if not armed:
                self._wake.clear()
                await self._wake.wait()
                continue
            soonest = min(t for r in armed if (t := _due(r)) is not None)
            if soonest > self.clock.now():
                self._wake.clear()
                await self.clock.sleep_until(soonest, self._wake)
                continue
            now = self.clock.now()
            for row in armed:
                if row["next_run_at"] is not None and row["next_run_at"] <= now:
                    await self.run_due(row, now)  # a new occurrence supersedes a pending retry
                elif row["retry_at"] is not None and row["retry_at"] <= now:
                    await self.run_retry(row, now)

    async def run_due(self, row: dict, now: float) -> None:
        """Claim and run one due occurrence; never raises (the outcome is recorded on the row)."""
        spec = specs.Spec(row["kind"], row["spec"], row["seconds"], None, row["timezone"])
        scheduled_for = row["next_run_at"]
        following = spec.next_after(now, row["anchor"])
        if not self.rows.claim(row["id"], scheduled_for, following, now):
            return  # another process took it, or it was cancelled
        await self._attempt(row, scheduled_for, 1, last=following is None)

    async def run_retry(self, row: dict, now: float) -> None:
        """Claim and run the pending retry of a failed occurrence; never raises."""
        if not self.rows.claim_retry(row["id"], row["retry_at"], now):
            return  # another process took it, or it was cancelled or superseded
        await self._attempt(row, row["retry_for"], row["attempt"] + 1, last=row["next_run_at"] is None)

    async def _attempt(self, row: dict, scheduled_for: float, attempt: int, *, last: bool) -> None:
        """Run attempt `attempt` of occurrence `scheduled_for` and record it: a failure with
        attempts left is retried later (`retry_later`); `last`: no occurrence follows (a one-shot
        task's row goes once it is settled)."""
        occurrence = f"{row['id']}:{round(scheduled_for * 1000)}"
        key = f"think-schedule:{self.host.key}:{occurrence}"
        ctx = ScheduledTaskContext(row["id"], scheduled_for, occurrence, key, row["spec"], row["kind"],
                                   row["timezone"], row["metadata"], self.host.agent, attempt)
        fields = {"callback": row["task_repr"], "id": row["id"]}
        events.emit("schedule:execute", fields, agent=self.host.key)
        try:
            status, error = await self._run(row, ctx)
        except (Exception, KeyboardInterrupt) as exc:  # a task's failure never stops the schedule
            log.exception("scheduled task %s failed (attempt %d)", row["id"], attempt)
            status, error = "error", f"{type(exc).__name__}: {exc}"
        if status in ("error", "lost"):
            events.emit("schedule:error", {**fields, "error": error or status, "attempts": attempt},
                        agent=self.host.key)
        retry = row.get("retry")
        if status == "error" and retry and attempt < retry["max_attempts"]:
            self.rows.retry_later(row["id"], self.clock.now() + retries.delay_s(attempt, retry), scheduled_for, error)
            return
        if last and status != "lost":
            self.rows.delete(row["id"])
            self._callables.pop(row["id"], None)
        elif status == "lost":
            self.rows.disarm(row["id"], status, error or "")
        elif status != "submitted":  # recorded before the submission could settle (`_submit`)
            self.rows.record(row["id"], status, error)

    async def _run(self, row: dict, ctx: ScheduledTaskContext) -> tuple[str, str | None]:
        task = row["task"]
        if "prompt" in task:
            return await self._submit(task["prompt"], row, ctx)
        fn = self._resolve(row["id"], task.get("handler") or task.get("prompt_fn"))
        if fn is None:
            return "lost", (f"{row['task_repr']} is not available in this process (a lambda or closure runs only "
                            "while the process that scheduled it lives); cancel_schedule() it and schedule a "
                            "method of the agent or a module-level function.")
        if "prompt_fn" in task:
            text = await maybe_await(fn())
            if not isinstance(text, str) or not text.strip():
                return "error", f"the prompt function returned {text!r}, not text"
            return await self._submit(text, row, ctx)
        await maybe_await(fn(ctx))
        return "completed", None

    async def _submit(self, text: str, row: dict, ctx: ScheduledTaskContext) -> tuple[str, str | None]:
        from think_nb.messages import user_message

        metadata = {**(row["metadata"] or {}), "source": "scheduled-task", "owner_key": self.host.key,
                    "task_id": row["id"], "scheduled_for": ctx.scheduled_for, "schedule": row["spec"]}
        self.rows.record(row["id"], "submitted", None)  # before its turn can end and settle it
        result = await self.host.agent.submit_messages([user_message(text)], idempotency_key=ctx.idempotency_key,
                                                       metadata=metadata)
        return ("submitted" if result["accepted"] else "duplicate"), None

    def _resolve(self, task_id: str, ref: str | None) -> Callable[..., Any] | None:
        if task_id in self._callables:
            return self._callables[task_id]
        if not ref:
            return None
        if ref.startswith("method:"):
            fn = getattr(self.host.agent, ref.removeprefix("method:"), None)
            return fn if callable(fn) else None
        module_name, _, qualname = ref.partition(":")
        try:
            obj: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
            for attr in qualname.split("."):
                obj = getattr(obj, attr)
        except (ImportError, AttributeError):
            return None
        return obj if callable(obj) else None


def _coerce_task(task_id: Any, raw: Any) -> ScheduledTask:
    if isinstance(raw, ScheduledTask):
        return raw
    if isinstance(raw, dict):
        unknown = set(raw) - {"schedule", "prompt", "handler", "timezone", "metadata", "retry"}
        if unknown or "schedule" not in raw:
            raise UserError(f"scheduled task {task_id!r}: keys are schedule (required), prompt or handler, "
                            f"timezone, metadata, retry; got {sorted(raw)}.")
        return ScheduledTask(**raw)
    raise UserError(f"scheduled task {task_id!r}: give a ScheduledTask(...) or a dict, not {type(raw).__name__}.")


def _due(row: dict) -> float | None:
    """When a row runs next: its next occurrence or its pending retry, whichever is sooner."""
    times = [t for t in (row["next_run_at"], row["retry_at"]) if t is not None]
    return min(times) if times else None


def _reference(agent: Any, fn: Callable[..., Any]) -> str | None:
    """How to find `fn` again in a new process, or None (a lambda, a closure)."""
    if getattr(fn, "__self__", None) is agent:  # a method: found again by its attribute name on the class
        func = getattr(fn, "__func__", None)
        for klass in type(agent).__mro__:
            for name, value in vars(klass).items():
                if value is func:
                    return f"method:{name}"
        return None
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or not qualname or "<" in qualname:
        return None
    return f"{module}:{qualname}"


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
