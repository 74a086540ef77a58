"""`agent.map(engine="ray")` on a local Ray cluster (`ray.init(num_cpus=2)`), `think_nb.batch.ray_engine`:
the same results table and stored conversations as the local engine; an actor SIGKILLed while a row
is in flight loses nothing, each row is stored once and only that row runs again; a row that kills
its worker every time is the only error row of its batch; the engine uses the cluster it is given
and leaves it running.

Ray is the `ray` extra, which CI installs (`.ci/setup`): without it this module fails to import
(no skip)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import ray
from pydantic import BaseModel

from think_nb import Think, UserError, tool
from think_nb.batch.local import open_conversation
from think_nb.batch.ray_engine import BATCH_SIZE, MAX_ATTEMPTS, reap_with_this_process
from think_nb.binding import runtime_of
from think_nb.testing import FunctionModel, number_tool_reply, start_local_ray
from think_nb.testing import ScriptedModel as S

# Ray Data runs its executor in threads of this process, and its pandas extension dtype calls
# ast.literal_eval from them; CPython 3.11's AST constructor keeps one recursion counter per
# interpreter (python/cpython#106905), so an ast.parse in another thread can fail with "AST
# constructor recursion depth mismatch" (seen once: pytest's rewrite of hypothesis at the end of a
# mixed run). .ci/test runs this file in its own pytest process (`-m ray`).
pytestmark = pytest.mark.ray

ROWS = 100
SPOOL = ""
"""A folder the kill test's workers write to (set before the class is pickled, which captures it)."""
HOLD = 50
"""The row whose tool waits, in the kill test, until the test has killed the actor running it."""
EXIT_ON = -1
"""The row whose tool ends its worker process (`os._exit`) every time it runs (the bounded-retry test)."""


@tool
def triple(x: int) -> int:
    """Triple x."""
    if SPOOL:  # one line per run of the tool, in whichever process runs it
        spool = Path(SPOOL)
        with open(spool / "ran.log", "a") as f:
            f.write(f"{x} {os.getpid()}\n")
    if x == EXIT_ON:  # a row that kills whichever worker runs it
        os._exit(1)
    if SPOOL and x == HOLD:
        (Path(SPOOL) / f"hold-{os.getpid()}").write_text("")
        while not (Path(SPOOL) / "released").exists():  # until the test has SIGKILLed this process
            time.sleep(0.02)
    return 3 * x


MODEL = FunctionModel(number_tool_reply("triple", "triple is"))  # "Triple 4": calls triple(x=4), says "triple is 12"


class Tripler(Think):  # pickled by value below, as a class defined in a notebook cell is
    include_workspace_tools = False

    def get_model(self) -> str:
        return MODEL.model

    def get_tools(self) -> list:
        return [triple]


def frame(rows: int = ROWS) -> pd.DataFrame:
    return pd.DataFrame({"n": range(rows)}, index=[f"r{i}" for i in range(rows)])


async def test_without_a_ray_cluster_the_engine_says_to_start_one() -> None:
    assert not ray.is_initialized()  # runs before the cluster fixture (this module's first test)
    agent = Tripler("no-cluster")
    with pytest.raises(UserError, match=r"ray\.init\(\)"):
        await agent.map(frame(2), "Triple {n}", engine="ray", progress=False)
    assert not ray.is_initialized()  # the engine never starts Ray itself
    assert agent.runs().empty  # refused before the run was written: nothing is left listed as running


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster of 2 CPUs that this process starts and joins with `ray.init(address=...)`,
    as a notebook joins a cluster it did not start (`think_nb.testing.start_local_ray`, which retries
    a start that timed out on a loaded machine)."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    stop = start_local_ray(2, join=True)
    try:
        yield
    finally:
        stop()


def table(results: pd.DataFrame) -> dict[str, list]:
    """The results table as compared across engines: every column but durations and conversation ids."""
    assert list(results.columns) == ["reply", "status", "error", "tool_calls", "input_tokens", "output_tokens",
                                     "cost_usd", "duration_s", "conversation_id"]
    return {"index": list(results.index), **{c: results[c].astype(object).tolist() for c in results.columns
                                             if c not in ("duration_s", "conversation_id")}}


