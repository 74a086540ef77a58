"""`agent.map(engine="ray")` on a local Ray cluster (`ray.init(num_cpus=2)`): the same results table
and stored conversations as the local engine (`think_nb.batch.ray_engine`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from think_nb import Think, UserError, tool
from think_nb.batch.local import open_conversation
from think_nb.binding import runtime_of
from think_nb.testing import FunctionModel
from think_nb.testing import ScriptedModel as S

ray = pytest.importorskip("ray", reason="the ray extra: pip install 'think-nb[ray]'")


@tool
def triple(x: int) -> int:
    """Triple x."""
    return 3 * x


def tripling(messages: list[dict], info: Any) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        return [f"triple is {last['content']}", S.usage(10, 3)]
    text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
    return [S.tool_call("triple", {"x": int(text.split()[-1])}), S.usage(10, 2)]


MODEL = FunctionModel(tripling)


class Tripler(Think):  # pickled by value below, as a class defined in a notebook cell is
    include_workspace_tools = False

    def get_model(self) -> str:
        return MODEL.model

    def get_tools(self) -> list:
        return [triple]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def table(results: pd.DataFrame) -> list[tuple]:
    """The rows as compared across engines (durations and ids differ)."""
    return [tuple(r) for r in results[["reply", "status", "error", "input_tokens", "output_tokens"]]
            .astype(object).itertuples(index=True)] + [tuple(results["tool_calls"].map(tuple))]


def transcripts(agent: Think, results: pd.DataFrame) -> list[list[tuple]]:
    db = runtime_of(agent).store.db
    return [[(m["role"], [(p["type"], p.get("text"), p.get("state"), p.get("input"), p.get("output"))
                          for p in m["parts"] if p["type"] != "step-start"])
             for m in open_conversation(db, cid)] for cid in results["conversation_id"]]


@pytest.mark.allow_stall("ray.init and Ray Data's planning run on the test's loop thread; think_nb's own work "
                         "is off the loop (iter_batches in a thread)")
async def test_ray_engine_gives_the_local_engine_table_and_stored_conversations(cluster: None) -> None:
    df = pd.DataFrame({"n": range(40)}, index=[f"r{i}" for i in range(40)])
    local_agent, ray_agent = Tripler("local"), Tripler("ray")
    local = await local_agent.map(df, "Triple {n}", run_id="x", concurrency=4, progress=False)
    remote = await ray_agent.map(df, "Triple {n}", run_id="x", concurrency=2, engine="ray", progress=False)
    assert remote["status"].tolist() == ["completed"] * 40
    assert table(remote) == table(local)
    assert transcripts(ray_agent, remote) == transcripts(local_agent, local)
    assert len(set(remote["conversation_id"])) == 40
    again = await ray_agent.map(df, "Triple {n}", run_id="x", engine="ray", progress=False)  # all settled
    assert again["conversation_id"].tolist() == remote["conversation_id"].tolist()


async def test_ray_engine_refuses_what_it_cannot_do() -> None:
    agent = Tripler("refused")
    df = pd.DataFrame({"n": [1]})
    with pytest.raises(UserError, match="no panel to ask"):
        await agent.map(df, "Triple {n}", engine="ray", approvals="ask", progress=False)
    with pytest.raises(UserError, match="does not take max_cost"):
        await agent.map(df, "Triple {n}", engine="ray", max_cost=1.0, progress=False)
    with pytest.raises(UserError, match="'local'"):
        await agent.map(df, "Triple {n}", engine="spark", progress=False)
