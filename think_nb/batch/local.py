"""The in-kernel engine of `agent.map`: `concurrency` lanes, each a sub-agent running rows one after
another, each row in a new session of its lane (see `think_nb.batch` for why).

A lane takes the next pending row, waits for the pacer and the budget, claims the row in the
ledger (`pending` → `running`), opens a session for it, binds the row to that conversation, runs
one `send` (with the row's data context and `output_type`), settles what the turn left waiting
(`approvals`), and writes the row's result and its ledger status in one transaction. A row that
was not pending when its lane reached it (settled by an earlier call, cancelled) is left alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from think_nb.batch import outcome
from think_nb.batch.pacing import Budget, Pacer
from think_nb.batch.progress import Progress
from think_nb.batch.rows import Row
from think_nb.binding import runtime_of
from think_nb.messages import new_id
from think_nb.store.batch import BatchRows
from think_nb.store.messages import MessageStore

Agent = Any
"""A `think_nb.Think` (not imported: `think_nb.agent` imports this module)."""

if TYPE_CHECKING:
    from think_nb.turns.result import TurnResult

__all__ = ["DENIED_TEXT", "INTERRUPTED", "LocalRun", "lane_name", "open_conversation", "row_turn"]

DENIED_TEXT = "Refused by the batch run's approvals='deny' policy (nothing ran)."
INTERRUPTED = ("The process running this row ended while it ran; the row is not run again (its tools may have "
               "run). Its conversation keeps what was stored.")
NO_CLIENT = "No client answers tool calls in a batch run."
MAX_REFUSALS = 8
"""Continuation turns a row gets after refusing its waiting calls (`approvals='deny'`); past them the row
is an `error` (STUBBORN_TEXT), as each refusal's continuation is a model call that costs tokens."""
STUBBORN_TEXT = (f"The model asked for gated or client tools again after {MAX_REFUSALS} refusals "
                 "(approvals='deny'); the row stopped there.")


def lane_name(run_id: str, lane: int | str) -> str:
    return f"map-{run_id}-{lane}"


def open_conversation(db: Any, conversation_id: str) -> list[dict]:
    """The messages of a stored conversation (`<agent key>#<session id>`, or a key alone)."""
    key, _, session = conversation_id.partition("#")
    return MessageStore(db, key, session).branch()


class LocalRun:
    """One call of `map` on one agent (see the module docstring)."""

    def __init__(self, agent: Agent, run_id: str, rows: list[Row], store: BatchRows, *, concurrency: int,
                 output_type: type | None, approvals: str, budget: Budget, pacer: Pacer, progress: bool,
                 on_settled: Callable[[Row, dict], None] | None = None) -> None:
        self.agent, self.run_id, self.rows, self.store = agent, run_id, rows, store
        self.concurrency, self.output_type, self.approvals = concurrency, output_type, approvals
        self.budget, self.pacer, self.show = budget, pacer, progress
        self.on_settled = on_settled
        self.stop_reason: str | None = None

    async def go(self, todo: list[Row], done: int) -> None:
        """Run the `todo` rows (`done` of the run settled before); returns when each one is settled
        or the budget stopped the run. Cancelled (a Stop), aborts the rows in flight, settles them
        `aborted`, and re-raises."""
        queue: asyncio.Queue[Row] = asyncio.Queue()
        for row in todo:
            queue.put_nowait(row)
        progress = Progress(self.run_id, len(self.rows), done, self.show)
        lanes = [self._lane(i) for i in range(min(self.concurrency, len(todo)))]
        workers = [asyncio.ensure_future(self._work(lane, queue, progress)) for lane in lanes]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            progress.close()

    def _lane(self, i: int) -> Agent:
        return self.agent.sub_agent(type(self.agent), lane_name(self.run_id, i))

    async def _work(self, lane: Agent, queue: asyncio.Queue[Row], progress: Progress) -> None:
        while not queue.empty():
            if self.stop_reason or (reason := self.budget.reason()):
                self.stop_reason = self.stop_reason or reason
                return
            row = queue.get_nowait()
            await self.pacer.wait()
            if self.stop_reason or (reason := self.budget.reason()):  # another lane spent it while this one waited
                self.stop_reason = self.stop_reason or reason
                return
            result = await self._row(lane, row)
            if result is None:
                continue
            self.budget.add(result)
            self.pacer.spent((result["input_tokens"] or 0) + (result["output_tokens"] or 0))
            progress.settled(result)
            if self.on_settled is not None:
                self.on_settled(row, result)

    async def _row(self, lane: Agent, row: Row) -> dict | None:
        """Run one row on `lane`; its result, or None when the row was not pending."""
        request_id = new_id("req")
        if not self.store.claim(self.run_id, row.key, request_id):
            return None
        runtime = runtime_of(lane)
        session_id = lane.create_session(f"map {self.run_id} {row.key}", switch=True)
        conversation_id = runtime.store.conversation_key(session_id)
        self.store.bind(self.run_id, row.key, conversation_id)
        started = time.monotonic()
        turn = asyncio.ensure_future(self._turn(lane, row))
        try:
            status, error, output = await asyncio.shield(turn)
        except asyncio.CancelledError:
            lane.abort_all_requests()
            status, error, output = await _ended(turn)
            self._settle(row, runtime, conversation_id, status, error, output, started)
            raise
        return self._settle(row, runtime, conversation_id, status, error, output, started)

    def _settle(self, row: Row, runtime: Any, conversation_id: str, status: str, error: str | None, output: Any,
                started: float) -> dict:
        messages = runtime.store.messages.branch()
        result = outcome.of_messages(messages, status, error, output, time.monotonic() - started, conversation_id)
        self.store.settle(self.run_id, row.key, status, error, result)
        return result

    async def _turn(self, lane: Agent, row: Row) -> tuple[str, str | None, Any]:
        return await row_turn(lane, row, self.run_id, self.output_type, self.approvals)


