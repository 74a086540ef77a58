"""Batch runs (`agent.map`, `think_nb.batch`): one real turn per DataFrame row, each a stored
conversation; the results table; approvals in a batch; resume by run id; bounds; evaluators."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

from providers.server import FakeProvider, Reply
from think_nb import Think, UserError, tool
from think_nb.batch import DENIED_TEXT, conversation_agent
from think_nb.batch.local import open_conversation
from think_nb.batch.pacing import Budget, Pacer
from think_nb.binding import runtime_of
from think_nb.testing import FunctionModel
from think_nb.testing import ScriptedModel as S

RAN: list[int] = []


@tool
def double(x: int) -> int:
    """Double x."""
    RAN.append(x)
    return 2 * x


@tool(needs_approval=True)
def delete_row(x: int) -> str:
    """Delete row x (gated)."""
    RAN.append(-x)
    return "deleted"


def _last_text(messages: list[dict]) -> str:
    content = messages[-1]["content"]
    return content if isinstance(content, str) else " ".join(c.get("text", "") for c in content)


def doubling(messages: list[dict], info: Any) -> Any:
    """Calls `double` with the number ending the user's text, then answers with the result."""
    if messages[-1]["role"] == "tool":
        return [f"double is {messages[-1]['content']}", S.usage(10, 3)]
    n = int(_last_text(messages).split()[-1])
    return [S.tool_call("double", {"x": n}), S.usage(10, 2)]


def agent_on(fn: Any, tools: list | None = None, name: str = "b", **attrs: Any) -> Think:
    fm = FunctionModel(fn)
    cls = type("Batcher", (Think,), {"include_workspace_tools": False, "get_model": lambda self: fm.model,
                                     "get_tools": lambda self: tools if tools is not None else [double], **attrs})
    agent = cls(name)
    agent.fm = fm  # the model, for its calls and requests
    return agent


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def test_each_row_is_a_real_turn_stored_as_its_own_conversation_and_the_table_is_on_df_index() -> None:
    responses: list[str] = []
    agent = agent_on(doubling, on_chat_response=lambda self, r: responses.append(r.status))
    df = pd.DataFrame({"n": [3, 5, 7]}, index=["a", "b", "c"])
    results = await agent.map(df, "Double {n}", concurrency=2, run_id="r1", progress=False)

    assert list(results.index) == ["a", "b", "c"]
    assert list(results.columns) == ["reply", "status", "error", "tool_calls", "input_tokens", "output_tokens",
                                     "cost_usd", "duration_s", "conversation_id"]
    assert results["reply"].tolist() == ["double is 6", "double is 10", "double is 14"]
    assert results["status"].tolist() == ["completed"] * 3
    assert results["error"].tolist() == [None] * 3
    assert results["tool_calls"].tolist() == [["double"]] * 3
    assert results["input_tokens"].tolist() == [20] * 3 and results["output_tokens"].tolist() == [5] * 3
    assert results["cost_usd"].isna().all()  # the scripted model has no price: unknown, never 0
    assert sorted(RAN) == [3, 5, 7] and responses == ["completed"] * 3  # tools ran, hooks fired, once per row
    assert results.attrs["run_id"] == "r1"
    # each row's conversation is stored: its own session, the user's text, the tool call, the reply
    db = runtime_of(agent).store.db
    for label, n in (("a", 3), ("b", 5), ("c", 7)):
        messages = open_conversation(db, results.loc[label, "conversation_id"])
        assert [m["role"] for m in messages] == ["user", "assistant"]
        assert messages[0]["parts"][0]["text"] == f"Double {n}"
        assert messages[0]["metadata"]["turnMetadata"] == {"batch": {"run_id": "r1", "row": f'"{label}"'}}
        tool_part = next(p for p in messages[1]["parts"] if p["type"] == "tool-double")
        assert tool_part["state"] == "output-available" and tool_part["output"] == 2 * n
    assert len({*results["conversation_id"]}) == 3
    lane = conversation_agent(agent, results.loc["b", "conversation_id"])  # opens the row: a panel shows this
    assert [m["role"] for m in lane.messages] == ["user", "assistant"]
    assert lane.messages[0]["parts"][0]["text"] == "Double 5"
    assert agent.messages == []  # the agent's own conversation is untouched


