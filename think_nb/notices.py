"""Notices (Think's `deliverNotice`): a message to the user without a turn.

    await agent.deliver_notice("The nightly import finished: 1,204 rows.")
    await agent.deliver_notice("Started a background job.", inform_model=True, kind="interim")

A notice is an assistant message appended to the transcript (Think's `web` delivery, the only
one think_nb has: the panel is every channel's surface), `{role: "assistant", parts: [{type:
"text", text}], metadata: {deliveryKind, channel}}`; no model runs. It goes through
`add_messages`, so it is stored at once and the panels show it (at once when no turn streams,
else with that turn's next update), and it is safe from inside a tool or a hook of a running
turn. The model reads it in later turns like any assistant message; with `inform_model=True` its
text is `"[Delivered to the user out of band] <text>"` (Think's phrasing), so the model knows it
was said outside the conversation.

The channel is `channel=`, else the running turn's (`Think.active_channel`), else `"web"`; a
channel that is not configured (`think_nb.channels`) fails at once. Refused (nothing stored)
while a tool call of the last message waits for the user (an approval, a client tool's result):
a message after it would keep `approve()` / the result from continuing that turn.
"""

from __future__ import annotations

from typing import Any

from think_nb import channels, events
from think_nb.errors import UserError
from think_nb.messages import new_id
from think_nb.messages.accumulator import is_tool_part, tool_name_of

KINDS = ("final", "interim", "notice", "command")
"""Think's `DeliveryKind`s, kept as `metadata.deliveryKind`."""

OUT_OF_BAND = "[Delivered to the user out of band]"
"""Think's prefix for a notice the model is told about (`inform_model=True`)."""


def notice_text(text: Any) -> str:
    """The notice's text: a string, or Think's `{"markdown": "..."}`; `UserError` otherwise."""
    if isinstance(text, dict) and set(text) == {"markdown"}:
        text = text["markdown"]
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"deliver_notice: text is a non-empty string (or {{'markdown': '...'}}), not {text!r:.60}; "
                        "nothing was delivered.")
    return text


def notice_message(text: str, kind: str, channel: str, inform_model: bool) -> dict[str, Any]:
    """The notice's UIMessage (see the module docstring)."""
    shown = f"{OUT_OF_BAND} {text}" if inform_model else text
    return {"id": new_id("msg"), "role": "assistant", "parts": [{"type": "text", "text": shown}],
            "metadata": {"deliveryKind": kind, "channel": channel}}


async def deliver(agent: Any, engine: Any, text: Any, *, channel: str | None, inform_model: bool,
                  kind: str) -> dict[str, Any]:
    """`Think.deliver_notice`: check, then append the notice through `engine.add_messages`;
    returns the stored message."""
    text = notice_text(text)
    if kind not in KINDS:
        raise UserError(f"deliver_notice: kind {kind!r} is not one of {', '.join(KINDS)}; nothing was delivered.")
    if not isinstance(inform_model, bool):
        raise UserError(f"deliver_notice: inform_model is True or False, not {inform_model!r}.")
    if channel is None:
        turn = engine.current_turn
        current = turn.channel if turn is not None else None
        channel = current.channel_id if current is not None else channels.WEB
    else:
        channels.require(agent, channel, "deliver_notice")
    waiting = _waiting_call(engine)
    if waiting is not None:
        raise UserError(f"deliver_notice: tool call {waiting[0]!r} ({waiting[1]}) waits for the user; a notice "
                        "after it would keep its answer from continuing the turn. Answer it first "
                        "(agent.approve(id) / agent.deny(id), or the client tool's result); nothing was delivered.")
    (stored,) = await engine.add_messages([notice_message(text, kind, channel, inform_model)])
    events.emit("notice:delivered", {"channel": channel, "kind": kind, "inform_model": inform_model},
                agent=engine.host.key)
    return dict(stored)


def _waiting_call(engine: Any) -> tuple[str, str] | None:
    """`(tool call id, tool name)` of a call of the last message (stored, or the running turn's)
    waiting for the user: `approval-requested`, or a client tool's call without a result."""
    last = engine.conversation.last
    messages = [last] if last is not None else []
    if engine.current_turn is not None:
        messages.append(engine.current_turn.acc.message)
    client = None
    for message in messages:
        for part in message.get("parts", []):
            if not is_tool_part(part):
                continue
            state = part.get("state")
            if state == "approval-requested":
                return str(part.get("toolCallId")), tool_name_of(part)
            if state == "input-available":
                client = engine.known_client_tools() if client is None else client
                if tool_name_of(part) in client:
                    return str(part.get("toolCallId")), tool_name_of(part)
    return None
