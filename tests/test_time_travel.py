"""Time travel (issue 32): turn records, `agent.fork(turn, at=...)`, and the refusals.

The property test is the issue's "Done when": for random stored turns on scripted models (text,
several steps, parallel tool calls, reasoning, an approval, a sub-agent call), forking at every
hook site with no edit and resuming on the recorded model with `tools="recorded"` reproduces the
original reply exactly (same parts, same chunks, ids aside); with an edit, the part before the
fork point is identical and only the rest differs.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import add, mul, scripted_agent
from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.testing import FunctionModel
from think_nb.testing import ScriptedModel as S
from think_nb.turns.fork import sites

RUNS: list[str] = []
_names = itertools.count()


@tool(needs_approval=True)
def wipe(path: str) -> str:
    """Delete a file (gated)."""
    RUNS.append(f"wipe {path}")
    return f"wiped {path}"


class Helper(Think):
    """The sub-agent a `consult` call asks."""

    script: S = S([])
    include_workspace_tools = False

    def get_model(self) -> str:
        return type(self).script.model


def lead_class(child_script: S) -> type[Think]:
    helper = type("Helper", (Helper,), {"script": child_script})

    class Lead(Think):
        include_workspace_tools = False
        script: S = S([])

        def get_model(self) -> str:
            return type(self).script.model

        def get_tools(self) -> list:
            return [add, mul, wipe, self.consult]

        async def consult(self, question: str) -> str:
            """Ask the helper sub-agent."""
            RUNS.append(f"consult {question}")
            return await self.delegate(self.sub_agent(helper, "helper"), question)

    return Lead


# -- normalizing: ids are fresh in every run (message, text block, approval, request ids) -------------
def normal(items: list[Any]) -> list[Any]:
    """`items` with every generated id replaced by its order of first appearance, and a reply's
    request id and fork label dropped: two runs of one turn compare equal when they did the same."""
    seen: dict[str, str] = {}

    def rename(value: Any) -> Any:
        return seen.setdefault(value, f"<id{len(seen)}>") if isinstance(value, str) else value

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, inner in value.items():
                if key in ("requestId", "fork"):
                    continue
                out[key] = rename(inner) if key in ("id", "messageId", "approvalId") else walk(inner)
            return out
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return [walk(item) for item in items]


TOOL_PHASE = ("tool-output-available", "tool-output-error", "tool-approval-request", "data-subagent")


def chunks_of(agent: Think, request_id: str) -> list[dict]:
    """A turn's recorded chunks, each step's tool phase in a canonical order: a step's calls run
    concurrently and finish in any order (in the original as in a fork), so the chunks of their
    results, approval requests and sub-agent progress are compared as a set, the rest in order."""
    recording = agent.recording(request_id)
    assert recording is not None
    out: list[dict] = []
    phase: list[dict] = []
    for _, chunk in recording.chunks:
        if chunk["type"] in TOOL_PHASE:
            phase.append(chunk)
            continue
        out.extend(sorted(phase, key=_content))
        phase = []
        out.append(chunk)
    return out + sorted(phase, key=_content)


def _content(chunk: dict) -> str:
    """A chunk's text without its generated ids (the sort key of `chunks_of`)."""
    return json.dumps({k: v for k, v in chunk.items() if k not in ("id", "approvalId")}, sort_keys=True,
                      default=str).replace(str(chunk.get("id")), "")


# -- random turns --------------------------------------------------------------------------------------
CALLS = {"add": lambda n: {"a": n, "b": 40}, "mul": lambda n: {"a": n, "b": 3},
         "consult": lambda n: {"question": f"what is {n}?"}, "wipe": lambda n: {"path": f"/tmp/{n}"}}


