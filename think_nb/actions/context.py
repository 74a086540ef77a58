"""What an action's function, its policies and the authorization hooks receive (Think's
`ActionContext`, `ActionAuthorizationContext`), and the reply attachments `attach_reply` records.

An attachment is advisory (a voice note, a card, an e-mail draft for the reply): a dict with a
string `type`, kept as strict JSON in the reply message's `metadata.attachments`, at most
`MAX_REPLY_ATTACHMENTS` per turn; anything else is ignored, as Think ignores it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from think_nb import events, jsonsafe
from think_nb.turns.signal import AbortController, AbortSignal

log = logging.getLogger("think_nb.actions")

MAX_REPLY_ATTACHMENTS = 32
"""Think's per-turn cap on reply attachments."""


@dataclass
class ActionContext:
    """The context of one action call (Think's `ActionContext`).

    Attributes:
        agent: the agent running the action.
        request_id: the turn's request id ("" outside a turn: `approve_execution` without one).
        tool_call_id: the model's call id.
        messages: the model messages the call was made after (OpenAI shape; [] for an approved
            durable-pause call).
        signal: aborted when the call times out or its turn is stopped (`signal.aborted`,
            `signal.reason`); a sync function may poll it.
    """

    agent: Any
    request_id: str
    tool_call_id: str
    messages: list[dict]
    _attach: Callable[[Any], None] | None = field(default=None, repr=False)
    _controller: AbortController = field(default_factory=AbortController, repr=False)

    @property
    def signal(self) -> AbortSignal:
        return self._controller.signal

    def abort(self, reason: str) -> None:
        """Abort `signal` (the call timed out, or its turn was stopped)."""
        self._controller.abort(reason)

    def attach_reply(self, attachment: dict[str, Any]) -> None:
        """Attach `attachment` (`{"type": "card", ...}`) to this turn's reply: it lands in the reply
        message's `metadata.attachments` (and `TurnResult.attachments`). Ignored when it is not a
        dict with a string `type`, past 32 per turn, from a policy function, on a ledger replay, or
        for an approved durable-pause call (its reply is a later turn's)."""
        if self._attach is not None:
            self._attach(attachment)

    def without_reply(self) -> ActionContext:
        """This context with `attach_reply` a no-op (what policies and key functions receive)."""
        return ActionContext(self.agent, self.request_id, self.tool_call_id, self.messages, None, self._controller)


@dataclass
class ActionAuthorizationContext:
    """What `authorize_action(ctx)` receives (Think's `ActionAuthorizationContext`).

    Attributes:
        request_id, tool_call_id: the turn's and the call's ids.
        action: the action's name. kind: `server` | `approval-gated` | `durable-pause`.
        input: the call's input (strict JSON).
        required_permissions: what the action's `permissions` give for this input.
        granted_permissions: what `authorize_turn` granted (None: everything).
        messages: the model messages of the call. agent: the agent.
        turn_allowed, turn_reason: what `authorize_turn` decided (the default `authorize_action`
            refuses every call of a turn it refused, with its reason).
    """

    request_id: str
    tool_call_id: str
    action: str
    kind: str
    input: Any
    required_permissions: list[str]
    granted_permissions: list[str] | None
    messages: list[dict]
    agent: Any
    turn_allowed: bool = True
    turn_reason: str | None = None


def record_attachment(attachments: list[dict], attachment: Any, action: str) -> None:
    """Append `attachment` to a turn's `attachments`, normalized to strict JSON, when it is a dict
    with a string `type` and the turn has fewer than `MAX_REPLY_ATTACHMENTS` (else ignored)."""
    if not isinstance(attachment, dict) or not isinstance(attachment.get("type"), str):
        return
    if len(attachments) >= MAX_REPLY_ATTACHMENTS:
        return
    normalized = jsonsafe.to_json_value(attachment)
    if not isinstance(normalized, dict) or not isinstance(normalized.get("type"), str):
        return
    attachments.append(normalized)
    events.emit("action:reply-attached", {"action": action, "attachment_type": normalized["type"]})