async def row_turn(lane: Agent, row: Row, run_id: str, output_type: type | None,
                   approvals: str) -> tuple[str, str | None, Any]:
    """The row's turn(s) on `lane` (in its active session): `(status, error, output)`."""
    metadata = {"batch": {"run_id": run_id, "row": row.key}}
    result: TurnResult = await lane.send(row.text, context=row.context, output_type=output_type, metadata=metadata)
    refusals = 0
    while result.status == "completed" and result.waiting:  # a stopped turn's cut calls wait for nobody
        if approvals == "ask":  # the panel answers; the lane waits, the other lanes go on
            result = await _answered(lane, result)
            break
        if refusals == MAX_REFUSALS:  # a model that asks again after every refusal would never end the row
            _refuse_all(lane, result, auto_continue=False)  # nothing left waiting in the row's conversation
            result = _settled(result, STUBBORN_TEXT)
            break
        refusals += 1
        result = await _refuse(lane, result)
    return result.status, result.error or result.reason, result.output


async def _answered(lane: Agent, result: TurnResult) -> TurnResult:
    """Wait until the user has answered what `result` left waiting and the continuation turns
    it started have ended; the last one's result (its `output`: a structured turn's continuation
    is structured, `TurnEngine.structured_waits`), else `result` as it was."""
    ended: list[asyncio.Future] = []

    class Continuations:
        def on_submitted(self, request_id: str, future: Any = None) -> None:
            if future is not None:
                ended.append(future)

    unsubscribe = runtime_of(lane).engine.listeners.add(Continuations())
    try:
        await lane.wait_until_stable()
    finally:
        unsubscribe()
    for future in reversed(ended):
        if future.done() and not future.cancelled() and future.exception() is None:
            last: TurnResult = future.result()
            return last
    return result


async def _refuse(lane: Agent, result: TurnResult) -> TurnResult:
    """Deny every approval the turn left waiting (and fail its client tool calls); the
    continuation turn tells the model."""
    continuation = _refuse_all(lane, result)
    if continuation is None:  # nothing continued: do not loop on the same waiting calls
        return _settled(result, "the turn left tool calls waiting that the batch could not settle")
    return await continuation


def _refuse_all(lane: Agent, result: TurnResult, auto_continue: bool = True) -> Any:
    """Deny the turn's waiting approvals and fail its client calls; the continuation's task, or None."""
    waiting = {p["toolCallId"]: p["state"] for p in result._waiting_parts()}
    continuation = None
    for call_id, state in waiting.items():
        if state == "approval-requested":
            continuation = lane.deny(call_id, DENIED_TEXT, auto_continue=auto_continue) or continuation
        else:
            continuation = lane.add_tool_output(call_id, error_text=NO_CLIENT, auto_continue=auto_continue) \
                or continuation
    return continuation


async def _ended(turn: asyncio.Future) -> tuple[str, str | None, Any]:
    try:
        status, error, output = await turn
    except BaseException as exc:  # noqa: BLE001 - the aborted turn's own failure is the row's error
        return "aborted", f"{type(exc).__name__}: {exc}" if str(exc) else "stopped", None
    return ("aborted" if status == "completed" else status), error or "stopped", output


def _settled(result: TurnResult, error: str) -> TurnResult:
    """`result` as an `error` that waits for nothing (so the caller's loop ends)."""
    from dataclasses import replace

    return replace(result, status="error", error=error, message={**(result.message or {}), "parts": []})
