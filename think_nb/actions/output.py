"""What an action call returns to the model: its output normalized and bounded, or an error
envelope (Think's `prepareActionOutputForModel` and `action*ErrorEnvelope`).

- a string longer than `MAX_CHARS` (20,000) is cut there and ends `\\n\\n[truncated N chars]`;
- anything else becomes strict JSON (`think_nb.jsonsafe`: NaN → null, sets → sorted lists,
  cycles and unknown objects → marked strings; a DataFrame → think_nb's bounded `table`); when
  its JSON is longer than `MAX_CHARS`, the output is `{"truncated": True, "chars": N,
  "preview": <the first 20,000 characters> + "\\n\\n[truncated N chars]"}`;
- a failure is an output too (the call succeeds, the model reads it; Think's envelopes):
  `{"error": {"name", "message"}}` for what the function raised (`TimeoutError` when it ran past
  its timeout), `ActionAuthorizationError` (with the `permissions` asked), `ActionPendingError`,
  `ActionKeyConflict`, `ActionApprovalInputError`.
"""

from __future__ import annotations

from typing import Any

from think_nb import jsonsafe

MAX_CHARS = 20_000
PENDING_TEXT = ("A prior attempt of this action is in an unknown state; not re-executed. Manual reconciliation may "
                "be required.")
APPROVAL_INPUT_TEXT = "Approved action input cannot be changed by before_tool_call"


def prepare(value: Any) -> Any:
    """`value` as the model and the ledger see it (see the module docstring)."""
    if isinstance(value, str):
        return value if len(value) <= MAX_CHARS else _cut(value)
    from think_nb.data_context import tool_output

    bounded = tool_output(value)  # frames → tables, huge containers → bounded previews, else strict JSON
    if not (isinstance(bounded, dict) and bounded.get("type") == "truncated" and "chars" in bounded):
        return bounded
    text = jsonsafe.dumps(jsonsafe.to_json_value(value))
    return {"truncated": True, "chars": len(text), "preview": _cut(text)}


def _cut(text: str) -> str:
    return f"{text[:MAX_CHARS]}\n\n[truncated {len(text) - MAX_CHARS} chars]"


def error(exc: BaseException) -> dict:
    """`{"error": {"name": <exception class>, "message": <its text>}}`."""
    return {"error": {"name": type(exc).__name__, "message": str(exc)}}


def refused(reason: str | None, permissions: list[str]) -> dict:
    return {"error": {"name": "ActionAuthorizationError", "message": reason or "Action is not authorized",
                      "permissions": list(permissions)}}


def pending() -> dict:
    return {"error": {"name": "ActionPendingError", "message": PENDING_TEXT}}


def conflict(action: str, key: str) -> dict:
    return {"error": {"name": "ActionKeyConflict",
                      "message": f'Idempotency key "{key}" for action "{action}" was reused with different input. '
                                 "This is a programming error; do not retry."}}


def approval_input_changed() -> dict:
    return {"error": {"name": "ActionApprovalInputError", "message": APPROVAL_INPUT_TEXT}}


def encode(value: Any) -> str | None:
    """The ledger's stored form of a settled result (Think's `{valuePresent, value}`), or None when
    it cannot be stored (the row is released then and the result returned unstored)."""
    try:
        return jsonsafe.dumps_stored({"valuePresent": value is not None, "value": value})
    except (TypeError, ValueError):
        return None


def decode(text: str | None) -> Any:
    if text is None:
        return None
    stored = jsonsafe.loads_stored(text)
    return stored.get("value") if isinstance(stored, dict) and stored.get("valuePresent") else None