def transcripts(agent: Think, results: pd.DataFrame) -> list[list[tuple]]:
    db = runtime_of(agent).store.db
    return [[(m["role"], [(p["type"], p.get("text"), p.get("state"), p.get("input"), p.get("output"))
                          for p in m["parts"] if p["type"] != "step-start"])
             for m in open_conversation(db, cid)] for cid in results["conversation_id"]]


def holding(spool: Path) -> list[int]:
    """The pids of the processes that have held row HOLD in its tool (the kill test)."""
    return [int(p.name.split("-")[1]) for p in spool.glob("hold-*")]


def sessions_per_row(agent: Think, results: pd.DataFrame) -> Counter[str]:
    """How many stored conversations each row of a Ray run has in the driver's lane (its session
    names are `map <run id> <row key>`)."""
    lanes = {cid.partition("#")[0] for cid in results["conversation_id"]}
    assert len(lanes) == 1, lanes  # the driver stores every row in one lane sub-agent
    names = runtime_of(agent).store.db.read("SELECT name FROM think_sessions WHERE agent_key = ?", (lanes.pop(),))
    return Counter(name for (name,) in names if name.startswith("map "))


@pytest.mark.allow_stall("ray.init and Ray Data's planning run on the test's loop thread; think_nb's own work "
                         "is off the loop (iter_batches in a thread)")
async def test_ray_engine_gives_the_local_engine_table_and_stored_conversations(cluster: None) -> None:
    df = frame()
    local_agent, ray_agent = Tripler("local"), Tripler("ray")
    local = await local_agent.map(df, "Triple {n}", run_id="x", concurrency=4, progress=False)
    remote = await ray_agent.map(df, "Triple {n}", run_id="x", concurrency=2, engine="ray", progress=False)
    assert remote["reply"].tolist() == [f"triple is {3 * n}" for n in range(ROWS)]
    assert table(remote) == table(local)
    assert transcripts(ray_agent, remote) == transcripts(local_agent, local)
    assert len(set(remote["conversation_id"])) == ROWS
    assert sessions_per_row(ray_agent, remote) == Counter({f'map x "r{n}"': 1 for n in range(ROWS)})
    assert ray_agent.runs()[["run_id", "status", "rows", "completed"]].values.tolist() == [["x", "completed", ROWS,
                                                                                            ROWS]]
    again = await ray_agent.map(df, "Triple {n}", run_id="x", engine="ray", progress=False)  # all settled
    assert again["conversation_id"].tolist() == remote["conversation_id"].tolist()
    assert ray.is_initialized()  # the cluster it was given is still up: the engine never shuts Ray down
    assert not reap_with_this_process(ray)  # a cluster joined by address is someone else's: no reaper for it


@pytest.mark.allow_stall("ray.init and Ray Data's planning run on the test's loop thread; think_nb's own work "
                         "is off the loop (iter_batches in a thread)")
