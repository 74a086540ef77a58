"""Submissions (Think's `submitMessages`): messages durably accepted before any inference.

    result = await agent.submit_messages([user_message("hi")], submission_id="job-1")
    result["accepted"], result["status"]          # True, "pending"
    agent.inspect_submission("job-1")             # {submission_id, status, request_id, ...}

`submit_messages` writes the messages to the ledger (`think_nb.store.submissions`) and returns at
once; a drain task runs the pending submissions oldest first (FIFO), one turn each (trigger
`submission`), through the agent's turn queue. The messages are appended to the transcript only
when their turn starts, so a submission cancelled before that never shows up.

- Idempotent on `submission_id` (and `idempotency_key`): a repeat returns the existing row with
  `accepted=False`; the same id with other messages, or a key already used by another id, is a
  `UserError`.
- Statuses: pending → running → completed | error | aborted | skipped (Think's).
- `cancel_submission(id)`: a pending row becomes `aborted` (messages never appended); a running
  one is aborted (its turn too) and never overwritten by the turn's late outcome.
- `clear_messages()` skips every pending row.
- Every status change is reported to the agent's `on_submission_status(inspection)` (Think's
  `onSubmissionStatus`): `pending` when accepted (awaited before `submit_messages` returns),
  `running`, the outcome; a cancel, a clear and a dead process's rows too. The drain awaits the
  hook before it goes on; a hook that raises is logged and changes nothing. From sync callers
  (`cancel_submission`, `clear_messages`, the agent's creation) an async hook runs as a task.
- When the agent is created again, `running` rows of a dead process go back to `pending` if their
  messages were never applied; an applied one whose turn recovery continues (`on_chat_recovery`
  returned `continue_`, `think_nb.turns.recovery`) stays `running`, owned by this process, and
  is settled with the continuation's outcome (completed | error | skipped | aborted; a chain of
  continuations, each cut off in turn, settles the submission its first turn ran); one cancelled
  before the continuation starts is not continued, and cancelling it while the continuation runs
  aborts that turn. Any other applied one becomes `error` (its partial reply is kept). Then
  pending rows are drained (on the running loop, or on the script loop that `agent.run()` drives;
  `agent.submissions_task` is the drain).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from think_nb import events
from think_nb.aio import maybe_await, task_loop
from think_nb.errors import UserError
from think_nb.messages import new_id, validate

if TYPE_CHECKING:
    from think_nb.store.agent import AgentStore

log = logging.getLogger("think_nb")
STATUSES = ("pending", "running", "completed", "aborted", "skipped", "error")
INTERRUPTED = "The process running this submission ended after its messages were applied."


def inspection(row: dict) -> dict:
    """Think's `ThinkSubmissionInspection`, snake_case."""
    return {"submission_id": row["id"], "idempotency_key": row["idempotency_key"], "request_id": row["request_id"],
            "status": row["status"], "error": row["error"], "metadata": row["metadata"],
            "created_at": row["created_at"], "started_at": row["started_at"], "completed_at": row["completed_at"]}


class SubmissionsHost(Protocol):
    """What the ledger needs of its agent (`think_nb.runtime.AgentRuntime` implements it)."""

    key: str
    store: AgentStore

    def on_submission_status(self, inspection: dict) -> Any: ...  # the user's hook (sync or async)


class SubmissionsEngine(Protocol):
    """What the ledger needs of the turn engine: start a turn, abort one."""

    @property
    def start(self) -> Callable[..., Any]: ...  # `TurnEngine.start(messages, request_id, trigger=..., ...)`

    def abort_request(self, request_id: str, reason: str | None = None) -> None: ...


