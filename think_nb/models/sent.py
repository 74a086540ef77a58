"""What one model call is actually sent, for the views that show it (the step view, `trace()`).

Hosted models (and scripted ones) are sent the turn's whole model messages and every tool. The
embedded model is not (`think_nb.models.local`): it reads the system prompt and the exchange in
progress, or its last few exchanges when it answers without tools (`local.HISTORY`), and is
offered only the tools the user's message names (`local.TOOL_POLICY`), none after a tool result.
`sent(config, messages, tools, options)` says which, so nothing shown claims the model saw more
than it did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from think_nb.models.resolve import LOCAL_PROVIDER, ModelConfig

__all__ = ["Sent", "sent"]


@dataclass(frozen=True)
class Sent:
    """What a call reads.

    Attributes:
        messages: the model messages (OpenAI shape) the model is sent, in order.
        kept: for each message of the turn's list, whether it is among `messages`.
        tools: names of the tools offered, in order.
        note: why it is less than the turn's (one line; "" when it is everything).
    """

    messages: list[dict]
    kept: list[bool]
    tools: tuple[str, ...]
    note: str = ""

    def summary(self, total_tools: int) -> str:
        """One line: `3 of 9 messages, tools: add (1 of 7) — <note>`."""
        shown = len(self.messages)
        count = f"{shown} of {len(self.kept)} messages" if shown != len(self.kept) else f"{shown} messages"
        names = ", ".join(self.tools) or "none"
        tools = f"tools: {names}" + (f" ({len(self.tools)} of {total_tools})" if len(self.tools) != total_tools else "")
        return f"{count}, {tools}" + (f" — {self.note}" if self.note else "")


def _name(tool: dict) -> str:
    return str((tool.get("function") or {}).get("name") or tool.get("name") or "")


def sent(config: ModelConfig, messages: list[dict], tools: list[dict], options: dict[str, Any] | None = None) -> Sent:
    """What the call of `config` with `messages` (the turn's model messages, system first) and
    `tools` (OpenAI function declarations) is sent (see the module docstring)."""
    options = options or {}
    if config.provider != LOCAL_PROVIDER:
        return Sent(list(messages), [True] * len(messages), tuple(_name(t) for t in tools))
    from think_nb.models import local

    offered = local.sent_tools(messages, tools, options.get("tool_choice", "auto"))
    kept_messages = local.sent_messages(messages, tools=bool(offered))
    ids = {id(m) for m in kept_messages}
    kept = [id(m) in ids for m in messages]
    notes = []
    if not all(kept):
        users = sum(m.get("role") == "user" for m in kept_messages)
        notes.append("the embedded model reads the system prompt and the exchange in progress" if users <= 1 else
                     f"the embedded model reads the system prompt and its last {users} exchanges")
    if len(offered) != len(tools):
        notes.append("it is offered only the tools the message names" if messages and
                     messages[-1].get("role") != "tool" else "no tools after a tool result")
    return Sent(kept_messages, kept, tuple(_name(t) for t in offered), "; ".join(notes))
