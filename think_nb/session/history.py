"""A history's text as the model reads it, and its token count: what the context tab, compaction's
budget and the proactive overflow guard count (`think_nb.session.tokens` counts a text; this module
says which text a stored message is: a settled tool result as `think_nb.messages.convert` sends it,
so a figure counts as its placeholder line, never its base64). Apart from `tokens` so that the
converter, which counts a data context's tokens, and the counter of histories, which reads the
converter, import no cycle."""

from __future__ import annotations

from think_nb.session.tokens import count_tokens


def message_text(message: dict) -> str:
    """The text a UIMessage contributes to the model's context: text parts, tool inputs, and each
    settled tool result as the model reads it (`convert.tool_result_text`: a kernel run's figure
    is its placeholder line, a table its markdown; never a panel payload's base64)."""
    from think_nb.jsonsafe import dumps
    from think_nb.messages.accumulator import SETTLED_TOOL_STATES
    from think_nb.messages.convert import tool_result_text

    pieces = []
    for part in message.get("parts", []):
        kind = part.get("type", "")
        if kind in ("text", "reasoning"):
            pieces.append(part.get("text", ""))
        elif kind.startswith("tool-") or kind == "dynamic-tool":
            pieces.append(dumps(part.get("input")))
            if part.get("state") in SETTLED_TOOL_STATES:
                pieces.append(tool_result_text(part))
    return "\n".join(p for p in pieces if p)


def count_history_tokens(messages: list[dict], model: str | None = None, system: str | None = None) -> int:
    """Tokens of a history as the model receives it: each message's text plus 4 per message
    (Think's per-message overhead), plus the system prompt."""
    total = count_tokens(system or "", model)
    for message in messages:
        total += count_tokens(message_text(message), model) + 4
    return total