class Submissions:
    """The submission ledger of one agent and its drain (see the module docstring)."""

    def __init__(self, host: SubmissionsHost, engine: SubmissionsEngine) -> None:
        self.host = host
        self.engine = engine
        self.rows = host.store.submissions
        self.task: asyncio.Task | None = None
        self._reports: set[asyncio.Task] = set()  # async status hooks started from sync code
        self._recovering: dict[str, str] = {}  # incident id (its first request id) -> submission kept running
        self._continuing: dict[str, str] = {}  # submission id -> request id of the continuation running it

    async def submit(self, messages: list[dict], submission_id: str | None, idempotency_key: str | None,
                     metadata: Any) -> dict:
        if callable(messages) or not isinstance(messages, list | tuple) or not messages:
            raise UserError("submit_messages() takes a non-empty list of UIMessages (a function is not accepted: "
                            "the messages are stored before the turn runs).")
        messages = [validate.incoming(m, f"message {n}") for n, m in enumerate(messages)]  # their stored form
        for n, message in enumerate(messages):  # the trust boundary, before anything is stored
            validate.check_message(message, f"message {n}")
        # ids are left out: the same text sent again with fresh ids (`user_message`) is the same submission
        digest = json.dumps([{k: v for k, v in m.items() if k != "id"} for m in messages], sort_keys=True, default=str)
        explicit = submission_id is not None
        submission_id = submission_id or new_id("sub")
        accepted = [{**m, "id": m.get("id") or new_id("msg")} for m in messages]
        row, inserted = self.rows.accept(submission_id, idempotency_key, accepted, digest, metadata)
        if not inserted:
            if row["id"] == submission_id and row["digest"] != digest:
                raise UserError(f"Submission {submission_id!r} was accepted with other messages; use a new "
                                "submission_id for new messages.")
            if explicit and row["id"] != submission_id:
                raise UserError(f"idempotency_key {idempotency_key!r} belongs to submission {row['id']!r}, "
                                f"not {submission_id!r}.")
            return {**inspection(row), "accepted": False}
        events.emit("submission:create", {"submission_id": submission_id, "request_id": None,
                                          "idempotency_key": idempotency_key}, agent=self.host.key)
        self._status(submission_id, None, "pending")
        await self.report(row)  # Think awaits the status hook before returning the acceptance
        self.kick()
        return {**inspection(row), "accepted": True}

    def _status(self, submission_id: str, request_id: str | None, status: str, error: str | None = None) -> None:
        """A row changed status: `submission:status`, and `submission:error` for an error (Think's
        `_emitSubmissionStatus`)."""
        key = self.host.key
        events.emit("submission:status", {"submission_id": submission_id, "request_id": request_id,
                                          "status": status}, agent=key, request_id=request_id)
        if status == "error":
            events.emit("submission:error", {"submission_id": submission_id, "request_id": request_id,
                                             "error": error or ""}, agent=key, request_id=request_id)

    # -- status reports (on_submission_status) ----------------------------------------------------
    async def report(self, row: dict | None) -> None:
        """Tell `on_submission_status` about `row`'s status now (awaited; what it raises is logged)."""
        if row is None:
            return
        view = inspection(row)
        try:
            await maybe_await(self.host.on_submission_status(view))
        except Exception:
            log.exception("on_submission_status raised for submission %s (%s); the submission goes on",
                          view["submission_id"], view["status"])

    def report_soon(self, submission_id: str) -> None:
        """`report` from sync code: a sync hook is called now, an async one runs as a task."""
        row = self.rows.get(submission_id)
        if row is None:
            return
        view = inspection(row)
        try:
            outcome = self.host.on_submission_status(view)
        except Exception:
            log.exception("on_submission_status raised for submission %s (%s); the submission goes on",
                          submission_id, view["status"])
            return
        if inspect.isawaitable(outcome):
            task = task_loop().create_task(self._awaited(outcome, view))
            self._reports.add(task)
            task.add_done_callback(self._reports.discard)

    async def _awaited(self, outcome: Any, view: dict) -> None:
        try:
            await outcome
        except Exception:
            log.exception("on_submission_status raised for submission %s (%s); the submission goes on",
                          view["submission_id"], view["status"])

    def kick(self) -> asyncio.Task | None:
        """Start the drain unless it runs (on the running loop, else on the script loop)."""
        if self.task is not None and not self.task.done():
            return self.task
        loop = task_loop()
        self.task = loop.create_task(self._drain(), name=f"think-submissions-{self.host.key}")
        return self.task

    async def _drain(self) -> None:
        while (row := self.rows.next_pending()) is not None:
            request_id = new_id("req")
            if not self.rows.start(row["id"], request_id):
                continue
            self._status(row["id"], request_id, "running")
            await self.report(self.rows.get(row["id"]))
            try:
                scheduled = (row["metadata"] or {}).get("source") == "scheduled-task" if isinstance(
                    row["metadata"], dict) else False
                result = await self.engine.start(row["messages"], request_id,
                                                 trigger="scheduled" if scheduled else "submission")
                status, error = result.status, result.error or result.reason
            except Exception as exc:
                log.exception("submission %s failed to start", row["id"])
                status, error = "error", f"{type(exc).__name__}: {exc}"
            if self.rows.finish(row["id"], status, error, only_from=("running",)):  # else cancelled: told then
                self._status(row["id"], request_id, status, error)
                await self.report(self.rows.get(row["id"]))
            self._tell_schedule(row, status, error)

    def _tell_schedule(self, row: dict, status: str, error: str | None) -> None:
        """A scheduled prompt's submission ended: its task's `last_status` goes from `submitted`
        to the outcome (completed | error | aborted | skipped), so `get_schedules()` shows it."""
        metadata = row["metadata"] if isinstance(row["metadata"], dict) else {}
        if metadata.get("source") == "scheduled-task" and metadata.get("task_id"):
            self.host.store.schedules.settle(str(metadata["task_id"]), status, error)

    def cancel(self, submission_id: str) -> dict | None:
        row = self.rows.get(submission_id)
        if row is None:
            return None
        if row["status"] == "pending":
            if self.rows.finish(submission_id, "aborted", None, only_from=("pending",)):
                self._status(submission_id, None, "aborted")
                self.report_soon(submission_id)
        elif row["status"] == "running":
            if self.rows.finish(submission_id, "aborted", None, only_from=("running",)):
                self._status(submission_id, row["request_id"], "aborted")
                self.report_soon(submission_id)
            for request_id in {row["request_id"], self._continuing.get(submission_id)} - {None}:
                self.engine.abort_request(request_id, "submission cancelled")
        return self.inspect(submission_id)

    def skip_pending(self) -> None:
        """Every pending row becomes `skipped` (`clear_messages`), each reported."""
        for row in self.rows.select("pending"):
            if self.rows.finish(row["id"], "skipped", None, only_from=("pending",)):
                self._status(row["id"], None, "skipped")
                self.report_soon(row["id"])

    def inspect(self, submission_id: str) -> dict | None:
        row = self.rows.get(submission_id)
        return inspection(row) if row is not None else None

    def recover(self, continuing: set[str] | frozenset[str] = frozenset()) -> None:
        """Settle the running rows of a dead process, then drain what is pending (see the module
        docstring). `continuing`: the incident ids recovery continues (`think_nb.turns.recovery.chains`);
        a row whose turn started one of them stays running until `continue_ends`."""
        for row in self.rows.orphaned():
            applied = any(self.host.store.messages.get(m["id"]) is not None for m in row["messages"])
            if applied and row["request_id"] in continuing:
                if self.rows.adopt(row["id"]):  # this process continues it: no other opener settles it
                    self._recovering[row["request_id"]] = row["id"]
                continue
            if applied:
                if self.rows.finish(row["id"], "error", INTERRUPTED, only_from=("running",)):
                    self._status(row["id"], row["request_id"], "error", INTERRUPTED)
            else:
                self.rows.requeue(row["id"])
                self._status(row["id"], None, "pending")
            self.report_soon(row["id"])
        if self.rows.next_pending() is not None:
            self.kick()

    # -- recovery continuations (think_nb.turns.recovery.RecoveredSubmissions) -------------------
    def continue_begins(self, incident_id: str, request_id: str) -> bool | None:
        """Turn `request_id` continues chain `incident_id`: None when no submission recovery kept
        running is linked to it, False when that one is no longer running (cancelled: do not
        continue), else True (a cancel now aborts `request_id` too)."""
        submission_id = self._recovering.get(incident_id)
        if submission_id is None:
            return None
        row = self.rows.get(submission_id)
        if row is None or row["status"] != "running":
            del self._recovering[incident_id]
            return False
        self._continuing[submission_id] = request_id
        return True

    async def continue_ends(self, incident_id: str, status: str, error: str | None) -> None:
        """The continuation of chain `incident_id` ended `status`: its submission is settled so
        (not when it was cancelled meanwhile: a cancel is never overwritten)."""
        submission_id = self._recovering.pop(incident_id, None)
        if submission_id is None:
            return
        request_id = self._continuing.pop(submission_id, None)
        if status not in STATUSES or status in ("pending", "running"):
            status, error = "error", error or f"the continuation ended {status}"
        if self.rows.finish(submission_id, status, error, only_from=("running",)):
            self._status(submission_id, request_id, status, error)
            await self.report(self.rows.get(submission_id))
        row = self.rows.get(submission_id)
        if row is not None:
            self._tell_schedule(row, status, error)
