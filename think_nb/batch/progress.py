"""A run's progress bar: `tqdm.auto`, so a notebook shows tqdm's widget bar and a terminal a text
one (done/total, rate, ETA, with errors and cost so far in the postfix). Interrupting the cell
(Jupyter's Stop button, Ctrl-C in a script) stops the run: rows in flight are aborted and kept,
settled rows stay settled, pending rows stay pending for the same call to finish later."""

from __future__ import annotations

from typing import Any

__all__ = ["Progress"]


class Progress:
    """`total` rows of which `done` settled before; `show=False` draws nothing."""

    def __init__(self, run_id: str, total: int, done: int, show: bool) -> None:
        self.errors, self.cost, self.unknown = 0, 0.0, False
        self.bar: Any = None
        if show:
            from tqdm.auto import tqdm  # type: ignore[import-untyped]

            self.bar = tqdm(total=total, initial=done, desc=f"map {run_id}", unit="row", dynamic_ncols=True)

    def settled(self, result: dict[str, Any]) -> None:
        if result.get("status") != "completed":
            self.errors += 1
        if result.get("cost_usd") is None:
            self.unknown = True
        else:
            self.cost += float(result["cost_usd"])
        if self.bar is not None:
            cost = "?" if self.unknown and not self.cost else f"${self.cost:.4f}" + ("+?" if self.unknown else "")
            self.bar.set_postfix(errors=self.errors, cost=cost, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
