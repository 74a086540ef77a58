"""The panels' status is a pure function of what the agent is doing (`think_nb.panel.status`):
the same facts always give the same status, and each rule of the module docstring holds over any
facts (hypothesis), not just the ones the flows happen to produce."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from think_nb.panel import protocol
from think_nb.panel.status import StatusFacts, status_of

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
def test_the_detail_names_the_queue_ahead_of_the_newest_turn_first(f: StatusFacts) -> None:
    status, detail = status_of(f)
    if status in ("submitted", "streaming", "pending") and f.running and f.running[-1] in f.queue:
        ahead = f.queue.index(f.running[-1])
        if ahead:
            assert detail == f"queued behind {ahead} turn{'s' if ahead > 1 else ''}"


def test_a_turn_waiting_for_litellm_is_submitted_with_what_it_waits_for() -> None:
    f = StatusFacts(streaming=frozenset({"r1"}), waiting={"r1": "loading litellm…"}, running=("r1",),
                    agent_running=True, queue=("r1",))
    assert status_of(f) == ("submitted", "loading litellm…")
    assert status_of(dataclasses.replace(f, waiting={})) == ("streaming", "")
