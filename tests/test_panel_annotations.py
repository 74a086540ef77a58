"""The panels' branch annotations (`ViewHub.annotations()["branches"]`: each forked reply's versions
and its comparison with the original) are remembered per message and its sibling group's revision:
a sync of an unchanged transcript reads no branches and compares nothing, and after any change to
a branch (a regenerate, a fork, a switch, an edited message) the annotation shown is the one a
fresh computation gives."""

from __future__ import annotations

from typing import Any

import pytest

from agents import scripted_agent
from think_nb.binding import runtime_of
from think_nb.panel.hub import ViewHub
from think_nb.testing import ScriptedModel as S


def forked_agent(turns: int = 3) -> tuple[Any, S]:
    """An agent with `turns` tool turns, each answered again once (`regenerate`), and the last one forked
    after its tool call with another result."""
    steps = []
    for n in range(turns):
        steps += [[S.text("Let me add."), S.tool_call("add", {"a": n, "b": 40})], [S.text(f"The sum is {n + 40}.")],
                  [S.text(f"Again: {n + 40}.")]]
    script = S(steps)
    agent = scripted_agent(script, name="annotated")
    for n in range(turns):
        agent.run(f"{n} + 40?")
        _regenerate(agent)
    original = agent.turns()[-2]["request_id"]
    call = runtime_of(agent).store.records.load(original).record["steps"][0]["calls"][0]
    fork = agent.fork(original, at=f"after_tool_call:{call}", model=S([[S.text("The sum is 0.")]]))
    fork.paused.ctx.output = 0
    fork.run()
    return agent, script


def _regenerate(agent: Any) -> None:
    from think_nb.aio import script_loop

    script_loop().run_until_complete(agent.regenerate())


def _edit(agent: Any) -> None:
    from think_nb.aio import script_loop
    from think_nb.messages import user_message

    script_loop().run_until_complete(agent.add_messages([user_message("0 + 41?")], parent_id=None))


def fresh(agent: Any) -> dict:
    """What a hub that never annotated this agent shows."""
    return ViewHub(runtime_of(agent)).annotations()["branches"]


def test_a_sync_of_an_unchanged_transcript_reads_no_branches_and_compares_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import think_nb.compare

    agent, _ = forked_agent()
    runtime = runtime_of(agent)
    hub = ViewHub.for_agent(runtime)
    first = hub.annotations()["branches"]
    assert len(first) == 3 and sum("compare" in b for b in first.values()) == 1  # three forks, one compared
    calls: list[str] = []
    get_branches, compare = runtime.get_branches, think_nb.compare.compare
    monkeypatch.setattr(runtime, "get_branches", lambda m: calls.append("get_branches") or get_branches(m))
    monkeypatch.setattr(think_nb.compare, "compare", lambda *a: calls.append("compare") or compare(*a))
    for _ in range(3):
        assert hub.annotations()["branches"] == first
    assert calls == []


def test_after_each_change_to_a_branch_the_annotation_shown_is_right() -> None:
    agent, script = forked_agent()
    hub = ViewHub.for_agent(runtime_of(agent))
    hub.annotations()  # remembered
    changes = [
        lambda: _regenerate(agent),  # a third version of the last reply
        lambda: agent.switch_branch(agent.get_branches(agent.messages[-1]["id"])[0]["id"]),  # the original
        lambda: agent.run("and 1 + 1?"),  # a new turn under it
        lambda: _regenerate(agent),
        lambda: _edit(agent),  # the user's first message written again: a new branch from the root
        lambda: agent.switch_branch(agent.get_branches(agent.messages[0]["id"])[0]["id"]),  # back
    ]
    script.steps.extend([[S.text("Once more.")], [S.text("2.")], [S.text("Two.")]])
    shown = []
    for change in changes:
        change()
        shown.append(hub.annotations()["branches"])
        assert shown[-1] == fresh(agent)
    assert [max((b["count"] for b in s.values()), default=0) for s in shown] == [4, 4, 4, 4, 0, 4]