async def test_an_actor_killed_mid_row_loses_nothing_and_each_row_is_stored_once(cluster: None,
                                                                                tmp_path: Path) -> None:
    """The guarantee: each row is stored once (one conversation, one ledger settlement); Ray runs the
    killed actor's batch again on a restarted actor, which skips the rows of it that had finished
    before the kill (their results are kept): only the row killed mid-tool runs its tools again."""
    global SPOOL
    SPOOL = str(tmp_path)
    try:
        agent = Tripler("killed")
        run = asyncio.ensure_future(agent.map(frame(), "Triple {n}", run_id="kill", concurrency=2, engine="ray",
                                              progress=False))
        deadline = time.monotonic() + 300
        while not (holds := holding(tmp_path)):  # the actor holding row HOLD is in its tool
            assert time.monotonic() < deadline and not run.done(), run
            await asyncio.sleep(0.05)
        killed = holds[0]
        os.kill(killed, signal.SIGKILL)
        (tmp_path / "released").write_text("")
        results = await run
    finally:
        SPOOL = ""
    assert results["status"].tolist() == ["completed"] * ROWS
    assert results["reply"].tolist() == [f"triple is {3 * n}" for n in range(ROWS)]
    assert sessions_per_row(agent, results) == Counter({f'map kill "r{n}"': 1 for n in range(ROWS)})
    store = runtime_of(agent).store.db
    ledger = store.read("SELECT id, status FROM think_submissions WHERE agent_key LIKE '%/map:kill'")
    assert sorted(ledger) == sorted((f'"r{n}"', "completed") for n in range(ROWS))
    runs = Counter(int(line.split()[0]) for line in (tmp_path / "ran.log").read_text().splitlines())
    pids = {int(line.split()[1]) for line in (tmp_path / "ran.log").read_text().splitlines()}
    assert set(runs) == set(range(ROWS))  # every row's tool ran
    again = {n for n, count in runs.items() if count > 1}
    assert again == {HOLD} and runs[HOLD] == 2, runs  # the killed row ran again, on a restarted actor; no other
    assert killed in pids and len(holding(tmp_path)) == 2


@pytest.mark.allow_stall("Ray Data's planning runs on the test's loop thread; think_nb's own work is off the loop")
async def test_cancel_run_on_ray_keeps_what_settled_and_aborts_the_rest(cluster: None, tmp_path: Path) -> None:
    global SPOOL
    SPOOL = str(tmp_path)
    agent = Tripler("cancelled")
    try:
        run = asyncio.ensure_future(agent.map(frame(), "Triple {n}", run_id="stop", concurrency=2, engine="ray",
                                              progress=False))
        deadline = time.monotonic() + 300
        while not holding(tmp_path):  # row HOLD is in its tool: the run is under way
            assert time.monotonic() < deadline and not run.done(), run
            await asyncio.sleep(0.05)
        agent.cancel_run("stop")
        with pytest.raises(asyncio.CancelledError):
            await run
    finally:
        (tmp_path / "released").write_text("")
        SPOOL = ""
    line = agent.runs().iloc[0]
    assert (line["status"], line["rows"], line["pending"], line["running"]) == ("cancelled", ROWS, 0, 0)
    assert line["completed"] + line["aborted"] == ROWS and line["aborted"] >= 1 and line["completed"] >= 1
    again = await agent.map(frame(), "Triple {n}", run_id="stop", engine="ray", progress=False)  # runs nothing
    assert again["status"].value_counts().to_dict() == {"completed": line["completed"], "aborted": line["aborted"]}
    done = again[again["status"] == "completed"]
    assert done["reply"].tolist() == [f"triple is {3 * int(k[1:])}" for k in done.index]
    assert sessions_per_row(agent, done) == Counter({f'map stop "{k}"': 1 for k in done.index})


async def test_ray_engine_refuses_what_it_cannot_do() -> None:
    agent = Tripler("refused")
    df = pd.DataFrame({"n": [1]})
    with pytest.raises(UserError, match="no panel to ask"):
        await agent.map(df, "Triple {n}", engine="ray", approvals="ask", progress=False)
    with pytest.raises(UserError, match="does not take max_cost"):
        await agent.map(df, "Triple {n}", engine="ray", max_cost=1.0, progress=False)
    with pytest.raises(UserError, match="'local'"):
        await agent.map(df, "Triple {n}", engine="spark", progress=False)
    assert agent.runs().empty  # each refused before the run was written


