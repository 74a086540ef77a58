"""The incident record of a recovery chain, and the budgets that seal a runaway one (Think's
`recovery-incident.ts` / `recovery-engine.ts`).

An *incident* is a chain of interrupted turns: the turn a dead process (or the stall watchdog)
cut off, the recovery turn that resumed it, the one that resumed that when it was cut off too, ...
Its id is the chain's first request id. One record per chain lives in `agent_state` under
`RECORDS_KEY` (`{"roots": {request_id: incident_id}, "chains": {incident_id: record}}`), so a
chain is followed across processes; a record is

    {"attempts": n, "work": w, "created_at": epoch s, "progress_at": epoch s}

Each time one of the chain's turns is found interrupted, `observe` reads the record:

- *progress*: the parts the interrupted attempt itself recorded (its own stream's reply, steps
  and tool results; never the stored history, which compaction rewrites: Think's compaction-proof
  progress) other than `step-start`, a sub-agent's forwarded text and tool calls included.
  Progress resets `attempts` to 0 (Think: `maxAttempts` resets on progress), adds to `work`
  and moves `progress_at` to now;
- the chain is *sealed* (`Verdict.exhausted`, Think's exhaustion reasons) when the next attempt
  would be over `chat_recovery_max_attempts` (`max_attempts_exceeded`), `work` is over
  `chat_recovery_max_recovery_work` (`work_budget_exceeded`), or no progress for
  `chat_recovery_no_progress_timeout` seconds (`no_progress_timeout`); `should_keep_recovering`
  returning False seals it too (`recovery_aborted`, asked by `think_nb.turns.recovery`).

`begin_attempt` counts an attempt when a recovery turn starts; `close` deletes the record when
the chain ends (its recovery turn completed, the hook declined, the chain was sealed); records
older than `INCIDENT_TTL_S` are swept by every `observe` (a chain whose process died for good).
`clock` (epoch seconds) is the one time source, so tests set time instead of waiting for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from think_nb.store.agent import AgentStore

RECORDS_KEY = "recovery_incidents"
INCIDENT_TTL_S = 24 * 3600.0
"""Seconds after its creation an incident record is swept even if its chain never ended."""

clock = time.time


@dataclass(frozen=True)
class Verdict:
    """What `observe` found for one interrupted turn of a chain.

    Attributes:
        incident_id: the chain's first request id.
        attempt: the attempt a recovery turn would be (1 after progress or for a new chain).
        work: parts the chain's recovery turns have recorded so far.
        age_ms: milliseconds since the chain's first interruption (Think's `ageMs`).
        exhausted: the exhaustion reason when the chain is sealed, else None.
    """

    incident_id: str
    attempt: int
    work: int
    age_ms: int
    exhausted: str | None


def progress_of(partial: dict | None) -> int:
    """How many parts an interrupted attempt recorded: its partial reply's parts but `step-start`,
    where a sub-agent's `data-subagent` part (`think_nb.subagents`, updated in place) counts what
    the child forwarded, its text and each tool call (Think's sub-agent forwarding credit)."""
    return sum(_credit(p) for p in (partial or {}).get("parts") or [])


def _credit(part: dict) -> int:
    if part.get("type") == "step-start":
        return 0
    if part.get("type") == "data-subagent":
        data = part.get("data") or {}
        return int(bool(data.get("text"))) + len(data.get("tools") or [])
    return 1


def observe(store: AgentStore, request_id: str, progress: int, *, max_attempts: int, max_work: int,
            no_progress_s: float | None) -> Verdict:
    """Read (creating it for a new chain) the record of `request_id`'s chain, credit `progress`
    (parts the interrupted attempt recorded) and say whether the chain is sealed. Sweeps records
    older than `INCIDENT_TTL_S` first."""
    now = clock()
    roots, chains = _load(store)
    _sweep(roots, chains, now)
    root = roots.get(request_id, request_id)
    record = chains.get(root)
    if record is None:
        record = chains[root] = {"attempts": 0, "work": 0, "created_at": now, "progress_at": now}
        roots[root] = root
    elif progress > 0:
        record.update(attempts=0, work=int(record["work"]) + progress, progress_at=now)
    _save(store, roots, chains)
    attempt = int(record["attempts"]) + 1
    work = int(record["work"])
    reason = None
    if attempt > max_attempts:
        reason = "max_attempts_exceeded"
    elif work > max_work:
        reason = "work_budget_exceeded"
    elif no_progress_s is not None and now - float(record["progress_at"]) > no_progress_s:
        reason = "no_progress_timeout"
    return Verdict(root, attempt, work, int((now - float(record["created_at"])) * 1000), reason)


def incident_of(store: AgentStore, request_id: str) -> str:
    """The id of `request_id`'s chain (its own id when it starts one)."""
    return _load(store)[0].get(request_id, request_id)


def begin_attempt(store: AgentStore, interrupted: str, new_request: str) -> None:
    """`new_request` resumes `interrupted`'s chain: one attempt more on its record."""
    roots, chains = _load(store)
    root = roots.get(interrupted, interrupted)
    roots[new_request] = root
    record = chains.setdefault(root, {"attempts": 0, "work": 0, "created_at": clock(), "progress_at": clock()})
    record["attempts"] = int(record["attempts"]) + 1
    _save(store, roots, chains)


def close(store: AgentStore, request_id: str) -> None:
    """Delete the record of `request_id`'s chain (the chain ended); nothing when it has none."""
    roots, chains = _load(store)
    root = roots.get(request_id, request_id)
    if root not in chains and root not in roots:
        return
    chains.pop(root, None)
    _save(store, {r: i for r, i in roots.items() if i != root}, chains)


def records(store: AgentStore) -> dict[str, dict[str, Any]]:
    """`{incident id: record}` of the chains still open."""
    return _load(store)[1]


def _sweep(roots: dict[str, str], chains: dict[str, dict], now: float) -> None:
    old = {root for root, record in chains.items() if now - float(record["created_at"]) > INCIDENT_TTL_S}
    for root in old:
        del chains[root]
    for request_id in [r for r, i in roots.items() if i in old]:
        del roots[request_id]


def _load(store: AgentStore) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    state = store.state.get(RECORDS_KEY) or {}
    return dict(state.get("roots") or {}), {k: dict(v) for k, v in (state.get("chains") or {}).items()}


def _save(store: AgentStore, roots: dict[str, str], chains: dict[str, dict[str, Any]]) -> None:
    if roots or chains:
        store.state.set(RECORDS_KEY, {"roots": roots, "chains": chains})
    else:
        store.state.delete(RECORDS_KEY)
