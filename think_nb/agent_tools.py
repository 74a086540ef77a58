"""Agent-tool runs: a sub-agent turn one of a parent's tools started (`Think.delegate`), recorded
durably and re-attached when the parent is created again after its process died (Think's agent
tools: `runAgentTool`, `cf_agent_tool_child_runs`, startup re-attach, cloudflare/agents#1630).

Recording (rows of `think_child_runs`, `think_nb.store.child_runs`):

- the run id is `agent-tool:<tool call id>` when `delegate` runs inside one of the parent's tool
  calls (Think's stable run id), else `agent-tool:<new id>`;
- the row is written `running` before the child's turn starts, the child's request id bound in
  the child's `on_start` (before its turn runs, as Think binds it), and settled once: `completed`
  (summary and output: the child's reply text), `error`, `aborted` (the parent's turn was
  cancelled, or `abort_sub_agent`), `interrupted`;
- a run that `completed` (or failed) is not run again: `delegate` in the same tool call returns
  its output (or raises its error), as Think's `runAgentTool` is idempotent by run id; an
  `interrupted` one runs again (Think: a soft terminal, retryable).

Re-attach (`Reattach`, when the parent is created; Think's `_reconcileAgentToolRuns`), for each
`running` row a dead process left:

1. when the child's turn had ended (its turn log says so), the run is settled from the file: the
   reply is read from the child's messages; no model is called, nothing runs again;
2. when the child's turn was cut too, Think re-attaches and the child heals itself through its own
   chat recovery while the parent waits for the real outcome. Here the child is created again
   (`sub_agent`; its class found by name among the live `Think` subclasses, the recorded
   `module:qualname` first), which asks the child's `on_chat_recovery`. When that continues the
   child's turn, the parent waits for it (first thing in the parent's `recovery_task`) and the run
   gets the child's reply (its partial text plus the continuation). Otherwise (declined,
   exhausted, no class to make it with) the run is sealed `interrupted` (Think's
   `AgentToolFailure` with status `interrupted`, retryable): an `output-error` saying to call the
   tool again;
3. each settled run's outcome is delivered to the parent's tool call that started it, when that
   call has no result yet: into the recovered partial reply before it is stored (so the parent's
   `on_chat_recovery` sees it, and `persist=False` keeps it), or, for a child resumed in step 2,
   into the stored reply once the child has answered. The parent's continuation then reads the
   child's answer instead of running the child again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from think_nb.messages import new_id, text_of
from think_nb.messages.accumulator import SETTLED_TOOL_STATES, is_tool_part
from think_nb.store.messages import MessageStore
from think_nb.store.turn_log import TurnLog

if TYPE_CHECKING:
    from think_nb.store.child_runs import ChildRunRows
    from think_nb.store.db import Database
    from think_nb.turns.result import TurnResult

log = logging.getLogger("think_nb")

RUN_PREFIX = "agent-tool:"
INTERRUPTED_TEXT = ("The sub-agent {child!r} was interrupted before it finished (the process running it ended) and "
                    "did not resume; call the tool again to retry.")
"""The `output-error` of a run sealed `interrupted` (Think's retryable `AgentToolFailure`)."""
DELETED_TEXT = "the sub-agent was deleted"
"""The error of a run whose child was deleted while it ran (`delete_sub_agent` erases the run too)."""
SUMMARY_CHARS = 200


def run_id(tool_call_id: str | None) -> str:
    """The run id of a `delegate` in tool call `tool_call_id` (None: outside a tool call)."""
    return RUN_PREFIX + (tool_call_id or new_id("run"))


def class_ref(cls: type) -> str:
    """`module:qualname` of a class (how a re-attach finds it first)."""
    return f"{cls.__module__}:{cls.__qualname__}"


def summary(text: str) -> str:
    """A run's one-line summary: the reply's first line, at most `SUMMARY_CHARS` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def failure(row: dict) -> str:
    """What the parent's tool call is told of a run that did not complete (its `output-error`)."""
    if row["status"] == "interrupted":
        return str(row["error"] or INTERRUPTED_TEXT.format(child=row["child_key"]))
    return f"Sub-agent {row['child_key']!r} ended {row['status']}: {row['error']}"


def finish(runs: ChildRunRows, rid: str, result: TurnResult, text: str) -> dict:
    """Settle run `rid` with the child's `result` (a run settled first, by `abort_sub_agent`, keeps
    its outcome); returns the row."""
    begun = runs.get(rid)
    assert begun is not None  # written by `delegate` before the child's turn
    status = {"completed": "completed", "aborted": "aborted"}.get(result.status, "error")
    error = result.error
    if result.interrupted:  # the stall watchdog ended it
        status, error = "interrupted", f"the sub-agent's stream stalled: {result.error}"
    elif result.status == "skipped":
        error = "the sub-agent's turn was skipped before it could finish (its conversation was cleared)"
    elif status == "aborted" and not error:
        error = "the sub-agent's turn was cancelled"
    done = status == "completed"
    outcome = {"status": status, "summary": summary(text) if done else None, "output": text if done else None,
               "error": None if done else error}
    runs.settle(rid, status, summary=outcome["summary"], output=outcome["output"], error=outcome["error"])
    if (row := runs.get(rid)) is not None:
        return row
    return {**begun, **outcome, **({} if done else {"error": DELETED_TEXT})}  # erased by `delete_sub_agent`


def deliver(runs: ChildRunRows, message: dict) -> bool:
    """Give each tool part of `message` still without a result the outcome of the settled run it
    started (in place); True when one changed."""
    changed = False
    for part in message.get("parts") or []:
        if not is_tool_part(part) or part.get("state") in SETTLED_TOOL_STATES or not part.get("toolCallId"):
            continue
        row = runs.get(run_id(str(part["toolCallId"])))
        if row is None or row["status"] == "running":
            continue
        if row["status"] == "completed":
            part.update(state="output-available", output=row["output"])
        else:
            part.update(state="output-error", errorText=failure(row))
        changed = True
    return changed


def child_outcome(db: Database, row: dict) -> tuple[str, Any, str | None] | None:
    """`(status, output, error)` of a run whose child's turn ended, read from the child's rows;
    None when the child's turn had not ended (or never started)."""
    if not row["request_id"]:
        return None
    turn = TurnLog(db, row["child_key"]).get(row["request_id"])
    if turn is None or turn["status"] in ("running", "interrupted"):
        return None
    if turn["status"] == "completed":
        return "completed", reply(db, row), None
    status = "aborted" if turn["status"] == "aborted" else "error"
    return status, None, turn["error"] or f"the sub-agent's turn ended {turn['status']}"


def reply(db: Database, row: dict) -> str:
    """The child's reply to the run's user message: the text of the assistant messages after it
    on the child's branch (after a recovery, the partial and its continuation)."""
    branch = MessageStore(db, row["child_key"]).branch()
    ids = [m["id"] for m in branch]
    after = branch[ids.index(row["input_message_id"]) + 1:] if row["input_message_id"] in ids else branch[-1:]
    return "".join(text_of(m) for m in after if m["role"] == "assistant")


def find_class(base: type, class_name: str, ref: str | None) -> type | None:
    """The live subclass of `base` named `class_name` to make a child with again: the one whose
    `module:qualname` is `ref`, else the last one found (the newest definition, usually)."""
    found = [c for c in _subclasses(base) if c.__name__ == class_name]
    exact = [c for c in found if class_ref(c) == ref]
    pool = exact or found
    return pool[-1] if pool else None


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    sub: type
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


class Reattach:
    """Re-attach the agent-tool runs a dead process left (see the module docstring), for the
    parent `runtime` being created: `prepare` is `think_nb.turns.recovery.recover`'s hook (steps
    1-3, before the recovered partials are stored); `pending`, when a child was resumed, is awaited
    first in the parent's `recovery_task`."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.waiting: list[tuple[dict, Any]] = []  # (run row, resumed child)

    def prepare(self, incidents: list[Any]) -> None:
        store = self.runtime.store
        runs = store.child_runs
        for row in runs.orphaned():
            outcome = child_outcome(store.db, row)
            if outcome is not None:
                status, output, error = outcome
                runs.settle(row["run_id"], status, summary=summary(output) if status == "completed" else None,
                            output=output, error=error)
            elif (child := self._resume(row)) is not None:
                runs.adopt(row["run_id"])
                self.waiting.append((row, child))
            else:
                runs.settle(row["run_id"], "interrupted", error=INTERRUPTED_TEXT.format(child=row["child_key"]))
        for incident in incidents:
            if incident.partial is not None:
                deliver(runs, incident.partial)

    @property
    def pending(self) -> Callable[[], Awaitable[None]] | None:
        """Waits for the resumed children and delivers their replies; None when none was resumed."""
        return self._finish if self.waiting else None

    def _resume(self, row: dict) -> Any:
        """The child made again, when its own recovery continues its turn (`recovery_task`), else None."""
        from think_nb.binding import runtime_of

        cls = find_class(self.runtime.base, row["child_class"], row["class_ref"])
        if cls is None:
            return None
        try:
            child = self.runtime.agent.sub_agent(cls, row["child_name"])
        except Exception:  # user code (the child's __init__ or its recovery hook)
            log.exception("could not make sub-agent %r again to re-attach run %s", row["child_key"], row["run_id"])
            return None
        if runtime_of(child).key != row["child_key"] or child.recovery_task is None:
            return None
        return child

    async def _finish(self) -> None:
        store = self.runtime.store
        for row, child in self.waiting:
            results: list[Any] = []
            try:
                results = [r for r in (await child.recovery_task or []) if r is not None]
            except Exception:  # the child's recovery failed: the run is interrupted
                log.exception("the recovery of sub-agent %r failed", row["child_key"])
            if results and results[-1].status == "completed":
                text = reply(store.db, row)
                store.child_runs.settle(row["run_id"], "completed", summary=summary(text), output=text)
            else:
                store.child_runs.settle(row["run_id"], "interrupted",
                                        error=INTERRUPTED_TEXT.format(child=row["child_key"]))
            self._deliver_stored()

    def _deliver_stored(self) -> None:
        """Deliver settled runs into the parent's stored branch (a cross-message update)."""
        conversation = self.runtime.conversation
        for message in reversed(conversation.messages[-20:]):
            copy = {**message, "parts": [dict(p) for p in message.get("parts") or []]}
            if deliver(self.runtime.store.child_runs, copy):
                self.runtime.engine.notify("on_message_updated", conversation.replace(copy))
