"""pandas DataFrames of an agent's state, for inspecting it in a notebook.

Each function takes an agent's runtime (a `ViewsHost`: its memory, branch and store) and returns
a fresh DataFrame (a snapshot; re-run to refresh).
Column sets are fixed, so an empty agent gives an empty frame with the same columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

if TYPE_CHECKING:
    from think_nb.session.builder import Session
    from think_nb.store.agent import AgentStore


class ViewsHost(Protocol):
    """What the DataFrames read (`think_nb.runtime.AgentRuntime` implements it)."""

    store: AgentStore

    @property
    def session(self) -> Session: ...
    @property
    def messages(self) -> list[dict]: ...

BLOCK_COLUMNS = ["label", "description", "kind", "writable", "tokens", "max_tokens", "percent_used", "content"]
MESSAGE_COLUMNS = ["id", "parent_id", "role", "text", "parts", "tool_calls", "created_at", "model", "total_tokens"]
TOOL_CALL_COLUMNS = ["message_id", "tool_call_id", "tool_name", "state", "input", "output", "error_text", "edited",
                     "code", "duration_ms", "changed", "undone"]
USAGE_COLUMNS = ["message_id", "request_id", "model", "prompt_tokens", "completion_tokens", "total_tokens",
                 "usage_source", "estimated_tokens", "cost_usd", "created_at"]
SESSION_COLUMNS = ["id", "name", "active", "messages", "parent_session_id", "forked_from_message_id",
                   "created_at", "updated_at"]
SEARCH_COLUMNS = ["id", "role", "session", "on_branch", "snippet", "rank", "text", "created_at"]


def context_blocks(agent: ViewsHost) -> pd.DataFrame:
    """One row per context block, in prompt order: label, description, kind (readonly |
    writable | skill | search), writable, tokens (litellm's count for the agent's model),
    max_tokens (nullable Int64), percent_used (tokens / max_tokens × 100, NaN without a limit),
    content."""
    rows = [b.as_dict() for b in agent.session.blocks()]
    df = pd.DataFrame(rows, columns=BLOCK_COLUMNS)
    return df.astype({"tokens": "int64", "max_tokens": "Int64", "percent_used": "float64", "writable": "bool"})


def messages(agent: ViewsHost) -> pd.DataFrame:
    """The current branch, oldest first: id, parent_id, role, text (text parts joined), parts
    (count), tool_calls (count), created_at (UTC timestamp), model and total_tokens (assistant
    messages' metadata; else None / NaN)."""
    rows = _stored_rows(agent)
    out: list[dict[str, Any]] = []
    for message in agent.messages:
        parent, created = rows.get(message["id"], (None, None))
        usage = (message.get("metadata") or {}).get("usage") or {}
        parts = message.get("parts", [])
        out.append({"id": message["id"], "parent_id": parent, "role": message["role"],
                    "text": "\n".join(p.get("text", "") for p in parts if p.get("type") == "text"),
                    "parts": len(parts), "tool_calls": sum(1 for p in parts if _is_tool(p)),
                    "created_at": created, "model": (message.get("metadata") or {}).get("model"),
                    "total_tokens": usage.get("total_tokens")})
    df = pd.DataFrame(out, columns=MESSAGE_COLUMNS)
    df["created_at"] = pd.to_datetime(df["created_at"], unit="s", utc=True)
    return nulls_as_none(df.astype({"parts": "int64", "tool_calls": "int64", "total_tokens": "Int64"}))


def tool_calls(agent: ViewsHost) -> pd.DataFrame:
    """Every tool call on the current branch, in order: message_id, tool_call_id, tool_name,
    state (AI SDK tool part state), input (dict: the model's), output (as returned), error_text,
    edited (True when approved with an edited input: `approve(id, input=...)`); for `run_code`
    calls (`think_nb.kernel`) also code (what ran), duration_ms, changed (`{bound, rebound,
    deleted, mutated}`) and undone (bool); None otherwise."""
    out: list[dict[str, Any]] = []
    for message in agent.messages:
        out.extend({"message_id": message["id"], "tool_call_id": part.get("toolCallId"),
                    "tool_name": part.get("toolName") or part["type"].removeprefix("tool-"),
                    "state": part.get("state"), "input": part.get("input"), "output": part.get("output"),
                    "error_text": part.get("errorText"), **_edit_and_run(part)}
                   for part in message.get("parts", []) if _is_tool(part))
    # object columns: pandas would turn numbers plus a missing output into float64 with NaN
    return nulls_as_none(pd.DataFrame(out, columns=TOOL_CALL_COLUMNS, dtype=object))


def _edit_and_run(part: dict) -> dict[str, Any]:
    from think_nb.kernel.undo import UNDONE_MARK

    found = part.get("approval")
    approval: dict[str, Any] = found if isinstance(found, dict) else {}
    edited = isinstance(approval.get("input"), dict)
    row: dict[str, Any] = {"edited": edited, "code": None, "duration_ms": None, "changed": None, "undone": None}
    output = part.get("output")
    if isinstance(output, dict) and output.get("type") == "kernel-run":
        row.update(code=output.get("code"), duration_ms=output.get("duration_ms"), changed=output.get("changes"),
                   undone=bool(output.get("undone")))
    elif (part.get("toolName") or part.get("type", "").removeprefix("tool-")) == "run_code":
        given = approval.get("input") if edited else part.get("input")
        row.update(code=(given or {}).get("code") if isinstance(given, dict) else None,
                   undone=UNDONE_MARK in str(part.get("errorText") or ""))
    return row


TURN_USAGE_COLUMNS = ("prompt_tokens", "completion_tokens", "total_tokens", "usage_source")
"""What `turns_with_usage` adds to a turn-log row: `usage_df()`'s names for the same counts."""


def turns_with_usage(rows: list[dict], usage: dict[str, dict]) -> list[dict]:
    """Turn-log rows (`agent.turns()`) with each turn's token usage under `TURN_USAGE_COLUMNS`
    (`usage`: `{request id: metadata.usage}`, `think_nb.store.messages.usage_by_request`): the
    counts as stored, `usage_source` the usage's `source` ("reported", or None: unknown). All
    None for a turn whose message is not stored (skipped, cleared) or that reported nothing."""
    from think_nb.models import usage as usage_model

    out = []
    for row in rows:
        u = usage_model.normalized(usage[row["request_id"]]) if row["request_id"] in usage else {}
        out.append({**row, **{c: u.get(c) for c in TURN_USAGE_COLUMNS[:3]}, "usage_source": u.get("source")})
    return out


def usage(agent: ViewsHost) -> pd.DataFrame:
    """Token usage per finished turn (assistant message) on the current branch.

    Columns: message_id, request_id, model; prompt_tokens, completion_tokens, total_tokens
    (token counts as the provider reported them, nullable Int64: <NA> when unknown, never a
    made-up 0); usage_source: "reported" (by the provider) or None (unknown: a step's usage was not
    reported, or the message predates usage sources); estimated_tokens (Int64: litellm's estimate
    of the turn's total when the counts are unknown but its tokenizer could count the text; a
    guess, not a count, <NA> otherwise); cost_usd (US dollars from litellm's price table, as
    stored with the message: NaN when unknown, i.e. no price for the model, the in-process models
    included, or usage not reported; never a made-up 0); created_at (UTC timestamp).
    """
    from think_nb.models import usage as usage_model

    rows = _stored_rows(agent)
    out = []
    for message in agent.messages:
        meta = message.get("metadata") or {}
        if message["role"] != "assistant" or "usage" not in meta:
            continue
        u = usage_model.normalized(meta.get("usage"))
        estimate = u.get(usage_model.ESTIMATE) or {}
        priced = u.get("source") == "reported" or "source" not in u  # a legacy record keeps its cost
        cost = meta.get("cost_usd") if priced else None
        out.append({"message_id": message["id"], "request_id": meta.get("requestId"), "model": meta.get("model"),
                    "prompt_tokens": u.get("prompt_tokens"), "completion_tokens": u.get("completion_tokens"),
                    "total_tokens": u.get("total_tokens"), "usage_source": u.get("source"),
                    "estimated_tokens": estimate.get("total_tokens"),
                    "cost_usd": cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
                    "created_at": rows.get(message["id"], (None, None))[1]})
    df = pd.DataFrame(out, columns=USAGE_COLUMNS)
    df["created_at"] = pd.to_datetime(df["created_at"], unit="s", utc=True)
    df = df.astype({"prompt_tokens": "Int64", "completion_tokens": "Int64", "total_tokens": "Int64",
                    "estimated_tokens": "Int64", "cost_usd": "float64"})
    return nulls_as_none(df)


def sessions(agent: ViewsHost) -> pd.DataFrame:
    """The agent's sessions, oldest first: id (the default session reads "default", where
    `agent.session_id` is ""; `switch_session` takes either), name, active, messages (stored,
    every branch), parent_session_id / forked_from_message_id (forks), created_at, updated_at."""
    from think_nb.session.sessions import list_sessions

    rows = [{**row, "id": row["id"] or "default",
             "parent_session_id": "default" if row["parent_session_id"] == "" else row["parent_session_id"]}
            for row in list_sessions(agent.store)]
    df = pd.DataFrame(rows, columns=SESSION_COLUMNS)
    for col in ("created_at", "updated_at"):
        df[col] = pd.to_datetime(df[col], unit="s", utc=True)
    return nulls_as_none(df.astype({"active": "bool", "messages": "int64"}))


def search(agent: ViewsHost, query: str, limit: int = 20, all_sessions: bool = False) -> pd.DataFrame:
    """`agent.session.search(...)` as a DataFrame (best match first)."""
    df = pd.DataFrame(agent.session.search(query, limit, all_sessions=all_sessions), columns=SEARCH_COLUMNS)
    df["created_at"] = pd.to_datetime(df["created_at"], unit="s", utc=True)
    return nulls_as_none(df)


def nulls_as_none(df: pd.DataFrame) -> pd.DataFrame:
    """Missing values in object columns as None (not NaN), so rows compare and print plainly."""
    for col in df.columns:
        if df[col].dtype == object or pd.api.types.is_string_dtype(df[col].dtype):
            df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df


def _stored_rows(agent: ViewsHost) -> dict[str, tuple[Any, Any]]:
    return agent.store.messages.tree_rows()


def _is_tool(part: dict) -> bool:
    return part.get("type", "").startswith("tool-") or part.get("type") == "dynamic-tool"


__all__ = ["context_blocks", "messages", "search", "sessions", "tool_calls", "usage"]
