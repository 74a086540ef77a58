"""Best-effort start-up steps: an agent is created even when one of them fails (Think's
`_runBestEffortOnStartStep`, `getOnStartDegradations()`; cloudflare/agents#1710).

Creating an agent runs steps that read what earlier processes stored. A failure there that comes
from the data (a row SQLite cannot read back, a user's `get_scheduled_tasks()` that raises) must
not make the agent impossible to create: each such step runs here, and when it raises, the agent
is created without it and the failure is

- listed by `agent.get_on_start_degradations()`: `[{"step": ..., "error": "<Type>: <message>"}]`
  (Think's `OnStartDegradation {step, error}`), oldest first;
- emitted as the event `chat:onstart:degraded` (step, error; `think_nb.events`);
- shown in the notebook as a `DegradedStartWarning` naming the agent, the step and the fix.

The steps (Think's names):

    transcript-hydration       reading the branch into memory (`think_nb.conversation`, on first
                               use); the agent shows an empty transcript, storage is untouched,
                               and the next turn's sync (or any re-read) tries again: when it
                               succeeds the degradation is cleared (Think's "later sync recovers")
    durable-work-recovery      a dead process's turns, agent-tool runs, action ledger and
                               submissions (`think_nb.turns.recovery`, `think_nb.submissions`);
                               tried again when the agent is created again
    scheduled-task-reconcile   `get_scheduled_tasks()` and re-arming stored tasks
                               (`think_nb.schedules`); tried again when the agent is created again

A `UserError` (a declaration think_nb refuses: bad input) still raises where it is written, as
everywhere; `KeyboardInterrupt` and other `BaseException`s pass.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from think_nb import events
from think_nb.errors import UserError

__all__ = ["STEPS", "DegradedStartWarning", "StartUp"]

log = logging.getLogger("think_nb")

STEPS = ("transcript-hydration", "scheduled-task-reconcile", "durable-work-recovery")

_FIX = {
    "transcript-hydration": "agent.messages is empty until the transcript can be read; nothing stored is lost and the "
                            "next turn reads it again (check the SQLite file: PRAGMA integrity_check).",
    "scheduled-task-reconcile": "its scheduled tasks were not re-armed; fix get_scheduled_tasks() (or the file) and "
                                "create the agent again.",
    "durable-work-recovery": "a dead process's turns and submissions were left as they are; fix the cause and create "
                             "the agent again to recover them.",
}


class DegradedStartWarning(UserWarning):
    """A start-up step failed and was skipped; the agent works without it (see `think_nb.startup`)."""


# shown every time, not once per place (Python's default): a cell that creates the agent again and fails
# again says so again
warnings.filterwarnings("always", category=DegradedStartWarning)


class StartUp:
    """The best-effort start-up steps of one agent and what failed (see the module docstring).

    Args:
        agent_key: the agent's storage key (events name their agent with it).
    """

    def __init__(self, agent_key: str) -> None:
        self.key = agent_key
        self._failed: dict[str, str] = {}

    def run(self, step: str, fn: Callable[[], Any]) -> bool:
        """Run step `step`; True when it succeeded (its degradation, if any, is cleared), False when it
        raised (recorded, emitted, warned). A `UserError` is re-raised."""
        try:
            fn()
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - best effort: any failure of the step is recorded
            self.failed(step, exc)
            return False
        self.succeeded(step)
        return True

    def failed(self, step: str, exc: BaseException) -> None:
        """Record that `step` failed with `exc`: listed, `chat:onstart:degraded` emitted, warned."""
        assert step in STEPS, step
        error = f"{type(exc).__name__}: {exc}"
        self._failed.pop(step, None)
        self._failed[step] = error
        log.debug("start-up step %s of %s failed", step, self.key, exc_info=exc)
        events.emit("chat:onstart:degraded", {"step": step, "error": error}, agent=self.key)
        warnings.warn(f"{self.key}: start-up step {step!r} failed ({error}); the agent works without it: "
                      f"{_FIX[step]}", DegradedStartWarning, stacklevel=_outside())

    def succeeded(self, step: str) -> None:
        """`step` ran (again) and succeeded: it is no longer listed."""
        self._failed.pop(step, None)

    def list(self) -> list[dict[str, str]]:
        """`[{"step": ..., "error": ...}]`, in the order the steps failed."""
        return [{"step": step, "error": error} for step, error in self._failed.items()]


_PACKAGE = str(Path(__file__).resolve().parent) + os.sep


def _machinery(filename: str) -> bool:
    """True for think_nb's own frames and IPython's between a `%think` line and its magic."""
    if filename.startswith((_PACKAGE, "<decorator-gen-")):
        return True
    ipython = sys.modules.get("IPython")
    folder = getattr(ipython, "__file__", None)
    return folder is not None and filename.startswith(os.path.dirname(folder) + os.sep)


def _outside() -> int:
    """The `stacklevel` of the first caller outside think_nb and IPython (the user's cell that created
    the agent, with `Bot()` or `%think Bot`), which the warning names as its place."""
    frame, level = sys._getframe(1), 1  # the caller of this function is warnings.warn's stacklevel 1
    while frame.f_back is not None and _machinery(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level
