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
import math
from collections.abc import Callable
from typing import Any

__all__ = ["COLUMNS", "checked", "not_run", "of_messages"]

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


def checked(result: Any) -> dict[str, Any]:
    """A stored result read back (untrusted: the SQLite file may have been edited; `BatchRows.results`
    gives None for one that is not JSON) with the types of the module docstring, or an `error` row
    saying which field is damaged (the rest of the run is read as usual)."""
    if not isinstance(result, dict):
        return _damaged("not an object", None)
    for name, fits in _FIELDS.items():
        if not fits(result.get(name)):
            return _damaged(name, result.get("conversation_id"))
    return {name: result.get(name) for name in _FIELDS}


def _count(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0)


def _amount(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0)


def _text(v: Any) -> bool:
    return v is None or isinstance(v, str)


_FIELDS: dict[str, Callable[[Any], bool]] = {
    "reply": _text, "output": lambda v: v is None or isinstance(v, dict),
    "status": lambda v: v in ("completed", "error", "aborted", "not_run"), "error": _text,
    "tool_calls": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
    "input_tokens": _count, "output_tokens": _count, "cost_usd": _amount, "duration_s": _amount,
    "conversation_id": _text}


def _damaged(what: str, conversation_id: Any) -> dict[str, Any]:
    return {**not_run(f"its stored result is damaged ({what}); run the row again under a new run_id"),
            "status": "error", "conversation_id": conversation_id if isinstance(conversation_id, str) else None}


def _is_tool(part: dict) -> bool:
    kind = str(part.get("type", ""))
    return (kind.startswith("tool-") or kind == "dynamic-tool") and "toolCallId" in part


def _tool_name(part: dict) -> str:
    return str(part.get("toolName") or str(part.get("type", ""))[5:])