async def test_prompt_as_column_function_and_bad_prompts_say_the_fix() -> None:
    agent = agent_on(doubling)
    df = pd.DataFrame({"q": ["Double 1", "Double 2"], "n": [1, 2]})
    by_column = await agent.map(df, "q", run_id="col", progress=False)
    assert by_column["reply"].tolist() == ["double is 2", "double is 4"]
    by_function = await agent.map(df, lambda row: f"Double {row['n'] * 10}", run_id="fn", progress=False)
    assert by_function["reply"].tolist() == ["double is 20", "double is 40"]
    for prompt, said in (("Label {text}", "names text, which is not a column"), ("Classify", "neither a column"),
                         (42, "pass a column name")):
        with pytest.raises(UserError, match=said):
            await agent.map(df, prompt, progress=False)
    with pytest.raises(UserError, match="repeated labels"):
        await agent.map(pd.DataFrame({"n": [1, 2]}, index=[0, 0]), "Double {n}", progress=False)
    with pytest.raises(UserError, match="concurrency"):
        await agent.map(df, "q", concurrency=0, progress=False)
    assert len(agent.runs()) == 2  # the refused calls recorded nothing


async def test_context_columns_reach_the_model_as_data_context() -> None:
    seen: list[str] = []

    def reading(messages: list[dict], info: Any) -> Any:
        seen.append(_last_text(messages))
        return "ok"

    agent = agent_on(reading, tools=[])
    df = pd.DataFrame({"ticket": ["printer on fire", "lost password"], "id": [1, 2]})
    await agent.map(df, "Label ticket {id}", context=["ticket"], concurrency=1, progress=False)
    assert len(seen) == 2
    assert "Label ticket 1" in seen[0] and "printer on fire" in seen[0] and "lost password" not in seen[0]
    assert "Label ticket 2" in seen[1] and "lost password" in seen[1]


class Label(BaseModel):
    label: str
    score: float


async def test_output_type_columns_are_validated_and_a_row_that_does_not_validate_is_an_error_row() -> None:
    def labelling(messages: list[dict], info: Any) -> Any:
        assert "think_final_answer" in info.tool_names
        text = _last_text([m for m in messages if m["role"] == "user"])
        if "bad" in text:  # every attempt: its steps are spent without a valid answer
            return S.tool_call("think_final_answer", {"label": "x", "score": "not a number"})
        return S.tool_call("think_final_answer", {"label": text.split()[-1], "score": 0.5})

    agent = agent_on(labelling, tools=[], max_steps=2)
    df = pd.DataFrame({"t": ["good", "bad", "fine"]})
    results = await agent.map(df, "Label {t}", output_type=Label, concurrency=3, progress=False)
    assert list(results.columns[:3]) == ["reply", "label", "score"]
    assert results["status"].tolist() == ["completed", "error", "completed"]
    assert results["label"].tolist() == ["good", None, "fine"]
    assert results["score"].tolist()[0] == 0.5 and results["score"].tolist()[2] == 0.5
    assert "score" in results.loc[1, "error"]  # the validation problem is the row's error
    # the reply holds the answer too (the model answered through the final-answer tool, with no text)
    assert results["reply"].tolist()[0] == '{"label": "good", "score": 0.5}'
    assert results["reply"].tolist()[2] == '{"label": "fine", "score": 0.5}'

    class Clash(BaseModel):
        status: str

    with pytest.raises(UserError, match="field 'status' is a column of the results table"):
        await agent.map(df, "Label {t}", output_type=Clash, progress=False)


def gated(messages: list[dict], info: Any) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        return f"after: {last['content']}"
    return S.tool_call("delete_row", {"x": int(_last_text(messages).split()[-1])})


async def test_approvals_deny_refuses_every_gated_call_and_the_model_is_told() -> None:
    agent = agent_on(gated, tools=[delete_row])
    results = await agent.map(pd.DataFrame({"n": [1, 2, 3]}), "Delete {n}", approvals="deny", progress=False)
    assert RAN == []  # never run silently
    assert results["status"].tolist() == ["completed"] * 3
    assert all(DENIED_TEXT in r for r in results["reply"])
    for cid in results["conversation_id"]:
        parts = [p for m in open_conversation(runtime_of(agent).store.db, cid) for p in m["parts"]]
        assert [p["state"] for p in parts if p["type"] == "tool-delete_row"] == ["output-denied"]


