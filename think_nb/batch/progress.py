"""A run's progress bar: tqdm's widget bar in a notebook (a kernel's shell: `_tqdm_class`), its text
bar elsewhere (done/total, rate, ETA, with errors and cost so far in the postfix). Interrupting the cell
(Jupyter's Stop button, Ctrl-C in a script) stops the run: rows in flight are aborted and kept,
settled rows stay settled, pending rows stay pending for the same call to finish later, and the
cell prints how many rows settled and how many were not run (`stopped_text`)."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["Progress", "stopped_text"]


def _tqdm_class() -> Any:
    """tqdm's notebook bar when this code runs in a kernel's shell (IPython's `get_ipython()` is a
    `ZMQInteractiveShell`, with ipywidgets), else its text bar. Not `tqdm.auto`: it picks the notebook
    bar when `ipykernel.zmqshell` was merely imported before it, in a script or a test process too."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if type(shell).__name__ == "ZMQInteractiveShell":
        try:
            from tqdm.notebook import IProgress, tqdm  # type: ignore[import-untyped]

            if IProgress is not None:  # ipywidgets is there: the widget bar
                return tqdm
        except ImportError:
            pass
    from tqdm.std import tqdm as text_tqdm  # type: ignore[import-untyped]

    return text_tqdm


class Progress:
    """`total` rows of which `done` settled before; `show=False` draws nothing."""

    def __init__(self, run_id: str, total: int, done: int, show: bool) -> None:
        self.errors, self.cost, self.unknown, self.priced = 0, 0.0, False, False
        self.bar: Any = None
        self.flush: asyncio.TimerHandle | None = None
        if show:
            tqdm = _tqdm_class()
            self.bar = tqdm(total=total, initial=done, desc=f"map {run_id}", unit="row", dynamic_ncols=True)
            self.bar.set_postfix(self.postfix())  # errors and cost show from the start

    def postfix(self) -> dict[str, Any]:
        """`{errors, cost}` so far: cost `$0.0123`, `$0.0123+?` when some row's is unknown, `?` until
        a priced row settles (before the first row too: unknown is never shown as $0)."""
        cost = f"${self.cost:.4f}" + ("+?" if self.unknown else "") if self.priced else "?"
        return {"errors": self.errors, "cost": cost}

    def settled(self, result: dict[str, Any]) -> None:
        if result.get("status") != "completed":
            self.errors += 1
        if result.get("cost_usd") is None:
            self.unknown = True
        else:
            self.cost += float(result["cost_usd"])
            self.priced = True
        if self.bar is not None:
            self.bar.set_postfix(self.postfix(), refresh=False)
            self.bar.update(1)
            if self.bar.last_print_n < self.bar.n and self.flush is None:
                # tqdm drew nothing (an update within `mininterval` of the last): draw it once that has
                # passed, so a run whose next row is slow does not show a stale count meanwhile
                self.flush = asyncio.get_running_loop().call_later(self.bar.mininterval, self._flush)

    def _flush(self) -> None:
        self.flush = None
        if self.bar is not None and not self.bar.disable:
            self.bar.refresh()

    def close(self) -> None:
        if self.flush is not None:
            self.flush.cancel()
        if self.bar is not None:
            self.bar.close()


def stopped_text(run_id: str, statuses: dict[str, str]) -> str:
    """What a stopped run says in the cell (`statuses`: the ledger's `{row_key: status}`): how many
    rows settled, how many were stopped while they ran, how many were not run, and how to finish."""
    counts = {s: list(statuses.values()).count(s) for s in ("completed", "error", "aborted", "pending", "running")}
    settled = counts["completed"] + counts["error"] + counts["aborted"]
    return (f"map {run_id!r} stopped: {settled} of {len(statuses)} rows settled ({counts['completed']} completed, "
            f"{counts['error']} error, {counts['aborted']} aborted: running at Stop), "
            f"{counts['pending'] + counts['running']} not run; "
            f"map(..., run_id={run_id!r}) again runs those.")
