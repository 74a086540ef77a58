"""A settled row's line of the results table, read from its stored conversation.

    {"reply": str, "output": {field: value} | None, "status": "completed" | "error" | "aborted",
     "error": str | None, "tool_calls": [tool name, ...], "input_tokens": int | None,
     "output_tokens": int | None, "cost_usd": float | None, "duration_s": float,
     "conversation_id": str}

Everything comes from the row's assistant messages (a row may take several turns: an approval's
continuation is one): the reply is the last one's text (a structured row's answer as JSON when
the model wrote no text: it answered through the final-answer tool), tool calls are every tool part's name,
tokens and cost are sums over the turns, and unknown when any turn's are unknown (never 0:
`think_nb.models.usage`). The results table's rows not run say why in `error` with status
`not_run`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["COLUMNS", "not_run", "of_messages"]

COLUMNS = ["reply", "status", "error", "tool_calls", "input_tokens", "output_tokens", "cost_usd", "duration_s",
           "conversation_id"]
"""The results table's columns (an `output_type`'s fields come after `reply`)."""


def of_messages(messages: list[dict], status: str, error: str | None, output: Any, duration_s: float,
                conversation_id: str) -> dict[str, Any]:
    """The row's result from its conversation's messages (oldest first) and its turn's outcome."""
    replies = [m for m in messages if m.get("role") == "assistant"]
    last = replies[-1] if replies else {"parts": []}
    reply = "".join(p.get("text", "") for p in last.get("parts", []) if p.get("type") == "text")
    tools = [_tool_name(p) for m in replies for p in m.get("parts", []) if _is_tool(p)]
    usages = [(m.get("metadata") or {}).get("usage") or {} for m in replies]
    known = bool(usages) and all(u.get("source") == "reported" for u in usages)
    costs = [(m.get("metadata") or {}).get("cost_usd") for m in replies]
    priced = known and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in costs)
    dumped = output.model_dump(mode="json") if hasattr(output, "model_dump") else output
    if not reply and dumped is not None:  # answered through the final-answer tool only: the answer is the reply
        reply = json.dumps(dumped, ensure_ascii=False)
    return {"reply": reply, "output": dumped, "status": status, "error": error, "tool_calls": tools,
            "input_tokens": sum(int(u.get("prompt_tokens") or 0) for u in usages) if known else None,
            "output_tokens": sum(int(u.get("completion_tokens") or 0) for u in usages) if known else None,
            "cost_usd": float(sum(costs)) if priced else None,  # type: ignore[arg-type]
            "duration_s": round(duration_s, 4), "conversation_id": conversation_id}


def not_run(reason: str, *, aborted: bool = False) -> dict[str, Any]:
    """A row that never ran: `not_run` (a bound reached, the run stopped), or `aborted` (cancelled
    before it started: it never will)."""
    return {"reply": None, "output": None, "status": "aborted" if aborted else "not_run", "error": reason,
            "tool_calls": [],
            "input_tokens": None, "output_tokens": None, "cost_usd": None, "duration_s": None,
            "conversation_id": None}


def _is_tool(part: dict) -> bool:
    kind = str(part.get("type", ""))
    return (kind.startswith("tool-") or kind == "dynamic-tool") and "toolCallId" in part


def _tool_name(part: dict) -> str:
    return str(part.get("toolName") or str(part.get("type", ""))[5:])
