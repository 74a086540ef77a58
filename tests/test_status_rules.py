"""The panels' status is a pure function of what the agent is doing (`think_nb.panel.status`):
the same facts always give the same status, and each rule of the module docstring holds over any
facts (hypothesis), not just the ones the flows happen to produce."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from think_nb.panel import protocol
from think_nb.panel.status import StatusFacts, current_turn, status_of

ids = st.sampled_from(["r1", "r2", "r3", "r4"])
facts = st.builds(
    StatusFacts,
    paused_at=st.sampled_from(["", "before_turn", "before_tool_call"]),
    streaming=st.frozensets(ids, max_size=3),
    waiting=st.dictionaries(ids, st.sampled_from(["loading litellm…", "loading the local model…"]), max_size=2),
    recovering=st.booleans(),
    submitted=st.frozensets(ids, max_size=2),
    running=st.lists(ids, max_size=3, unique=True).map(tuple),
    agent_running=st.booleans(),
    debouncing=st.booleans(),
    queue=st.lists(ids, max_size=4, unique=True).map(tuple),
    error=st.sampled_from(["", "The turn failed."]),
    awaiting=st.sampled_from([None, "awaiting-approval", "awaiting-client-tool"]),
)


@given(facts)
def test_the_status_is_a_function_of_the_facts_and_follows_the_rules_in_order(f: StatusFacts) -> None:
    status, detail = status_of(f)
    assert status_of(dataclasses.replace(f)) == (status, detail)  # no state: the same facts, the same answer
    assert status in protocol.STATUSES
    busy = bool(f.submitted or f.running or f.agent_running)
    if f.paused_at:
        assert status == "paused"
    elif f.streaming - f.waiting.keys():
        assert status == "streaming"
    elif f.recovering:
        assert status == "recovering"
    elif busy:
        assert status == ("pending" if f.debouncing else "submitted")
    elif f.error:
        assert status == "error"
    else:
        assert status == (f.awaiting or "ready")
    if status not in ("submitted", "streaming", "pending") or not f.running:
        assert detail == ""


@given(facts)
def test_the_detail_describes_the_running_turn_and_counts_the_queue_behind_it(f: StatusFacts) -> None:
    """Issue 27: the detail is the current turn's (the one running, which Stop cancels), never the
    newest's; "N queued" says how many wait behind it."""
    status, detail = status_of(f)
    current = current_turn(f)
    if current is not None:
        assert current in f.running
        engine_runs = [r for r in f.queue if r in f.running]
        assert current == (engine_runs[0] if engine_runs else f.running[0])
    if status in ("submitted", "streaming", "pending") and current in f.queue:
        behind = len(f.queue) - f.queue.index(current) - 1
        assert detail.endswith(f"{behind} queued") == (behind > 0)
        if current in f.waiting:
            assert detail.startswith(f.waiting[current])


def test_a_turn_choosing_a_tool_with_one_queued_behind_it_says_so() -> None:
    f = StatusFacts(streaming=frozenset({"r1"}), waiting={"r1": "thinking — choosing a tool…"},
                    submitted=frozenset({"r2"}), running=("r1", "r2"), agent_running=True, queue=("r1", "r2"))
    assert status_of(f) == ("submitted", "thinking — choosing a tool… · 1 queued")
    assert current_turn(f) == "r1"


def test_a_turn_waiting_for_litellm_is_submitted_with_what_it_waits_for() -> None:
    f = StatusFacts(streaming=frozenset({"r1"}), waiting={"r1": "loading litellm…"}, running=("r1",),
                    agent_running=True, queue=("r1",))
    assert status_of(f) == ("submitted", "loading litellm…")
    assert status_of(dataclasses.replace(f, waiting={})) == ("streaming", "")
