"""Unknown is not zero: token usage is stored as reported or unknown (litellm's estimate kept apart as
`estimated_tokens`), and cost only when reported (think_nb.models.stream / think_nb.models.usage,
runner metadata, views.usage)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from dirty_equals import IsPositiveInt, IsStr

from agents import add
from think_nb import ModelConfig, Think
from think_nb.models import usage as usage_model
from think_nb.models.litellm_client import usage_source
from think_nb.testing import ScriptedModel as S
from think_nb.turns import runner

UNKNOWN = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None, "source": None}


def _agent(script: S, db: Path, via_litellm: bool = False) -> Think:
    model = ModelConfig(script.model, via_litellm=True) if via_litellm else script.model
    cls = type("Meter", (Think,), {"get_model": lambda self: model, "get_tools": lambda self: [add]})
    return cls("m", db=db)


async def _turn(script: S, db: Path, via_litellm: bool = False) -> tuple[Think, dict]:
    agent = _agent(script, db, via_litellm)
    result = await agent.send("2 + 40?")
    assert result.status == "completed"
    return agent, agent.messages[-1]["metadata"]


async def test_reported_usage_is_stored_as_reported_and_an_unpriced_model_has_no_cost(tmp_path: Path) -> None:
    script = S([[S.text("42."), S.usage(20, 6)]])
    agent, meta = await _turn(script, tmp_path / "u.sqlite")
    assert meta == {"model": script.model, "requestId": IsStr(), "finishReason": "stop",
                    "usage": {"prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26, "source": "reported"}}
    df = agent.usage_df()
    row = df.drop(columns=["created_at", "cost_usd"]).to_dict("records")
    assert row == [{"message_id": agent.messages[-1]["id"], "request_id": meta["requestId"], "model": script.model,
                    "prompt_tokens": 20, "completion_tokens": 6, "total_tokens": 26, "usage_source": "reported",
                    "estimated_tokens": None}]
    assert math.isnan(df["cost_usd"].iloc[0])  # no price: NaN, not 0.0
    assert _agent(script, tmp_path / "u.sqlite").messages[-1]["metadata"] == meta  # persisted as such


async def test_no_reported_usage_from_an_in_process_model_is_unknown(tmp_path: Path) -> None:
    """Called directly (no litellm), nothing estimates the counts: unknown, never 0."""
    agent, meta = await _turn(S([[S.text("Forty-two.")]]), tmp_path / "d.sqlite")
    assert meta["usage"] == UNKNOWN
    assert agent.usage_df()["total_tokens"].isna().all()


async def test_no_reported_usage_is_unknown_and_litellms_estimate_is_kept_apart(tmp_path: Path) -> None:
    agent, meta = await _turn(S([[S.text("Forty-two.")]]), tmp_path / "e.sqlite", via_litellm=True)
    usage = meta["usage"]
    estimate = usage["estimated_tokens"]
    assert usage == {**UNKNOWN, "estimated_tokens": {
        "prompt_tokens": IsPositiveInt(), "completion_tokens": IsPositiveInt(),
        "total_tokens": estimate["prompt_tokens"] + estimate["completion_tokens"]}}
    assert "cost_usd" not in meta
    df = agent.usage_df()
    assert df.drop(columns=["message_id", "request_id", "model", "created_at", "cost_usd"]).to_dict("records") == [
        {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None, "usage_source": None,
         "estimated_tokens": estimate["total_tokens"]}]
    assert df["cost_usd"].isna().all()


async def test_a_step_that_streams_nothing_has_unknown_usage_not_zero(tmp_path: Path) -> None:
    agent, meta = await _turn(S([[S.silent()]]), tmp_path / "n.sqlite")
    assert meta["usage"] == UNKNOWN
    assert "cost_usd" not in meta
    df = agent.usage_df()
    assert len(df) == 1
    assert df[["prompt_tokens", "completion_tokens", "total_tokens", "estimated_tokens", "cost_usd"]].isna().all().all()
    assert df["usage_source"].tolist() == [None]
    assert str(df["total_tokens"].dtype) == "Int64"
    # the panel's transcript (and a reopened agent) holds the same: counts null, never 0
    assert _agent(S([]), tmp_path / "n.sqlite").messages[-1]["metadata"]["usage"] == UNKNOWN


async def test_a_turn_with_one_unreported_step_has_unknown_counts_and_an_estimate_of_all_steps(tmp_path: Path) -> None:
    _, meta = await _turn(S([[S.tool_call("add", {"a": 2, "b": 40}), S.usage(10, 5)], [S.text("42.")]]),
                          tmp_path / "a.sqlite", via_litellm=True)  # litellm estimates the second step
    usage = meta["usage"]
    assert {k: usage[k] for k in UNKNOWN} == UNKNOWN and "cost_usd" not in meta
    estimate = usage["estimated_tokens"]  # the reported step's counts + litellm's count of the other
    assert estimate["prompt_tokens"] > 10 and estimate["completion_tokens"] > 5
    assert estimate["total_tokens"] == estimate["prompt_tokens"] + estimate["completion_tokens"]
    _, meta = await _turn(S([[S.tool_call("add", {"a": 2, "b": 40}), S.usage(10, 5)], [S.silent()]]),
                          tmp_path / "b.sqlite", via_litellm=True)
    assert meta["usage"] == UNKNOWN  # a step nobody could count: no estimate either
    _, meta = await _turn(S([[S.tool_call("add", {"a": 2, "b": 40}), S.usage(10, 5)], [S.text("42.")]]),
                          tmp_path / "c.sqlite")  # in-process: the second step's counts are unknown
    assert meta["usage"] == UNKNOWN


async def test_a_priced_model_stores_cost_only_for_known_usage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = SimpleNamespace(cost_per_token=lambda model, prompt_tokens, completion_tokens: (
        prompt_tokens * 1e-6, completion_tokens * 2e-6))
    monkeypatch.setattr(runner, "IN_PROCESS_PROVIDERS", ("think-local",))  # price the scripted model
    monkeypatch.setattr(runner, "get_litellm", lambda: prices)
    agent, meta = await _turn(S([[S.text("42."), S.usage(1000, 500)]]), tmp_path / "p.sqlite")
    assert meta["cost_usd"] == pytest.approx(0.002)
    assert agent.usage_df()["cost_usd"].tolist() == [pytest.approx(0.002)]
    _, meta = await _turn(S([[S.silent()]]), tmp_path / "q.sqlite")
    assert "cost_usd" not in meta  # unknown usage: unknown cost, not $0


def test_cost_from_litellms_price_table() -> None:
    known = {"prompt_tokens": 1000, "completion_tokens": 1000, "total_tokens": 2000, "source": "reported"}
    cost = runner._cost_usd("openai/gpt-4o-mini", known)
    assert cost is not None and cost > 0
    assert runner._cost_usd("openai/gpt-4o-mini", UNKNOWN) is None
    assert runner._cost_usd("openai/no-such-model-here", known) is None
    assert runner._cost_usd("think-local/smollm2-135m-instruct", known) is None


@pytest.mark.parametrize(("steps", "expected"), [
    ([({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}, "reported")],
     {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7, "source": "reported"}),
    ([({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}, "reported"),
      ({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, "reported")],
     {"prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9, "source": "reported"}),
    ([({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}, "reported"),
      ({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, "estimated")],
     {**UNKNOWN, "estimated_tokens": {"prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9}}),
    ([({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, "estimated"),
      ({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}, "reported")],
     {**UNKNOWN, "estimated_tokens": {"prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9}}),
    ([({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, "estimated"), (None, None)], UNKNOWN),
    ([({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}, "reported"), (None, None)], UNKNOWN),
    ([(None, None), ({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}, "reported")], UNKNOWN),
    ([], UNKNOWN),
])
def test_add_step(steps: list, expected: dict) -> None:
    total: dict = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}  # what a Turn starts with
    for usage, source in steps:
        total = usage_model.add_step(total, usage, source)
    assert usage_model.turn_usage(total) == expected


def test_usage_source_reads_litellms_kept_provider_chunks() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    provider_sent = SimpleNamespace(chunks=[SimpleNamespace(usage=None), SimpleNamespace(usage=usage)])
    nothing_sent = SimpleNamespace(chunks=[SimpleNamespace(usage=None), {"usage": None}])
    assert usage_source(usage, provider_sent) == "reported"
    assert usage_source(usage, nothing_sent) == "estimated"
    assert usage_source(usage, object()) == "reported"  # not litellm's wrapper: nothing estimated it
    assert usage_source(None, provider_sent) is None


def test_legacy_usage_records_read_as_stored_or_as_unknown_with_an_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    from think_nb.frontends import views

    counts = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    legacy = SimpleNamespace(messages=[
        {"id": "a", "role": "assistant", "parts": [], "metadata": {"model": "m", "usage": counts}},
        {"id": "b", "role": "assistant", "parts": [], "metadata": {  # litellm's estimate, stored as counts
            "model": "m", "usage": {**counts, "source": "estimated"}, "cost_usd": 0.5}}])
    monkeypatch.setattr(views, "_stored_rows", lambda agent: {"a": (None, 0.0), "b": (None, 0.0)})
    df = views.usage(legacy)  # type: ignore[arg-type]
    assert df["usage_source"].tolist() == [None, None]
    assert df["total_tokens"].fillna(-1).tolist() == [3, -1]
    assert df["estimated_tokens"].fillna(-1).tolist() == [-1, 3]
    assert df["cost_usd"].isna().all()
    assert usage_model.normalized({**counts, "source": "estimated"}) == {**UNKNOWN, "estimated_tokens": counts}
    assert usage_model.normalized({**counts, "source": "reported"}) == {**counts, "source": "reported"}


async def test_unknown_step_usage_reaches_hooks_as_none_and_unfinished_turns_add_no_usage_row(tmp_path: Path) -> None:
    # on_step_finish sees each step's own usage, shaped as metadata.usage: reported counts, then
    # unknown (None counts, source None) for a step that streamed nothing (never a dict of zeros)
    script = S([[S.tool_call("add", {"a": 2, "b": 40}), S.usage(10, 5)], [S.silent()]])
    steps: list = []
    cls = type("Meter", (Think,), {"get_model": lambda self: script.model, "get_tools": lambda self: [add],
                                   "on_step_finish": lambda self, ctx: steps.append(ctx.usage)})
    agent = cls("m", db=tmp_path / "s.sqlite")
    assert (await agent.send("2 + 40?")).status == "completed"
    assert steps == [{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "source": "reported"}, UNKNOWN]
    assert agent.usage_df()["usage_source"].tolist() == [None]
    # a turn that fails before it finishes has no usage to report: no row at all, not a row of 0s
    script.steps.append([S.text("partial"), S.error("provider down")])
    assert (await agent.send("again")).status == "error"
    assert "usage" not in (agent.messages[-1].get("metadata") or {})
    assert len(agent.usage_df()) == 1


async def test_usage_keys_are_the_same_in_the_hook_the_message_usage_df_and_the_turn_log(tmp_path: Path) -> None:
    """Issue 30 item 8: one turn's usage under one set of names wherever it appears:
    `on_step_finish`'s `ctx.usage` and `metadata.usage` (`prompt_tokens`, `completion_tokens`,
    `total_tokens`, `source`), `usage_df()` and `turns()` (the same counts; `usage_source`)."""
    script = S([[S.tool_call("add", {"a": 1, "b": 2}), S.usage(5, 5)], [S.text("3"), S.usage(6, 2)],
                [S.text("again")]])
    steps: list[dict] = []
    cls = type("Meter", (Think,), {"get_model": lambda self: script.model, "get_tools": lambda self: [add],
                                   "on_step_finish": lambda self, ctx: steps.append(ctx.usage)})
    agent = cls("m", db=tmp_path / "k.sqlite")
    await agent.send("1 + 2?")
    await agent.send("and now?")  # no usage reported: unknown everywhere
    counts = ("prompt_tokens", "completion_tokens", "total_tokens")
    metadata = [m["metadata"]["usage"] for m in agent.messages if m["role"] == "assistant"]
    assert set(steps[0]) == set(metadata[0]) == {*counts, "source"}
    frame = agent.usage_df().to_dict("records")
    turns = agent.turns()
    for usage, row, turn in zip(metadata, frame, turns, strict=True):
        assert {k: row[k] for k in counts} == {k: turn[k] for k in counts} == {k: usage[k] for k in counts}
        assert row["usage_source"] == turn["usage_source"] == usage["source"]
    assert [t["total_tokens"] for t in turns] == [18, None]
    assert [t["usage_source"] for t in turns] == ["reported", None]


async def test_a_turn_whose_message_is_gone_has_no_usage_in_the_turn_log(tmp_path: Path) -> None:
    agent = _agent(S([[S.text("a"), S.usage(1, 1)]]), tmp_path / "s.sqlite")
    await agent.send("hi")
    assert [(t["total_tokens"], t["usage_source"]) for t in agent.turns()] == [(2, "reported")]
    agent.clear_messages()  # the message is gone; its turn's row stays, its usage unknown
    assert [(t["status"], t["total_tokens"], t["usage_source"]) for t in agent.turns()] == [("completed", None, None)]