@st.composite
def turns(draw: Any) -> dict:
    """A random scripted turn: 1-4 steps; every step but the last calls 1-3 tools (in parallel),
    the last answers in text; text, reasoning and chunk sizes vary; `wipe` needs approval (the turn
    then ends waiting for it)."""
    steps, child_steps = [], []
    n_steps = draw(st.integers(1, 4))
    for n in range(n_steps):
        step: list = []
        if draw(st.booleans()):
            step.append(S.reasoning(draw(st.sampled_from(["Think first.", "Hmm, tools."])), draw(st.integers(2, 5))))
        if n < n_steps - 1 or draw(st.booleans()):
            step.append(S.text(draw(st.sampled_from(["Let me compute.", "Checking…", ""])) or "Ok.",
                               draw(st.integers(1, 6))))
        if n < n_steps - 1:
            names = draw(st.lists(st.sampled_from(sorted(CALLS)), min_size=1, max_size=3))
            for i, name in enumerate(names):
                step.append(S.tool_call(name, CALLS[name](n * 10 + i), chunk_size=draw(st.integers(3, 9))))
                if name == "consult":
                    child_steps.append([S.text(f"It is {n * 10 + i}.")])
            if "wipe" in names:
                steps.append([*step, S.usage(10 + n, 5)])
                break
        else:
            step.append(S.text("The answers are in.", draw(st.integers(2, 7))))
        steps.append([*step, S.usage(10 + n, 5 + n)])
    return {"steps": steps, "child": child_steps}


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(turns())
def test_forking_at_every_site_without_an_edit_reproduces_the_turn(turn: dict) -> None:
    cls = lead_class(S(turn["child"]))
    cls.script = S(turn["steps"])
    agent = cls(f"lead{next(_names)}")
    original = agent.run("Do the sums.")
    assert original.status == "completed", original.error
    reply = original.message
    before_chunks = chunks_of(agent, original.request_id)
    stored_before = json.dumps(runtime_of(agent).conversation.get(reply["id"]), sort_keys=True)
    trace_before = agent.trace(original.request_id).to_dict("records")
    record = runtime_of(agent).store.records.load(original.request_id)
    assert record is not None
    ran = list(RUNS)
    for site in sites(record.record):
        stepper = agent.fork(original.request_id, at=site, model="recorded", tools="recorded")
        assert stepper.paused is not None and stepper.paused.hook == site.split(":")[0], site
        result = stepper.run()
        assert result.status == "completed", (site, result.error)
        assert normal([result.message["parts"]]) == normal([reply["parts"]]), site
        assert normal(chunks_of(agent, result.request_id)) == normal(before_chunks), site
        assert result.message["metadata"]["fork"]["at"] == site
        fork_parent = runtime_of(agent).store.messages.tree_rows()[result.message["id"]][0]
        assert fork_parent == runtime_of(agent).store.messages.tree_rows()[reply["id"]][0]  # a sibling
    assert ran == RUNS  # no tool (nor the sub-agent) ran again: every result came from the record
    assert json.dumps(runtime_of(agent).conversation.get(reply["id"]), sort_keys=True) == stored_before
    assert agent.trace(original.request_id).to_dict("records") == trace_before
    assert chunks_of(agent, original.request_id) == before_chunks


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(turns())
def test_an_edited_result_changes_only_what_follows_the_fork_point(turn: dict) -> None:
    cls = lead_class(S(turn["child"]))
    cls.script = S(turn["steps"])
    agent = cls(f"edit{next(_names)}")
    original = agent.run("Do the sums.")
    record = runtime_of(agent).store.records.load(original.request_id)
    assert record is not None
    after = [s for s in sites(record.record) if s.startswith("after_tool_call:")]
    if not after:
        return  # no tool ran (a text answer, or only a gated call)
    call = after[0].split(":", 1)[1]
    stepper = agent.fork(original.request_id, at=after[0], model="recorded", tools="recorded")
    stepper.paused.ctx.output = "EDITED"
    result = stepper.run()
    assert "result" in result.message["metadata"]["fork"]["edited"]
    old, new = normal(chunks_of(agent, original.request_id)), normal(chunks_of(agent, result.request_id))
    mine = next(c for c in old if c.get("toolCallId") == call and c["type"].startswith("tool-output"))
    cut = next(i for i, c in enumerate(old) if c["type"] in TOOL_PHASE and c.get("toolCallId", call) in
               record.record["steps"][next(n for n, s in enumerate(record.record["steps"]) if call in s["calls"])]
               ["calls"])
    assert new[:cut] == old[:cut]  # the part before the fork point is identical: the steps before, the model's output
    end = next(i for i in range(cut, len(old)) if old[i]["type"] not in TOOL_PHASE)
    edited = [c for c in new[cut:end] if c.get("toolCallId") == call and c["type"].startswith("tool-output")]
    assert [c["output"] for c in edited] == ["EDITED"] != [mine.get("output")]
    assert [c for c in new[cut:end] if c not in edited] == [c for c in old[cut:end] if c is not mine]  # its siblings
    outputs = {p["toolCallId"]: p.get("output") for p in result.message["parts"] if "toolCallId" in p}
    assert outputs[call] == "EDITED"


