"""A turn's token usage: the sum of its steps, reported by the provider or unknown.

Stored as the assistant message's `metadata.usage`:

    {"prompt_tokens": int | None, "completion_tokens": int | None, "total_tokens": int | None,
     "source": "reported" | None,
     "estimated_tokens"?: {"prompt_tokens": int, "completion_tokens": int, "total_tokens": int}}

- `"reported"`: every step's counts came from the provider; the counts are the turn's sums.
- None: at least one step's usage was not reported (the provider sent none, or the step streamed
  nothing); the turn's counts are then unknown (None, never 0), and so is its cost. When litellm
  could count every unreported step with its tokenizer, its estimate of the turn's counts (the
  reported steps' counts plus litellm's counts of the others) is kept apart as `estimated_tokens`:
  a guess, never summed with reported counts nor priced.

`metadata.cost_usd` (US dollars, from litellm's price table) is present only when the counts are
reported and the model has a price.

Messages stored before this rule may hold `"source": "estimated"` with litellm's counts in place:
`normalized` reads them as unknown with that estimate.
"""

from __future__ import annotations

from typing import Any

from think_nb.models.client import UsageSource

COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
ESTIMATE = "estimated_tokens"


def add_step(total: dict[str, Any], usage: dict | None, source: UsageSource) -> dict[str, Any]:
    """The running turn usage after one more step (a new dict).

    Args:
        total: the usage so far; a dict without `"source"` means no step has been counted yet.
        usage: the step's `{prompt_tokens, completion_tokens, total_tokens}`, or None (unknown).
        source: the step's `"reported"` (by the provider), `"estimated"` (litellm counted the step
            because the provider reported nothing) or None (nothing counted).
    """
    if usage is None or source is None:
        return unknown()
    step = {key: int(usage.get(key) or 0) for key in COUNTS}
    if "source" not in total:
        return {**step, "source": "reported"} if source == "reported" else {**unknown(), ESTIMATE: step}
    guess = total.get(ESTIMATE) if total["source"] is None else {key: total[key] for key in COUNTS}
    if guess is None:  # an earlier step was not counted at all: nothing to estimate the turn from
        return unknown()
    summed = {key: guess[key] + step[key] for key in COUNTS}
    if total["source"] == "reported" and source == "reported":
        return {**summed, "source": "reported"}
    return {**unknown(), ESTIMATE: summed}


def turn_usage(total: dict[str, Any]) -> dict[str, Any]:
    """The `metadata.usage` of a turn from its running total (unknown when no step was counted)."""
    return dict(total) if "source" in total else unknown()


def unknown() -> dict[str, Any]:
    """Usage the provider did not report: every count None."""
    return {**dict.fromkeys(COUNTS), "source": None}


def normalized(usage: dict | None) -> dict[str, Any]:
    """A stored `metadata.usage` in today's shape: a legacy `"source": "estimated"` record becomes
    unknown with its counts as `estimated_tokens`; a record without `"source"` (stored before
    sources existed) keeps its counts as they are."""
    usage = dict(usage or {})
    if usage.get("source") == "estimated":
        counts = {key: usage.get(key) for key in COUNTS}
        estimate = counts if all(isinstance(v, int) for v in counts.values()) else None
        return {**unknown(), **({ESTIMATE: estimate} if estimate else {})}
    return usage
