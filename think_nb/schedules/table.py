"""`agent.get_schedules()` / `%think schedules`: scheduled-task rows as a DataFrame (`next_run`: the
next occurrence, or the pending retry of a failed run when that is sooner)."""

from __future__ import annotations

from typing import Any

COLUMNS = ["id", "kind", "schedule", "timezone", "task", "next_run", "last_run", "last_status", "last_error", "runs",
           "source"]


def schedules_frame(rows: list[dict]) -> Any:
    import pandas as pd

    def stamp(t: float) -> Any:  # local wall time, as a user reads a clock
        return pd.Timestamp(t, unit="s", tz="UTC").tz_convert(_local_zone()).tz_localize(None)

    def due(r: dict) -> Any:  # the next occurrence, or a failed run's pending retry if sooner
        times = [t for t in (r["next_run_at"], r.get("retry_at")) if t is not None]
        return stamp(min(times)) if times else pd.NaT

    data = [{"id": r["id"], "kind": r["kind"], "schedule": r["spec"], "timezone": r["timezone"],
             "task": r["task_repr"], "next_run": due(r),
             "last_run": stamp(r["last_run_at"]) if r["last_run_at"] is not None else pd.NaT,
             "last_status": r["last_status"], "last_error": r["last_error"], "runs": r["runs"],
             "source": r["source"]} for r in rows]
    from think_nb.frontends.views import nulls_as_none

    return nulls_as_none(pd.DataFrame(data, columns=COLUMNS))  # a missing last_error is None, not NaN


def _local_zone() -> Any:
    from datetime import datetime

    return datetime.now().astimezone().tzinfo