async def test_approvals_ask_waits_for_the_user_while_the_other_rows_go_on() -> None:
    import asyncio

    agent = agent_on(lambda m, i: gated(m, i) if "Delete" in _last_text(m) or m[-1]["role"] == "tool" else "plain",
                     tools=[delete_row])
    df = pd.DataFrame({"t": ["Delete 4", "Hello 1", "Hello 2"]})
    run = asyncio.ensure_future(agent.map(df, "t", approvals="ask", concurrency=2, run_id="ask", progress=False))
    lanes = [agent.sub_agent(type(agent), f"map-ask-{i}") for i in range(2)]

    def waiting() -> list[dict]:
        return [a for lane in lanes for a in lane.pending_approvals()]

    from agents import eventually

    await eventually(lambda: waiting() and agent.runs()["completed"].tolist() == [2], what="the other rows settle")
    assert RAN == [] and not run.done()  # the gated call waits; the run waits for it
    lane = next(lane for lane in lanes if lane.pending_approvals())
    lane.approve(waiting()[0]["tool_call_id"])
    results = await run
    assert RAN == [-4]
    assert results["status"].tolist() == ["completed"] * 3
    assert results["reply"].tolist()[0] == "after: deleted" and results["tool_calls"].tolist()[0] == ["delete_row"]


async def test_approvals_ask_with_output_type_reads_the_answer_the_approved_continuation_gives() -> None:
    import asyncio

    from agents import eventually

    def gated_label(messages: list[dict], info: Any) -> Any:
        if messages[-1]["role"] == "tool":  # after the approved call: the answer, through the final-answer tool
            assert "think_final_answer" in info.tool_names  # the continuation is a structured turn too
            return S.tool_call("think_final_answer", {"label": messages[-1]["content"], "score": 1.0})
        return S.tool_call("delete_row", {"x": 9})

    agent = agent_on(gated_label, tools=[delete_row])
    run = asyncio.ensure_future(agent.map(pd.DataFrame({"t": ["Delete 9"]}), "t", output_type=Label, approvals="ask",
                                          concurrency=1, run_id="ask-typed", progress=False))
    lane = agent.sub_agent(type(agent), "map-ask-typed-0")
    await eventually(lambda: lane.pending_approvals(), what="the row waits for its approval")
    lane.approve(lane.pending_approvals()[0]["tool_call_id"])
    results = await run
    assert RAN == [-9]
    assert results[["status", "label", "score", "error"]].to_dict("records") == [
        {"status": "completed", "label": "deleted", "score": 1.0, "error": None}]
    assert results["reply"].tolist() == ['{"label": "deleted", "score": 1.0}']


async def test_the_same_run_id_skips_settled_rows_and_another_prompt_under_it_is_refused() -> None:
    agent = agent_on(doubling)
    df = pd.DataFrame({"n": [1, 2, 3, 4]})
    first = await agent.map(df.iloc[:2], "Double {n}", run_id="r", progress=False)
    calls = agent.fm.calls
    assert calls == 4
    both = await agent.map(df, "Double {n}", run_id="r", progress=False)  # two more rows: only they run
    assert agent.fm.calls == calls + 4 and sorted(RAN) == [1, 2, 3, 4]
    assert both["reply"].tolist() == ["double is 2", "double is 4", "double is 6", "double is 8"]
    assert both.iloc[:2]["conversation_id"].tolist() == first["conversation_id"].tolist()
    again = await agent.map(df, "Double {n}", run_id="r", progress=False)
    assert agent.fm.calls == calls + 4  # nothing ran again
    pd.testing.assert_frame_equal(again, both)
    with pytest.raises(UserError, match="other prompts"):
        await agent.map(df, "Triple {n}", run_id="r", progress=False)
    line = agent.runs().set_index("run_id").loc["r"]
    assert (line["status"], line["rows"], line["completed"], line["pending"]) == ("completed", 4, 4, 0)


