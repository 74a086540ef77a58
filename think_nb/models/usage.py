"""A turn's token usage: the sum of its steps, and whether the counts were reported, estimated or unknown.

Stored as the assistant message's `metadata.usage`:

    {"prompt_tokens": int | None, "completion_tokens": int | None, "total_tokens": int | None,
     "source": "reported" | "estimated" | None}

- `"reported"`: every step's counts came from the provider.
- `"estimated"`: at least one step's counts are litellm's estimate (the rest reported); the total
  is an estimate too.
- None: at least one step's usage is unknown (it streamed nothing litellm could count); the turn's
  counts are then unknown as well (None, never 0), and so is its cost.

`metadata.cost_usd` (US dollars, from litellm's price table) is present only when the counts are
known and the model has a price; an estimated usage gives an estimated cost.
"""

from __future__ import annotations

from typing import Any

from think_nb.models.stream import UsageSource

COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def add_step(total: dict[str, Any], usage: dict | None, source: UsageSource) -> dict[str, Any]:
    """The running turn usage after one more step (a new dict).

    Args:
        total: the usage so far; a dict without `"source"` means no step has been counted yet.
        usage: the step's `{prompt_tokens, completion_tokens, total_tokens}`, or None (unknown).
        source: the step's `"reported"`, `"estimated"` or None.
    """
    if usage is None or source is None:
        return unknown()
    step = {key: int(usage.get(key) or 0) for key in COUNTS}
    if "source" not in total:
        return {**step, "source": source}
    if total["source"] is None:
        return unknown()
    combined = "estimated" if "estimated" in (total["source"], source) else "reported"
    return {**{key: total[key] + step[key] for key in COUNTS}, "source": combined}


def turn_usage(total: dict[str, Any]) -> dict[str, Any]:
    """The `metadata.usage` of a turn from its running total (unknown when no step was counted)."""
    return dict(total) if "source" in total else unknown()


def unknown() -> dict[str, Any]:
    """Usage nobody reported and nothing estimated: every count None."""
    return {**dict.fromkeys(COUNTS), "source": None}