@pytest.mark.allow_stall("Ray Data's planning runs on the test's loop thread; think_nb's own work is off the loop")
async def test_a_row_that_kills_its_worker_every_time_is_the_only_error_row_and_its_batch_keeps_its_finished_rows(
        cluster: None, tmp_path: Path) -> None:
    """Ray restarts a dead actor and runs its batch again, without a bound of its own. The row that
    ends its worker every time runs MAX_ATTEMPTS times and is then an error row saying so; the rows
    of its batch that finished before it are kept (their results and transcripts stored once, their
    tools run once, never again on a retry), and those after it run once and complete."""
    global EXIT_ON, SPOOL
    culprit = BATCH_SIZE + 2  # r10, in the second batch (r8..r15): two rows finish before it, five after
    df = frame(24)
    local_agent = Tripler("exits-local")
    local = await local_agent.map(df.drop(index=f"r{culprit}"), "Triple {n}", run_id="local", concurrency=4,
                                  progress=False)
    EXIT_ON, SPOOL = culprit, str(tmp_path)
    try:
        agent = Tripler("exits")
        results = await agent.map(df, "Triple {n}", run_id="exit", concurrency=2, engine="ray", progress=False)
    finally:
        EXIT_ON, SPOOL = -1, ""
    assert results.loc[f"r{culprit}", ["status", "error", "reply"]].tolist() == [
        "error", (f"the Ray worker running this row died {MAX_ATTEMPTS} times while running it (its tool or "
                  "model ended its process: os._exit, a crash, out of memory); it was not run again"), ""]
    assert transcripts(agent, results.loc[[f"r{culprit}"]]) == [[("user", [("text", f"Triple {culprit}", None,
                                                                            None, None)])]]
    finished = results.drop(index=f"r{culprit}")  # the local engine's rows, results and stored transcripts
    assert table(finished) == table(local)
    assert transcripts(agent, finished) == transcripts(local_agent, local)
    assert sessions_per_row(agent, results) == Counter({f'map exit "r{n}"': 1 for n in range(24)})
    store = runtime_of(agent).store.db
    ledger = store.read("SELECT id, status FROM think_submissions WHERE agent_key LIKE '%/map:exit'")
    assert sorted(ledger) == sorted((f'"r{n}"', "error" if n == culprit else "completed") for n in range(24))
    line = agent.runs().iloc[0]
    assert (line["status"], line["completed"], line["error"], line["pending"], line["running"]) == (
        "completed", 23, 1, 0, 0)
    runs = Counter(int(line.split()[0]) for line in (tmp_path / "ran.log").read_text().splitlines())
    assert runs == Counter({n: MAX_ATTEMPTS if n == culprit else 1 for n in range(24)})  # no finished row again


class Label(BaseModel):
    label: str
    score: float


def labelling(messages: list[dict], info: Any) -> Any:
    text = next(m for m in reversed(messages) if m["role"] == "user")["content"]
    text = text if isinstance(text, str) else text[0]["text"]
    if "bad" in text:  # every attempt: its steps are spent without a valid answer
        return S.tool_call("think_final_answer", {"label": "x", "score": "not a number"})
    return S.tool_call("think_final_answer", {"label": text.split()[-1], "score": len(text) / 10})


LABELS = FunctionModel(labelling)


class Labeller(Think):
    include_workspace_tools = False
    max_steps = 2

    def get_model(self) -> str:
        return LABELS.model

    def get_tools(self) -> list:
        return []


@pytest.mark.allow_stall("Ray Data's planning runs on the test's loop thread; think_nb's own work is off the loop")
async def test_output_type_on_ray_gives_the_local_engines_validated_columns(cluster: None) -> None:
    df = pd.DataFrame({"t": ["good", "bad", "fine", "okay"] * 3}, index=[f"r{i}" for i in range(12)])
    local = await Labeller("local-labels").map(df, "Label {t}", output_type=Label, progress=False)
    remote = await Labeller("ray-labels").map(df, "Label {t}", output_type=Label, engine="ray", concurrency=2,
                                              progress=False)
    assert list(remote.columns[:3]) == ["reply", "label", "score"]
    assert remote["status"].tolist() == ["completed", "error", "completed", "completed"] * 3
    assert remote["label"].tolist() == ["good", None, "fine", "okay"] * 3
    assert "score" in remote.loc["r1", "error"]  # the validation problem is the row's error
    same = [c for c in remote.columns if c not in ("duration_s", "conversation_id")]
    pd.testing.assert_frame_equal(remote[same], local[same])  # the local engine's table (NaN equal to NaN)
