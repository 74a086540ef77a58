"""`engine="ray"`: the rows of a batch run go through Ray Data (`pip install 'think-nb[ray]'`).

    ray.init(num_cpus=2)                      # or ray.init(address="auto") to join a running cluster
    results = await agent.map(df, "Classify: {text}", engine="ray", concurrency=4, num_cpus=1)

The pending rows become a Ray Dataset (`ray.data.from_pandas`) mapped with `map_batches` over an
actor pool (`concurrency` actors, `num_cpus` each); each actor holds one agent of the agent's
class, which travels to the workers by cloudpickle (a class defined in a notebook cell is pickled
by value) and runs each row as the local engine does (`think_nb.batch.local.row_turn`), in a new
session of an agent in a SQLite file of the worker's own. Workers never write the notebook's file:
each returns its rows' results and transcripts, and the driver stores each transcript as a new
session of one lane sub-agent (`map-<run id>-ray`, through `import_messages`' trust boundary) and
settles the row in the ledger, in the order Ray hands the batches back.

A worker process can die mid-batch (a tool's `os._exit`, a crash, out of memory, a kill). Ray Data
restarts it and runs its batch (`BATCH_SIZE` rows) again (its actor fault tolerance: restarts and
task retries), so the accounting is per row, in a Ray actor of the run that outlives the workers
(`_Attempts`): a worker hands it each row's result as soon as the row finishes (and waits for it:
the result then survives the worker), and asks it before each row, so a retried batch skips the
rows a run of it finished before (their tools do not run again) and hands them back as `RECORDED`,
whose results the driver takes from the actor, then stores as any row. A row is stored exactly
once (one conversation, one ledger settlement, through the same `import_messages`); its tools run
again only when its worker died while running it. (A row that raises is an error row, never a
retry: only a dead process is retried.) Ray retries without a bound (Ray Data 2.60 deprecated the
per-actor restart bounds), so the engine bounds it: a row started `MAX_ATTEMPTS` times without
finishing (a row that ends its process every time) is not run again but is an error row saying
its worker died (`DIED`), and its batch goes on with its other rows; a batch started more often
than its rows' attempts explain (its worker dying between rows) ends its unfinished rows as error
rows saying so (`BATCH_DIED`).

The driver claims the rows as it submits them; a run that stops (Stop, an error) puts the claimed
rows it has not stored back to pending (aborted when `cancel_run` cancelled it), and a driver
killed mid-run leaves them `running` without a conversation, so the same call runs them again
(their tools may have run in a worker; so may those of a row a worker finished and the driver had
not stored when the run stopped: its result goes with the run's `_Attempts` actor).

Ray's lifecycle is the caller's: the engine needs a connected cluster (`ray.init()` or
`ray.init(address=...)`, else a `UserError` saying so), never starts one and never shuts one down.
When the cluster is a local one this process started (`ray.init()` in the kernel), the engine
starts `think_nb/procs/ray_reaper.py` once, so that no process of it outlives the kernel, SIGKILL
included (Ray's own fate-sharing leaves its agents behind).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from typing import Any

from think_nb.batch import outcome
from think_nb.batch.local import lane_name, row_turn
from think_nb.batch.rows import Row
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.messages import new_id
from think_nb.store.batch import BatchRows

__all__ = ["BATCH_SIZE", "RayRun", "reap_with_this_process"]

BATCH_SIZE = 8
"""Rows per Ray task: an actor runs them one after another and returns them together (a worker
that dies loses only the row it was running: the others' results are with `_Attempts`)."""

MAX_ATTEMPTS = 3
"""Runs of one row at most: a row whose worker died this many times while running it (a row that
ends its process every time) is not run again; it is an error row saying so (`DIED`)."""

Agent = Any


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UserError("engine='ray' needs Ray: pip install 'think-nb[ray]' (or pip install 'ray[data]').") from None
    return ray


_REAPER: list[Any] = []
"""The `think_nb/procs/ray_reaper.py` process this process started (at most one)."""


def reap_with_this_process(ray: Any) -> bool:
    """When this process started the Ray cluster it is connected to (`ray.init()` without an
    address: a head node whose processes are this process's), start, once, the reaper that kills
    them when this process exits however it exits (`think_nb.procs.ray_reaper`). True when it runs.
    A cluster joined with `ray.init(address=...)` is someone else's: left alone."""
    import subprocess
    import sys

    node = getattr(getattr(ray, "_private", None), "worker", None)
    node = getattr(node, "_global_node", None)
    if node is None or not getattr(node, "head", False) or not getattr(node, "all_processes", None):
        return False
    if not _REAPER or _REAPER[0].poll() is not None:
        from think_nb.procs import RAY_REAPER

        _REAPER[:] = [subprocess.Popen([sys.executable, "-IS", RAY_REAPER], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)]
    return True


DIED = (f"the Ray worker running this row died {MAX_ATTEMPTS} times while running it (its tool or model ended "
        "its process: os._exit, a crash, out of memory); it was not run again")
BATCH_DIED = (f"the Ray worker running this row's batch died {MAX_ATTEMPTS} times between its rows; the rows it "
              "had not finished were not run again")
COLUMNS = ["key", "status", "error", "output", "duration_s", "transcript"]
RECORDED = "recorded"
"""The status of a row a batch hands back without its result: a run of the batch before this one
finished it (and died later), so its result is the run's `_Attempts` actor's to give."""


class _Attempts:
    """A Ray actor (one per run, no CPU): the per-row accounting that outlives a worker's death.
    A worker asks it before each row (`begin`: None when a run of its batch finished the row before,
    else how many times the row has been started) and hands it each row's result as soon as
    the row finishes (`finish`, waited for: once it returns, the result survives the worker); the
    driver takes the results a batch handed back as `RECORDED` (`take`) and lets go of the rows it
    has stored (`stored`). Ray Data restarts a dead actor and retries its task without a bound, so
    this is where the engine bounds it: a row started `MAX_ATTEMPTS` times without finishing, or a
    batch started more often than its rows' attempts explain, is not run again."""

    def __init__(self) -> None:
        self.batches: dict[str, int] = {}
        self.rows: dict[str, int] = {}
        self.results: dict[str, dict | None] = {}  # a finished row's result; None once the driver stored it

    def start(self, batch_key: str) -> int:
        self.batches[batch_key] = self.batches.get(batch_key, 0) + 1
        return self.batches[batch_key]

    def begin(self, key: str) -> int | None:
        """None when the row has finished already (skip it), else its start count, this start included."""
        if key in self.results:
            return None
        self.rows[key] = self.rows.get(key, 0) + 1
        return self.rows[key]

    def finish(self, record: dict) -> None:
        self.results.setdefault(record["key"], record)

    def take(self, keys: list[str]) -> list[dict]:
        return [r for key in keys if (r := self.results.get(key)) is not None]

    def stored(self, keys: list[str]) -> None:
        for key in keys:
            self.results[key] = None


class _RowWorker:
    """A Ray actor: one agent of the user's class in a SQLite file of its own; runs a batch of rows,
    each at most once per run (see `_Attempts`)."""

    def __init__(self, blob: bytes, run_id: str, output_type_blob: bytes, approvals: str, attempts: Any) -> None:
        from ray import cloudpickle

        cls, name = cloudpickle.loads(blob)
        self.output_type = cloudpickle.loads(output_type_blob)
        self.run_id, self.approvals, self.attempts = run_id, approvals, attempts
        folder = tempfile.mkdtemp(prefix="think-nb-ray-")
        os.environ["THINK_NB_DB"] = os.path.join(folder, "worker.sqlite")  # never the notebook's file
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        self.agent = cls(name)

    def __call__(self, batch: Any) -> Any:
        """The batch's rows: those this run finished, `RECORDED` stubs for those an earlier run of the
        batch finished (its worker died after), error rows for those that ended their worker
        `MAX_ATTEMPTS` times."""
        import pandas as pd
        import ray
        from ray import cloudpickle

        from think_nb.aio import script_loop

        keys = list(batch["key"])
        exhausted = ray.get(self.attempts.start.remote(json.dumps(keys))) > MAX_ATTEMPTS * (len(keys) + 1)
        out = []
        for key, text, context in zip(keys, batch["text"], batch["context"], strict=True):
            started = ray.get(self.attempts.begin.remote(key))
            if started is None:
                out.append(_recorded(key))
                continue
            if exhausted or started > MAX_ATTEMPTS:
                record = _died(key, text, BATCH_DIED if exhausted else DIED)
            else:
                row = Row(key, 0, key, text, cloudpickle.loads(context))
                record = script_loop().run_until_complete(self._one(row))
            ray.get(self.attempts.finish.remote(record))  # durable before the next row starts
            out.append(record)
        return pd.DataFrame(out, columns=COLUMNS)

    async def _one(self, row: Row) -> dict[str, Any]:
        self.agent.create_session(f"map {self.run_id} {row.key}", switch=True)
        started = time.monotonic()
        try:
            status, error, output = await row_turn(self.agent, row, self.run_id, self.output_type, self.approvals)
        except Exception as exc:  # noqa: BLE001 - the row's failure is its error, the batch goes on
            status, error, output = "error", f"{type(exc).__name__}: {exc}", None
        dumped = output.model_dump(mode="json") if hasattr(output, "model_dump") else output
        return {"key": row.key, "status": status, "error": error, "output": json.dumps(dumped),
                "duration_s": time.monotonic() - started, "transcript": json.dumps(self.agent.get_messages())}


def _died(key: str, text: str, error: str) -> dict[str, Any]:
    """A row that ended its worker `MAX_ATTEMPTS` times (`DIED`), or was left when its batch's
    worker kept dying between rows (`BATCH_DIED`): an error row whose transcript is the row's user
    message (as a local error row's is)."""
    message = {"id": new_id("msg"), "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"key": key, "status": "error", "error": error, "output": "null", "duration_s": 0.0,
            "transcript": json.dumps([message])}


def _recorded(key: str) -> dict[str, Any]:
    return {"key": key, "status": RECORDED, "error": None, "output": "null", "duration_s": 0.0, "transcript": "[]"}


def _records(batches: Any, attempts: Any) -> list[dict] | None:
    """The next batch Ray hands back, as row records, its `RECORDED` stubs replaced by the results
    the run's `_Attempts` actor holds for them; None when there is none. Blocks: run off the loop."""
    import ray

    batch = next(batches, None)
    if batch is None:
        return None
    records = batch.to_dict("records")
    stubs = [r["key"] for r in records if r["status"] == RECORDED]
    held = {r["key"]: r for r in ray.get(attempts.take.remote(stubs))} if stubs else {}
    return [held.get(r["key"], r) if r["status"] == RECORDED else r for r in records]


def check_ready(approvals: str) -> None:
    """Raise the `UserError` a Ray run would end with, before the run writes anything: Ray is not
    installed, no cluster is initialised, or `approvals="ask"` (a worker has no panel)."""
    if approvals == "ask":
        raise UserError("map(engine='ray', approvals='ask'): a Ray worker has no panel to ask; use "
                        "approvals='deny', or the local engine.")
    if not _ray().is_initialized():
        raise UserError("engine='ray' needs a Ray cluster: call ray.init() (a local one) or "
                        "ray.init(address=...) first.")


class RayRun:
    """One call of `map(engine="ray")` (see the module docstring)."""

    def __init__(self, agent: Agent, run_id: str, store: BatchRows, *, concurrency: int, num_cpus: float,
                 output_type: type | None, approvals: str, on_settled: Any) -> None:
        if approvals == "ask":
            raise UserError("map(engine='ray', approvals='ask'): a Ray worker has no panel to ask; use "
                            "approvals='deny', or the local engine.")
        self.agent, self.run_id, self.store = agent, run_id, store
        self.concurrency, self.num_cpus = concurrency, num_cpus
        self.output_type, self.approvals, self.on_settled = output_type, approvals, on_settled

    async def go(self, todo: list[Row]) -> None:
        if not todo:
            return
        ray = _ray()
        import pandas as pd
        from ray import cloudpickle

        if not ray.is_initialized():
            raise UserError("engine='ray' needs a Ray cluster: call ray.init() (a local one) or "
                            "ray.init(address=...) first.")
        reap_with_this_process(ray)
        claimed = [r for r in todo if self.store.claim(self.run_id, r.key, new_id("req"))]
        chunks = [claimed[i:i + BATCH_SIZE] for i in range(0, len(claimed), BATCH_SIZE)]
        frames = [pd.DataFrame({"key": [r.key for r in chunk], "text": [r.text for r in chunk],
                                "context": [cloudpickle.dumps(r.context) for r in chunk]}) for chunk in chunks]
        blob = cloudpickle.dumps((type(self.agent), f"{self.agent.name}-ray-worker"))
        attempts = ray.remote(num_cpus=0)(_Attempts).remote()
        dataset = ray.data.from_pandas(frames).map_batches(  # a block, a task, per batch
            _RowWorker, fn_constructor_args=(blob, self.run_id, cloudpickle.dumps(self.output_type), self.approvals,
                                             attempts),
            batch_format="pandas", batch_size=BATCH_SIZE, num_cpus=self.num_cpus,
            compute=ray.data.ActorPoolStrategy(size=self.concurrency))  # restarts a dead actor, retries its task
        lane = self.agent.sub_agent(type(self.agent), lane_name(self.run_id, "ray"))
        stored: set[str] = set()
        try:
            batches = iter(dataset.iter_batches(batch_format="pandas", batch_size=None))  # next() needs the iterator
            while (records := await asyncio.to_thread(_records, batches, attempts)) is not None:  # Ray blocks
                for record in records:
                    if record["key"] not in stored and record["status"] != RECORDED:  # a row handed back twice
                        stored.add(record["key"])                                      # is stored once
                        self._store(lane, record)
                        await asyncio.sleep(0)  # one row's storing at a time on the loop, never a whole batch's
                attempts.stored.remote([r["key"] for r in records])  # the actor lets go of their results
        finally:  # stopped or failed: the claimed rows not stored are pending again (the next call runs them),
            ray.kill(attempts)
            for row in claimed:  # or aborted when the run was cancelled (cancel_run)
                if row.key not in stored:
                    self.store.requeue(self.run_id, row.key)
            if len(stored) < len(claimed) and (self.store.run(self.run_id) or {}).get("status") == "cancelled":
                self.store.abort_pending(self.run_id, "cancelled (cancel_run)")

    def _store(self, lane: Agent, record: dict) -> None:
        """Store one worker row as a session of the driver's lane and settle it in the ledger."""
        session_id = lane.create_session(f"map {self.run_id} {record['key']}", switch=True)
        runtime = runtime_of(lane)
        conversation_id = runtime.store.conversation_key(session_id)
        self.store.bind(self.run_id, record["key"], conversation_id)
        lane.import_messages(json.loads(record["transcript"]))
        result = outcome.of_messages(runtime.store.messages.branch(), record["status"], record["error"],
                                     json.loads(record["output"]), float(record["duration_s"]), conversation_id)
        if self.store.settle(self.run_id, record["key"], record["status"], record["error"], result):
            self.on_settled(result)
