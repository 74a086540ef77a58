"""What a turn reports: its result and, per step, the context `on_step_finish` receives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TurnStatus = Literal["completed", "error", "aborted", "skipped"]


@dataclass
class TurnResult:
    """The outcome of one turn (Think's `SaveMessagesResult` / `ChatResponseResult`).

    Attributes:
        request_id: the turn's request id.
        status: `completed`, `error` (see `error`), `aborted` (cancelled; partial message kept)
            or `skipped` (nothing to do).
        error: the error text shown to the user, or None.
        message: the assistant UIMessage persisted by the turn (partial on error/abort), or None.
        continuation: True when the turn continued the last assistant message.
        interrupted: True when the stall watchdog ended it (status `aborted`, partial kept).
        reason: why a `skipped` turn did nothing (one of `SKIPPED`'s texts), else None.
        output: a structured turn's answer (`output_type=`, `TurnConfig.output_type`): an
            instance of its pydantic model, validated; None for other turns and for a structured
            turn that did not complete (`think_nb.turns.structured`).
        waiting: (property) the tool call ids the turn left waiting for you, oldest first: calls
            waiting for `approve(id)`/`deny(id)` and client tool calls waiting for their result.
            A paused turn is `completed` (it ended, as Think's does); `waiting` and the repr
            (`TurnResult(completed, waiting for 1 approval: …)`) say that the conversation waits.
    """

    request_id: str
    status: TurnStatus
    error: str | None = None
    message: dict | None = None
    continuation: bool = False
    interrupted: bool = False
    reason: str | None = None
    output: Any = None

    @property
    def attachments(self) -> list[dict]:
        """The reply attachments the turn's actions added (`ActionContext.attach_reply`; Think's
        `ChatResponseResult.attachments`): the reply message's `metadata.attachments`, else []."""
        found = ((self.message or {}).get("metadata") or {}).get("attachments")
        return list(found) if isinstance(found, list) else []

    def _waiting_parts(self) -> list[dict]:
        parts = (self.message or {}).get("parts") or []
        return [p for p in parts if isinstance(p, dict) and p.get("toolCallId")
                and p.get("state") in ("approval-requested", "input-available")]

    @property
    def waiting(self) -> tuple[str, ...]:
        return tuple(str(p["toolCallId"]) for p in self._waiting_parts())

    @property
    def waiting_text(self) -> str:
        """`waiting for 1 approval (delete_file)`, `waiting for 2 approvals and 1 client tool result` or ""."""
        parts = self._waiting_parts()
        approvals = [p for p in parts if p.get("state") == "approval-requested"]
        clients = len(parts) - len(approvals)
        said = []
        if approvals:
            names = ", ".join(str(p.get("toolName") or str(p.get("type", ""))[5:]) for p in approvals)
            said.append(f"{len(approvals)} approval{'s' if len(approvals) > 1 else ''} ({names})")
        if clients:
            said.append(f"{clients} client tool result{'s' if clients > 1 else ''}")
        return f"waiting for {' and '.join(said)}" if said else ""

    def __repr__(self) -> str:
        said = [self.status, self.waiting_text, self.error and f"error={self.error!r}",
                self.reason and f"reason={self.reason!r}", self.continuation and "continuation",
                self.interrupted and "interrupted", self.output is not None and f"output={self.output!r}"]
        return f"TurnResult({self.request_id}: {', '.join(s for s in said if s)})"


SKIPPED = {
    "stale": "superseded by a newer submission, or the conversation was cleared while it waited",
    "dropped": "dropped: another turn was running (admission 'drop')",
    "nothing-to-continue": "nothing to continue: the last message is not the assistant's",
    "nothing-to-regenerate": "nothing to regenerate: there is no user message",
    "no-new-messages": "no new messages: none were given, or every message id given is already stored",
    "superseded": "superseded: the conversation moved on before this recovery turn started",
}
"""Why a turn was `skipped` (`TurnResult.reason`)."""


@dataclass
class StepContext:
    """Passed to `on_step_finish` after each step (Think's `StepResult`, reduced).

    Attributes:
        step_number: 0-based step index within the turn.
        finish_reason: AI SDK finish reason (`stop`, `tool-calls`, `length`, `content-filter`, `other`).
        text: the text the model produced in this step.
        tool_calls: `[{toolCallId, toolName, input}]`.
        tool_results: `[{toolCallId, toolName, output}]` or with `errorText` for failed calls.
        usage: the step's usage under the same keys as the message's `metadata.usage`, the
            `usage_df()` columns and the turn log: `{prompt_tokens, completion_tokens,
            total_tokens, source}`; `source` is `"reported"` (by the provider) or None (unknown:
            counts None, litellm's guess kept apart as `estimated_tokens`, as in the metadata).
        step_type: what the step answered (the AI SDK's `stepType`, which Think's `onStepFinish`
            names): `"initial"` for the turn's first model call, `"tool-result"` for a later one
            (it answers the tool results of the step before). AI SDK's third kind, `"continue"`,
            never occurs: a turn does not continue a step cut at its token limit.
    """

    step_number: int
    finish_reason: str
    text: str
    tool_calls: list[dict] = field(default_factory=list)
    tool_results: list[dict] = field(default_factory=list)
    usage: dict | None = None
    step_type: Literal["initial", "continue", "tool-result"] = "initial"
