"""The status every panel of an agent shows, as a pure function of what the agent is doing.

`status_of(facts)` is `think_nb.panel.protocol.STATUSES`'s value and its detail line for one
`StatusFacts` snapshot, with no state of its own (as `js/src/state.ts` is on the panel side); the
hub (`think_nb.panel.hub.ViewHub`) gathers the facts and sends what this returns. The rules, in
order (the first that holds wins):

1. a step-mode turn paused at a hook: `paused`;
2. a turn streams: it sent something a person sees (text, reasoning, a tool call; not just the
   `start` markers) and its model path is not waiting now (for litellm, the model's load, or a
   non-streamed model call such as the embedded model choosing a tool): `streaming`;
3. a dead kernel's turns are being continued: `recovering`;
4. a turn was sent, is queued or runs: `pending` while one waits out a debounce window, else
   `submitted`;
5. the last turn failed: `error`;
6. a tool call waits for the person: `awaiting-approval`, then `awaiting-client-tool`;
7. `ready`.

The detail describes the *current* turn (`current_turn`: the one the engine runs, first in its
order; Stop cancels it), while the status is `submitted`, `streaming` or `pending`: what its model
path reported ("thinking — choosing a tool…", "loading litellm…"), else what it noted ("compacted to
fit", `on_note`), else (when `submitted`) what any turn waits for; with "N queued" beside it when
turns wait behind it. (Before issue 27 it described the newest turn, "queued behind 1 turn", while
the turn that ran, and that Stop cancelled, was another.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["StatusFacts", "current_turn", "status_of"]


@dataclass(frozen=True)
class StatusFacts:
    """What the status is computed from (request ids are strings; order: oldest first)."""

    paused_at: str = ""
    """The hook a step-mode turn waits at ("" when none)."""
    streaming: frozenset[str] = frozenset()
    """Turns that sent a chunk a person sees (`think_nb.panel.hub.SILENT_CHUNKS` do not count)."""
    waiting: Mapping[str, str] = field(default_factory=dict)
    """Turn -> what its model path waits for (litellm's import, the model's load)."""
    notes: Mapping[str, str] = field(default_factory=dict)
    """Turn -> what it did that its detail keeps saying while it runs ("compacted to fit")."""
    recovering: bool = False
    submitted: frozenset[str] = frozenset()
    """Turns a panel sent that have not streamed yet."""
    running: tuple[str, ...] = ()
    """Turns started by any entry point and not ended, oldest first (Stop cancels `current_turn`)."""
    agent_running: bool = False
    """The engine runs or queues a turn."""
    debouncing: bool = False
    """A turn waits out a `message_concurrency` debounce window."""
    queue: tuple[str, ...] = ()
    """The engine's order: streaming turns, then pending ones."""
    error: str = ""
    """The last turn's error ("" when it did not fail)."""
    awaiting: str | None = None
    """`awaiting-approval`, `awaiting-client-tool` or None: what a tool call waits for."""


def status_of(facts: StatusFacts) -> tuple[str, str]:
    """`(status, detail)` for `facts` (see the module docstring)."""
    status = _status(facts)
    return status, _detail(facts, status)


def _status(facts: StatusFacts) -> str:
    if facts.paused_at:
        return "paused"
    if facts.streaming - facts.waiting.keys():  # a turn waiting again (its next step's model call) is not
        return "streaming"
    if facts.recovering:
        return "recovering"
    if facts.submitted or facts.running or facts.agent_running:
        return "pending" if facts.debouncing else "submitted"
    if facts.error:
        return "error"
    return facts.awaiting or "ready"


def current_turn(facts: StatusFacts) -> str | None:
    """The turn the status describes and Stop cancels: the first of the engine's order that runs
    (its queue lists the running turns before the waiting ones), else the oldest running one."""
    running = set(facts.running)
    return next((r for r in facts.queue if r in running), facts.running[0] if facts.running else None)


def _detail(facts: StatusFacts, status: str) -> str:
    current = current_turn(facts)
    if status not in ("submitted", "streaming", "pending") or current is None:
        return ""
    behind = len(facts.queue) - facts.queue.index(current) - 1 if current in facts.queue else 0
    queued = f"{behind} queued" if behind > 0 else ""
    if current in facts.waiting:
        said = facts.waiting[current]
    elif current in facts.notes:
        said = facts.notes[current]
    else:
        said = next(reversed(list(facts.waiting.values())), "") if status == "submitted" else ""
    return " · ".join(x for x in (said, queued) if x)