async def test_max_tokens_stops_taking_rows_and_the_rows_not_run_say_why() -> None:
    agent = agent_on(doubling)
    df = pd.DataFrame({"n": range(6)})
    results = await agent.map(df, "Double {n}", concurrency=1, max_tokens=50, run_id="t", progress=False)
    # 25 tokens a row: two rows reach 50, the third is not started
    assert results["status"].tolist() == ["completed"] * 2 + ["not_run"] * 4
    assert results["error"].tolist()[2:] == ["max_tokens reached: 50 tokens used of 50"] * 4
    assert sorted(RAN) == [0, 1]
    assert agent.runs()["status"].tolist() == ["stopped"]
    resumed = await agent.map(df, "Double {n}", concurrency=1, run_id="t", progress=False)  # no bound: the rest
    assert resumed["status"].tolist() == ["completed"] * 6 and sorted(RAN) == [0, 1, 2, 3, 4, 5]


async def test_max_cost_with_an_unknown_cost_stops_and_says_it_cannot_be_kept() -> None:
    agent = agent_on(doubling)
    results = await agent.map(pd.DataFrame({"n": range(4)}), "Double {n}", concurrency=1, max_cost=0.01,
                              progress=False)
    assert results["status"].tolist() == ["completed"] + ["not_run"] * 3
    assert "cannot be kept" in results["error"].tolist()[1]


@pytest.fixture
async def priced(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeProvider]:
    """An OpenAI-format server answering as `gpt-4o-mini` (a model with a price in litellm's table)."""
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")
    async with FakeProvider("openai", model="gpt-4o-mini") as fake:
        yield fake


@pytest.mark.allow_stall("litellm's first hosted call in a process sets up its OpenAI client on the loop "
                        "(litellm_client.stream), before any batch code runs")
async def test_max_cost_stops_a_run_on_a_priced_model(priced: FakeProvider) -> None:
    priced.replies = [Reply(text=f"reply {n}", usage=(100_000, 10_000)) for n in range(5)]
    config = priced.model_config()
    cls = type("Priced", (Think,), {"include_workspace_tools": False, "get_model": lambda self: config})
    agent = cls("p")
    results = await agent.map(pd.DataFrame({"q": ["a", "b", "c", "d", "e"]}), "q", concurrency=1, max_cost=0.05,
                              progress=False)
    # gpt-4o-mini: $0.15 / M input, $0.60 / M output: $0.021 a row; the third row passes $0.05
    assert results["status"].tolist() == ["completed"] * 3 + ["not_run"] * 2
    assert results["cost_usd"].tolist()[:3] == [pytest.approx(0.021)] * 3
    assert results["error"].tolist()[3].startswith("max_cost reached: $0.063 spent of $0.05")
    assert len(priced.requests) == 3
    assert agent.runs()["cost_usd"].tolist() == [pytest.approx(0.063)]


async def test_cancel_run_aborts_pending_rows_and_compare_runs_and_evaluate() -> None:
    agent = agent_on(doubling)
    df = pd.DataFrame({"n": [1, 2, 3]})

    def even(row: dict, result: dict) -> bool:
        return int(result["reply"].split()[-1]) % 4 == 0

    a = await agent.map(df, "Double {n}", run_id="a", evaluate=[even], progress=False)
    assert a["even"].tolist() == [False, True, False]
    assert a.attrs["summary"] == {"even": {"mean": pytest.approx(1 / 3), "count": 3}}
    await agent.map(df, "Please double {n}", run_id="b", progress=False)
    side = agent.compare_runs("a", "b")
    assert list(side.index) == [0, 1, 2]
    assert list(side.columns) == ["reply_a", "reply_b", "status_a", "status_b", "cost_usd_a", "cost_usd_b", "same"]
    assert side["reply_a"].tolist() == side["reply_b"].tolist() == ["double is 2", "double is 4", "double is 6"]
    assert side["same"].tolist() == [True] * 3
    assert agent.cancel_run("a") == {"aborted": 0, "stopped": 0}
    with pytest.raises(UserError, match="No run 'zz'"):
        agent.cancel_run("zz")


def test_run_map_is_the_blocking_form_for_scripts() -> None:
    agent = agent_on(doubling)
    results = agent.run_map(pd.DataFrame({"n": [5]}), "Double {n}", progress=False)
    assert results["reply"].tolist() == ["double is 10"]