def test_fork_before_the_turn_with_another_system_prompt_on_a_live_model() -> None:
    seen: list[str] = []

    def reply(messages: list[dict], info: Any) -> str:
        seen.append(messages[0]["content"])
        return f"({messages[0]['content']})"

    script = S([[S.text("Hello there.")]])
    agent = scripted_agent(script, name="sys")
    original = agent.run("Hi")
    stepper = agent.fork(-1, at="before_turn", model=FunctionModel(reply))
    assert stepper.paused.hook == "before_turn"
    stepper.paused.ctx.system = "Answer in French."
    result = stepper.run()
    assert seen == ["Answer in French."]
    assert result.message["parts"][-1]["text"] == "(Answer in French.)"
    assert result.message["metadata"]["fork"]["label"] == "forked at before_turn — system prompt edited"
    assert [m["id"] for m in agent.get_branches(original.message["id"])] == [original.message["id"],
                                                                            result.message["id"]]


def test_tools_run_live_after_the_fork_point_unless_recorded() -> None:
    calls: list[dict] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        calls.append({"n": n})
        return n + 1

    script = S([[S.tool_call("count", {"n": 1}), S.tool_call("count", {"n": 2})], [S.text("2 and 3.")]])
    agent = scripted_agent(script, tools=[count], name="live")
    original = agent.run("count")
    assert len(calls) == 2
    record = runtime_of(agent).store.records.load(original.request_id).record
    first, second = record["steps"][0]["calls"]
    live = agent.fork(original.request_id, at=f"after_tool_call:{first}", model="recorded")
    live.run()
    assert calls[2:] == [{"n": 2}] and live.reused == []  # the first is before the fork point: recorded
    reused = agent.fork(original.request_id, at="before_turn", model="recorded", tools="recorded")
    reused.run()
    assert len(calls) == 3 and reused.reused == [first, second]


def test_a_gated_tool_after_the_fork_point_asks_for_approval_again() -> None:
    RUNS.clear()
    script = S([[S.tool_call("wipe", {"path": "/x"})]])
    agent = scripted_agent(script, tools=[wipe], name="gate")
    original = agent.run("wipe /x")
    assert [a["tool_name"] for a in agent.pending_approvals()] == ["wipe"]
    fork = agent.fork(original.request_id, at="before_turn", model="recorded", tools="recorded")
    result = fork.run()
    part = next(p for p in result.message["parts"] if p["type"] == "tool-wipe")
    assert part["state"] == "approval-requested" and RUNS == []
    assert [a["tool_call_id"] for a in agent.pending_approvals()] == [part["toolCallId"]]