def test_budget_and_pacer_rules() -> None:
    budget = Budget(max_cost=1.0, max_tokens=None)
    budget.add({"status": "completed", "cost_usd": 0.6, "input_tokens": 1, "output_tokens": 1})
    assert budget.reason() is None
    budget.add({"status": "completed", "cost_usd": 0.5, "input_tokens": 1, "output_tokens": 1})
    assert budget.reason() == "max_cost reached: $1.1 spent of $1"
    now = [0.0]
    pacer = Pacer(rpm=2, tpm=100, clock=lambda: now[0])
    pacer.starts.extend([0.0, 1.0])
    assert pacer.delay() == 60.0  # two rows started in this minute: the next waits for the first to age out
    now[0] = 30.0
    assert pacer.delay() == 30.0
    now[0] = 60.5
    assert pacer.delay() == 0.0  # the first start aged out
    now[0] = 61.0
    pacer.spent(150)
    assert pacer.delay() == 60.0  # the minute's tokens are over tpm


async def test_stopping_a_run_keeps_what_settled_aborts_what_ran_and_the_same_call_finishes_the_rest(
        capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from agents import eventually

    gate, reached = asyncio.Event(), asyncio.Event()

    async def slow(messages: list[dict], info: Any) -> Any:
        if _last_text(messages).endswith(" 3"):  # row 3 hangs until the run is stopped
            reached.set()
            await gate.wait()
        return doubling(messages, info)

    agent = agent_on(slow)
    df = pd.DataFrame({"n": range(8)})
    run = asyncio.ensure_future(agent.map(df, "Double {n}", concurrency=1, run_id="s"))
    # row 3's model call has begun (rows 0-2 settled before it: concurrency=1); waiting on the
    # completed count alone raced: Stop could land before row 3 started, and it was then "not run"
    await eventually(lambda: reached.is_set() and agent.runs()["completed"].tolist() == [3],
                     what="rows 0-2 settle, row 3 runs")
    run.cancel()  # Jupyter's Stop (an interrupted cell) cancels the awaiting task
    with pytest.raises(asyncio.CancelledError):
        await run
    said = capsys.readouterr()
    assert said.out == ("map 's' stopped: 4 of 8 rows settled (3 completed, 0 error, 1 aborted: running at Stop), "
                        "4 not run; map(..., run_id='s') again runs those.\n")
    assert "3/8" in said.err and "errors=0, cost=?" in said.err  # the text bar (a terminal's), with its postfix
    line = agent.runs().iloc[0]
    assert (line["status"], line["completed"], line["aborted"], line["pending"], line["running"]) == (
        "stopped", 3, 1, 4, 0)
    assert sorted(RAN) == [0, 1, 2]
    gate.set()
    results = await agent.map(df, "Double {n}", concurrency=1, run_id="s", progress=False)
    assert results["status"].tolist() == ["completed"] * 3 + ["aborted"] + ["completed"] * 4
    assert sorted(RAN) == [0, 1, 2, 4, 5, 6, 7]  # the aborted row is settled: never run again


async def test_a_row_stopped_while_its_tool_runs_is_aborted_as_stopped_not_as_a_refused_client_call() -> None:
    import asyncio

    from agents import eventually

    started, gate = asyncio.Event(), asyncio.Event()

    @tool
    async def slow_work(x: int) -> int:
        """Work slowly on x."""
        started.set()
        await gate.wait()
        return x

    def calling(messages: list[dict], info: Any) -> Any:
        if messages[-1]["role"] == "tool":
            return ["done", S.usage(10, 1)]
        return [S.tool_call("slow_work", {"x": 1}), S.usage(10, 2)]

    agent = agent_on(calling, tools=[slow_work])
    run = asyncio.ensure_future(agent.map(pd.DataFrame({"n": [1]}), "Work {n}", run_id="t", progress=False))
    await eventually(started.is_set, what="the row's tool runs")
    run.cancel()  # Stop while the server tool's call is in flight
    with pytest.raises(asyncio.CancelledError):
        await run
    gate.set()
    results = await agent.map(pd.DataFrame({"n": [1]}), "Work {n}", run_id="t", progress=False)
    assert (results["status"].iloc[0], results["error"].iloc[0]) == ("aborted", "stopped")


async def test_cancel_run_stops_a_running_call_and_aborts_its_pending_rows() -> None:
    import asyncio

    from agents import eventually

    gate = asyncio.Event()

    async def slow(messages: list[dict], info: Any) -> Any:
        if _last_text(messages).endswith(" 1"):
            await gate.wait()
        return doubling(messages, info)

    agent = agent_on(slow)
    run = asyncio.ensure_future(agent.map(pd.DataFrame({"n": range(5)}), "Double {n}", concurrency=1, run_id="c",
                                          progress=False))
    await eventually(lambda: agent.runs()["completed"].tolist() == [1], what="row 0 settles, row 1 runs")
    assert agent.cancel_run("c") == {"aborted": 3, "stopped": 1}
    with pytest.raises(asyncio.CancelledError):
        await run
    line = agent.runs().iloc[0]
    assert (line["status"], line["completed"], line["aborted"], line["pending"]) == ("cancelled", 1, 4, 0)
    again = await agent.map(pd.DataFrame({"n": range(5)}), "Double {n}", run_id="c", progress=False)
    assert again["status"].tolist() == ["completed"] + ["aborted"] * 4 and sorted(RAN) == [0]
    assert again["error"].tolist()[2] == "cancelled (cancel_run)"


async def test_a_template_or_function_that_does_not_fit_a_cell_is_one_line_naming_the_row_and_runs_nothing() -> None:
    agent = agent_on(doubling)
    hostile = pd.DataFrame({"t": ["abc", float("nan")], "n": [1, 2]}, index=["ok", "bad"])
    for prompt, context, said in (
            ("{t[0]}", None, (r"row 'bad', the prompt template does not fit its cells: TypeError: 'float' object is "
                              r"not subscriptable; change the prompt \(or clean the row\)\.$")),
            ("{t:.2f}", None, r"row 'ok', the prompt template does not fit its cells: ValueError: Unknown format code"),
            ("{t:{zz}}", None, r"row 'ok', the prompt template does not fit its cells: KeyError: 'zz'"),
            (lambda row: f"Double {1 // (row['n'] - 2)}", None,
             r"row 'bad', the prompt function raised ZeroDivisionError: integer division or modulo by zero"),
            ("Double {n}", lambda row: {"x": row["missing"]}, r"row 'ok', the context function raised KeyError"),
            (lambda row: (_ for _ in ()).throw(ValueError("two\nlines")), None, r"ValueError: two lines; change")):
        with pytest.raises(UserError, match=said) as raised:
            await agent.map(hostile, prompt, context=context, progress=False)
        assert "\n" not in str(raised.value)
    assert len(agent.runs()) == 0 and RAN == []  # refused before any row was stored or run
    seen: list[str] = []
    echo = agent_on(lambda messages, info: seen.append(_last_text(messages)) or "ok", tools=[], name="echo")
    braces = pd.DataFrame({"t": ["{index} {t} {0} {n.__class__}"]})
    results = await echo.map(braces, "Say {t}", progress=False)  # a cell's braces are text, never a template
    assert results["status"].tolist() == ["completed"] and seen == ["Say {index} {t} {0} {n.__class__}"]


@pytest.mark.parametrize("stored", [
    "not JSON", "[1]", "{}", '{"reply": 5, "status": "completed", "tool_calls": []}',
    '{"reply": "r", "status": "completed", "tool_calls": [], "cost_usd": "free"}',
    '{"reply": "r", "status": "completed", "tool_calls": "double", "output": [1]}'])
async def test_a_tampered_result_in_the_ledger_is_an_error_row_and_the_rest_of_the_run_reads_as_usual(
        stored: str) -> None:
    agent = agent_on(doubling)
    df = pd.DataFrame({"n": [3, 5]}, index=["a", "b"])
    await agent.map(df, "Double {n}", run_id="r1", progress=False)
    runtime_of(agent).store.db.execute("UPDATE think_batch_rows SET result = ? WHERE run_id = 'r1' AND row_key = ?",
                                       (stored, '"a"'))
    again = await agent.map(df, "Double {n}", run_id="r1", progress=False)  # resume: nothing runs again
    assert again["status"].tolist() == ["error", "completed"] and again["reply"].tolist() == [None, "double is 10"]
    assert again["error"].tolist()[0].startswith("its stored result is damaged (")
    assert again["error"].tolist()[0].endswith("); run the row again under a new run_id")
    assert RAN == [3, 5]
    assert agent.runs()[["run_id", "rows", "completed"]].values.tolist() == [["r1", 2, 2]]
    assert agent.compare_runs("r1", "r1")["same"].tolist() == [True, True]


async def test_an_evaluator_that_raises_is_one_line_naming_it_and_the_row_and_the_run_is_kept() -> None:
    agent = agent_on(doubling)
    df = pd.DataFrame({"n": [1, 2]}, index=["x", "y"])

    def strict(row: dict, result: dict) -> float:
        if row["n"] == 2:
            raise ValueError("no score\nfor two")
        return 1.0

    with pytest.raises(UserError, match=r"^map\(evaluate=\.\.\.\): strict raised ValueError: no score for two on row "
                                        r"'y'; the run's rows are kept: fix it and call map again with run_id='ev' "
                                        r"\(nothing runs again\)\.$"):
        await agent.map(df, "Double {n}", run_id="ev", evaluate=[strict], progress=False)
    again = await agent.map(df, "Double {n}", run_id="ev", progress=False)
    assert again["reply"].tolist() == ["double is 2", "double is 4"] and RAN == [1, 2]


async def test_a_model_that_asks_for_a_gated_tool_after_every_refusal_cannot_keep_a_row_running() -> None:
    from think_nb.batch.local import MAX_REFUSALS, STUBBORN_TEXT

    asked: list[int] = []

    def stubborn(messages: list[dict], info: Any) -> Any:  # denied? ask again, forever
        asked.append(1)
        return [S.tool_call("delete_row", {"x": len(asked)}), S.usage(10, 2)]

    agent = agent_on(stubborn, tools=[delete_row])
    results = await agent.map(pd.DataFrame({"t": ["Delete 1"]}), "t", approvals="deny", run_id="st", progress=False)
    assert (results["status"].tolist(), results["error"].tolist()) == (["error"], [STUBBORN_TEXT])
    assert len(asked) == MAX_REFUSALS + 1 and RAN == []
    parts = [p for m in open_conversation(runtime_of(agent).store.db, results["conversation_id"][0])
             for p in m["parts"] if p["type"] == "tool-delete_row"]
    assert [p["state"] for p in parts] == ["output-denied"] * (MAX_REFUSALS + 1)  # nothing left waiting
    assert results["tool_calls"].tolist() == [["delete_row"] * (MAX_REFUSALS + 1)]


async def test_resuming_a_large_run_reads_its_settled_rows_off_the_event_loop() -> None:
    """Resuming a run of 40,000 settled rows parsed every stored result on the kernel's loop (for the
    budget: ~0.5 s of CPU); the stall guard (tests/loop_stalls.py) fails a test where that happens."""
    import asyncio
    import json

    from think_nb.batch import _store
    from think_nb.batch.outcome import not_run

    agent = agent_on(doubling)
    n = 40_000
    df = pd.DataFrame({"n": range(n)})
    store = _store(agent)
    store.accept("big", {}, [(str(i), i, {"role": "user", "text": f"Double {i}"}) for i in range(n)])
    done = {**not_run(""), "status": "completed", "error": None, "reply": "double is some number " * 8,
            "tool_calls": ["double"], "input_tokens": 12, "output_tokens": 5, "conversation_id": "c#s"}
    with store.db.write() as c:
        c.execute("UPDATE think_submissions SET status = 'completed' WHERE agent_key = ?", (store.ledger_key("big"),))
        c.execute("UPDATE think_batch_rows SET result = ? WHERE run_id = 'big'", (json.dumps(done),))
    results = await asyncio.ensure_future(agent.map(df, "Double {n}", run_id="big", max_tokens=10**9, progress=False))
    assert len(results) == n and set(results["status"]) == {"completed"} and RAN == []


@pytest.mark.parametrize("spec", ["not JSON", "[1]", ""])
async def test_a_run_whose_stored_spec_is_damaged_is_listed_as_damaged_and_the_others_as_usual(spec: str) -> None:
    agent = agent_on(doubling)
    df = pd.DataFrame({"n": [3, 5]})
    await agent.map(df, "Double {n}", run_id="r1", progress=False)
    await agent.map(df, "Twice {n}", run_id="r2", progress=False)
    runtime_of(agent).store.db.execute("UPDATE think_batch_runs SET spec = ? WHERE run_id = 'r1'", (spec,))
    table = agent.runs()
    assert table[["run_id", "status", "rows", "completed"]].values.tolist() == [["r1", "damaged", 2, 2],
                                                                                ["r2", "completed", 2, 2]]
    assert agent.compare_runs("r1", "r2")["reply_a"].tolist() == ["double is 6", "double is 10"]  # nothing lost
    again = await agent.map(df, "Double {n}", run_id="r1", progress=False)  # the same call repairs it
    assert again["reply"].tolist() == ["double is 6", "double is 10"] and RAN == [3, 5, 3, 5]
    assert agent.runs()["status"].tolist() == ["completed", "completed"]


def _bar_costs(err: str) -> list[str]:
    """The `cost=` value of each drawing of the text bar (tqdm redraws with a carriage return)."""
    import re

    return re.findall(r"cost=([^\],]+)\]", err)


async def test_the_bar_shows_an_unknown_cost_as_unknown_until_a_priced_row_settles(
        capsys: pytest.CaptureFixture[str]) -> None:
    agent = agent_on(doubling)  # a scripted model: no price
    await agent.map(pd.DataFrame({"n": range(3)}), "Double {n}", concurrency=1, run_id="u")
    costs = _bar_costs(capsys.readouterr().err)
    assert costs and set(costs) == {"?"}  # never $0.0000: unknown, before the first row as after it


@pytest.mark.allow_stall("litellm's first hosted call in a process sets up its OpenAI client on the loop "
                        "(litellm_client.stream), before any batch code runs")
async def test_the_bar_shows_cost_once_a_priced_row_settles(priced: FakeProvider,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    priced.replies = [Reply(text=f"reply {n}", usage=(100_000, 10_000)) for n in range(2)]
    config = priced.model_config()
    agent = type("Priced", (Think,), {"include_workspace_tools": False, "get_model": lambda self: config})("p")
    await agent.map(pd.DataFrame({"q": ["a", "b"]}), "q", concurrency=1, run_id="p")
    costs = _bar_costs(capsys.readouterr().err)
    assert costs[0] == "?" and costs[-1] == "$0.0420"  # gpt-4o-mini: $0.021 a row


async def test_a_second_map_under_a_running_run_id_is_refused_and_the_first_finishes_every_row() -> None:
    """Two `map` calls with one run id at once (the s42 stranger): the second was let in while the
    first was still reading its rows (the id was claimed after three awaits), the two interleaved on
    the same lanes, and rows stayed `running` for good. The first call claims the id before it
    awaits anything; the second is refused in one line, and the first settles every row once."""
    import asyncio

    agent = agent_on(doubling)
    df = pd.DataFrame({"n": range(12)})
    first = asyncio.ensure_future(agent.map(df, "Double {n}", concurrency=3, run_id="dup", progress=False))
    await asyncio.sleep(0)  # the first call has started (and claimed its id); no row has run yet
    with pytest.raises(UserError, match=r"Run 'dup' is running already; wait for it, or agent.cancel_run\('dup'\)"):
        await agent.map(df, "Double {n}", concurrency=3, run_id="dup", progress=False)
    results = await first
    assert results["status"].tolist() == ["completed"] * 12
    assert sorted(RAN) == list(range(12))  # each row's tool ran once
    line = agent.runs().iloc[0]
    assert (line["status"], line["completed"], line["running"], line["pending"]) == ("completed", 12, 0, 0)


@pytest.mark.parametrize("run_id", ["", "  "])
async def test_an_empty_run_id_is_refused_not_replaced(run_id: str) -> None:
    agent = agent_on(doubling)
    with pytest.raises(UserError, match="a run id is a non-empty string"):
        await agent.map(pd.DataFrame({"n": [1]}), "Double {n}", run_id=run_id, progress=False)
    assert agent.runs().empty and RAN == []


def test_the_bar_is_the_text_one_outside_a_kernel_even_when_ipykernel_was_imported() -> None:
    """tqdm.auto picks its notebook bar when `ipykernel.zmqshell` has been imported, kernel or not (a
    test process that ran a panel test first printed the widget's repr to stdout); the bar is
    chosen by the running shell instead (the widget bar in a real kernel: tests/e2e/test_batch_browser.py)."""
    import ipykernel.zmqshell  # noqa: F401
    from tqdm.std import tqdm as text_tqdm

    from think_nb.batch.progress import _tqdm_class

    assert _tqdm_class() is text_tqdm