def test_a_record_outlives_the_trace_window_and_goes_with_its_conversation(monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb.store import traces

    monkeypatch.setattr(traces, "KEEP_TURNS", 1)
    monkeypatch.setattr(traces, "TRIM_EVERY", 1)
    script = S([[S.text(f"Reply {n}.")] for n in range(3)])
    agent = scripted_agent(script, name="keep")
    first = agent.run("one")
    agent.run("two")
    agent.run("three")
    store = runtime_of(agent).store
    assert store.traces.load(first.request_id) is None  # trimmed with the traces' window
    assert store.records.load(first.request_id) is not None
    assert 0 < store.records.size(first.request_id) < 1024
    agent.clear_messages()
    assert store.records.request_ids() == []


# -- refusals: one line naming why ------------------------------------------------------------------------
def test_refusals_name_why(tmp_path: Any) -> None:
    script = S([[S.text("One.")], [S.text("Two.")]])
    agent = scripted_agent(script, name="refuse")
    first = agent.run("a")
    with pytest.raises(UserError, match=r"has no hook site 'before_tool_call:nope'; its sites: before_turn, "):
        agent.fork(first.request_id, at="before_tool_call:nope")
    with pytest.raises(UserError, match=r"fork\(tools='maybe'\)"):
        agent.fork(first.request_id, tools="maybe")
    with pytest.raises(UserError, match=r"agent.turns\(\) has 1 turns"):
        agent.fork(5)
    agent.create_session("other")
    agent.run("b")
    with pytest.raises(UserError, match=r"belongs to another session \(''\); agent.switch_session\(\)"):
        agent.fork(first.request_id)


def test_a_turn_recovered_after_a_kill_is_refused() -> None:
    agent = scripted_agent(S([[S.text("One.")]]), name="killed")
    store = runtime_of(agent).store
    started = store.turn_log.start("req_killed", "send", False)
    assert started
    store.turn_log.settle_interrupted("req_killed", "the kernel died")
    with pytest.raises(UserError, match=r"'req_killed': it was recovered after its kernel was killed"):
        agent.fork("req_killed")


def test_an_older_version_of_the_class_is_refused(tmp_path: Any) -> None:
    db = str(tmp_path / "v.sqlite")
    script = S([[S.text("One.")]])

    def make(verbose: bool) -> type[Think]:  # a cell defining the class, run again (maybe edited)
        if verbose:
            class Calc(Think):
                include_workspace_tools = False

                def get_model(self) -> str:
                    return script.model

                def get_system_prompt(self) -> str:
                    return "Be verbose."
        else:
            class Calc(Think):  # type: ignore[no-redef]
                include_workspace_tools = False

                def get_model(self) -> str:
                    return script.model

                def get_system_prompt(self) -> str:
                    return "Be brief."
        return Calc

    old = make(False)("calc", db=db)
    turn = old.run("a")
    again = make(False)("calc", db=db)  # the same code run again (a cell re-run): fine
    fork = again.fork(turn.request_id, model="recorded")
    assert fork.paused.hook == "before_turn"
    assert fork.run().status == "completed"
    newer = make(True)("calc", db=db)
    with pytest.raises(UserError, match=r"its hooks ran on an older version of Calc"):
        newer.fork(turn.request_id)


def test_a_compacted_conversation_is_refused() -> None:
    from think_nb.session import create_compact_function

    steps = [[S.text(f"Answer {n}, about topic {n} at length.")] for n in range(4)] + [[S.text("## Topics")]]

    def configure(self: Think, session: Any) -> Any:
        return session.on_compaction(create_compact_function(tail_token_budget=30))

    agent = scripted_agent(S(steps), name="compacted", configure_session=configure)
    first = agent.run("Question 0 about topic 0")
    for n in range(1, 4):
        agent.run(f"Question {n} about topic {n}")
    assert asyncio.run(agent.compact()) is not None
    with pytest.raises(UserError, match=r"the conversation was compacted after it"):
        agent.fork(first.request_id)


# -- compare -----------------------------------------------------------------------------------------------
def test_compare_a_fork_with_its_original() -> None:
    script = S([[S.text("Let me add."), S.tool_call("add", {"a": 2, "b": 40}), S.usage(10, 4)],
                [S.text("The sum is 42."), S.usage(20, 5)]])
    agent = scripted_agent(script, name="cmp")
    original = agent.run("2 + 40?")
    record = runtime_of(agent).store.records.load(original.request_id).record
    call = record["steps"][0]["calls"][0]
    fork = agent.fork(original.request_id, at=f"after_tool_call:{call}",
                      model=S([[S.text("The sum is 0."), S.usage(20, 5)]]))
    fork.paused.ctx.output = 0
    result = fork.run()
    comparison = agent.compare(original, result)
    rows = {r["aspect"]: (r["a"], r["b"], r["same"]) for r in comparison.frame.to_dict("records")}
    assert rows["text"] == ("Let me add.The sum is 42.", "Let me add.The sum is 0.", False)
    assert rows["call 1 tool"] == ("add", "add", True)
    assert rows["call 1 arguments"] == ({"a": 2, "b": 40}, {"a": 2, "b": 40}, True)
    assert rows["call 1 result"] == (42.0, 0, False)
    assert rows["fork"] == (None, "forked at after_tool_call(add) — result edited", False)
    assert rows["total_tokens"] == (39, 39, True)
    assert comparison.word_diff == [("=", "Let me add.The sum is "), ("-", "42."), ("+", "0.")]
    view = comparison._repr_html_()
    assert "<del>42.</del><ins>0.</ins>" in view and "forked at after_tool_call(add) — result edited" in view
    assert agent.compare(original.message["id"], result.request_id).rows == comparison.rows
    with pytest.raises(UserError, match=r"compare\(\): 'nope' is no reply of this conversation"):
        agent.compare("nope", result)


def test_the_panel_annotates_a_forked_version_with_its_comparison() -> None:
    from think_nb.panel.hub import ViewHub

    script = S([[S.text("Let me add."), S.tool_call("add", {"a": 2, "b": 40})], [S.text("The sum is 42.")]])
    agent = scripted_agent(script, name="annotated")
    original = agent.run("2 + 40?")
    call = runtime_of(agent).store.records.load(original.request_id).record["steps"][0]["calls"][0]
    other = S([[S.text("The sum is 0.")]])
    fork = agent.fork(original.request_id, at=f"after_tool_call:{call}", model=other)
    fork.paused.ctx.output = 0
    result = fork.run()
    branches = ViewHub.for_agent(runtime_of(agent)).annotations()["branches"]
    assert branches[result.message["id"]] == {
        "index": 1, "count": 2, "ids": [original.message["id"], result.message["id"]],
        "compare": {"of": original.message["id"], "label": "forked at after_tool_call(add) — result edited",
                    "diff": [["=", "Let me add.The sum is "], ["-", "42."], ["+", "0."]],
                    "rows": [{"aspect": "model", "a": script.model, "b": other.model},
                             {"aspect": "call 1 result", "a": "42.0", "b": "0"}]}}
    agent.switch_branch(original.message["id"])
    assert "compare" not in ViewHub.for_agent(runtime_of(agent)).annotations()["branches"][original.message["id"]]


KILLED_CHILD = '''
import asyncio, os, sys
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
from think_nb import Think
from think_nb.testing import ScriptedModel as S

script = S([[S.text("Half an answer"), S.stall()]])

class Killed(Think):
    include_workspace_tools = False
    def get_model(self):
        return script.model
    def on_chunk(self, chunk):
        if chunk["type"] == "text-delta":
            open(sys.argv[2], "w").close()

async def main():
    await Killed("k", db=sys.argv[1]).send("Tell me")

asyncio.run(main())
'''


async def test_a_turn_killed_with_its_kernel_and_its_recovery_are_refused(tmp_path: Any) -> None:
    """A real SIGKILL mid-turn: the turn never stored a record; recovery continues or retries it in
    the next process (`recovery-continue` / `recovery-retry`). Neither can be forked, each refused
    in one line saying why."""
    import sys
    import time

    db, streaming = tmp_path / "k.sqlite", tmp_path / "streaming"
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", KILLED_CHILD, str(db), str(streaming))
    try:
        deadline = time.monotonic() + 120
        while not streaming.exists():  # the condition, not a timer: the child has streamed
            assert child.returncode is None and time.monotonic() < deadline, "the child never streamed"
            await asyncio.sleep(0.01)
    finally:
        child.kill()  # SIGKILL
        await child.wait()
    script = S([[S.text(" and the rest.")]])

    class Killed(Think):
        include_workspace_tools = False

        def get_model(self) -> str:
            return script.model

        def on_chat_recovery(self, ctx: Any) -> dict:
            return {"continue": True}

    agent = Killed("k", db=str(db))
    assert agent.recovery_task is not None
    await agent.recovery_task
    log = agent.turns()
    assert log[0]["trigger"] == "send" and log[1]["trigger"] in ("recovery-continue", "recovery-retry")
    assert log[0]["status"] == "interrupted" and log[1]["status"] == "completed"
    for turn in log:
        with pytest.raises(UserError, match=r"it was recovered after its kernel was killed, so no record holds"):
            agent.fork(turn["request_id"])


def test_a_fork_can_be_forked_again() -> None:
    script = S([[S.text("One.")]])
    agent = scripted_agent(script, name="again")
    original = agent.run("a")
    first = agent.fork(original.request_id, model=S([[S.text("Two.")]]))
    first.paused.ctx.system = "Say two."
    two = first.run()
    second = agent.fork(two.request_id, at="on_chat_response")  # everything from the fork's own record
    three = second.run()
    assert [m["parts"][-1]["text"] for m in agent.get_branches(original.message["id"])] == ["One.", "Two.", "Two."]
    assert three.message["metadata"]["fork"]["of"] == two.message["id"]
    assert normal([three.message["parts"]]) == normal([two.message["parts"]])
    seen: list[str] = []
    fourth = agent.fork(two.request_id, at="on_step_finish:0", model=FunctionModel(lambda m, i: seen.append(
        m[0]["content"]) or "Four."))
    fourth.run()  # nothing runs live after on_step_finish:0 of a one-step turn
    assert seen == []
    fifth = agent.fork(two.request_id, at="before_step:0", model=FunctionModel(lambda m, i: seen.append(
        m[0]["content"]) or "Five."))
    fifth.run()  # the step runs live, sent the system prompt the fork's before_turn ended with
    assert seen == ["Say two."]


# -- a record read back from the SQLite file is untrusted: a forged or damaged one is refused ------------
@pytest.mark.parametrize("forged", [
    {"steps": "x"}, {"steps": None}, {"steps": [{"out": [["c"]], "calls": 5}]},
    {"steps": [{"out": [["c", "call_9", "add", "not a list"]], "calls": ["call_9"]}]},
    {"steps": [{"out": [["t", ["not a length"]]], "calls": []}]}, {"sites": [5]},
    {"sites": ["before_turn", "on_step_finish:zz"]}, {"flags": "ab"}, {"compactions": "x"},
    {"emitted": ["chunk"]}, "not JSON"])
def test_a_forged_record_is_refused_in_one_line_and_history_still_lists_every_turn(forged: Any) -> None:
    from think_nb.turns.fork import history

    agent = scripted_agent(S([[S.text("One.")], [S.text("Two.")]]), name=f"forged{next(_names)}")
    first, second = agent.run("a"), agent.run("b")
    store = runtime_of(agent).store
    record = store.records.load(first.request_id).record
    text = forged if isinstance(forged, str) else json.dumps({**record, **forged})
    store.db.execute("UPDATE think_turn_records SET record = ? WHERE request_id = ?", (text, first.request_id))
    for at in ("before_turn", "on_step_finish:zz"):
        with pytest.raises(UserError, match=rf"^Cannot fork turn '{first.request_id}': its stored record is "
                                            r"damaged \([a-zA-Z' ]+\); run the turn again instead\.$"):
            agent.fork(first.request_id, at=at)
    table = history(runtime_of(agent))
    assert table["request_id"].tolist() == [first.request_id, second.request_id]
    assert table["sites"].tolist()[0] == [] and table["forkable"].tolist()[1] is True
    assert str(table["forkable"].tolist()[0]).startswith("its stored record is damaged")
    if forged == "not JSON":  # compare finds no reply through it, and says so in one line
        with pytest.raises(UserError, match=r"^compare\(\): '[^']+' is no reply of this conversation"):
            agent.compare(first.request_id, second.request_id)


def test_a_long_forked_reply_is_diffed_around_its_common_start_and_end_never_word_by_word_whole() -> None:
    """The panel diffs a forked reply with its original on the kernel's loop (`hub._compare_fork`);
    difflib is quadratic: two 20,000-word replies of a small vocabulary took 3.6 s there. Past
    `MAX_DIFF_PIECES` words, the common start and end are kept and only what lies between is diffed
    (by words, then by lines, else replaced whole); both texts always come back whole."""
    import random

    from think_nb.compare import MAX_DIFF_PIECES, word_diff

    def sides(diff: list[tuple[str, str]]) -> tuple[str, str]:
        return "".join(t for op, t in diff if op != "+"), "".join(t for op, t in diff if op != "-")

    base = " ".join(f"w{i}" for i in range(30_000))
    edited = base.replace(" w15000 ", " CHANGED ")
    diff = word_diff(base, edited)
    assert [op for op, _ in diff] == ["=", "-", "+", "="] and diff[1:3] == [("-", "w15000 "), ("+", "CHANGED ")]
    assert sides(diff) == (base, edited)

    rng = random.Random(7)
    noise = [" ".join(f"w{rng.randint(0, 50)}" for _ in range(20_000)) for _ in range(2)]
    assert word_diff(*noise) == [("-", noise[0]), ("+", noise[1])]  # one line each, too long to diff: whole
    lines = ["\n".join(f"line {rng.randint(0, 30)}" for _ in range(1_500)) for _ in range(2)]
    by_lines = word_diff(*lines)  # more words than MAX_DIFF_PIECES, fewer lines: diffed line by line
    assert sides(by_lines) == tuple(lines) and len(by_lines) > 10  # not replaced whole
    short = word_diff("a b c", "a x c")
    assert short == [("=", "a "), ("-", "b "), ("+", "x "), ("=", "c")] and MAX_DIFF_PIECES == 2000
