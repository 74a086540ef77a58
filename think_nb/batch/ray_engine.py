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
settles the row in the ledger, in the order Ray hands the batches back. A worker that dies mid-row
is restarted by Ray Data, which runs its batch (`BATCH_SIZE` rows) again on it (its actor fault
tolerance: restarts and task retries); the driver stores each row once (one conversation, one
ledger settlement), but the rows of that batch that had run before the death run again in the
worker, tools included: a row's tools run at least once, its result is stored exactly once. (A row
that raises is an error row, never a retry: only a dead process is retried.) Ray retries without a
bound (Ray Data 2.60 deprecated the per-actor restart bounds), so the engine bounds it: a run's
`_Attempts` actor counts the starts of each batch, and a batch handed out more than `MAX_ATTEMPTS`
times (a row that ends its process every time) comes back as error rows saying its worker died.

The driver claims the rows as it submits them; a run that stops (Stop, an error) puts the claimed
rows it has not stored back to pending (aborted when `cancel_run` cancelled it), and a driver
killed mid-run leaves them `running` without a conversation, so the same call runs them again
(their tools may have run in a worker).

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
that dies loses, and Ray runs again, at most this many rows)."""

MAX_ATTEMPTS = 3
"""Runs of one batch at most: a batch whose worker died this many times (a row that ends its
process every time) is not run again; its rows are error rows saying so."""

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


DIED = (f"the Ray worker running this row's batch died {MAX_ATTEMPTS} times (a row's tool or model ended its "
        "process: os._exit, a crash, out of memory); its rows were not run again")
COLUMNS = ["key", "status", "error", "output", "duration_s", "transcript"]


class _Attempts:
    """A Ray actor (one per run, no CPU): how many times each batch has been started. A worker
    asks it before running a batch, so a batch Ray runs again after its worker died is counted
    wherever it runs (Ray Data restarts a dead actor and retries its task without a bound)."""

    def __init__(self) -> None:
        self.started: dict[str, int] = {}

    def start(self, batch_key: str) -> int:
        self.started[batch_key] = self.started.get(batch_key, 0) + 1
        return self.started[batch_key]


class _RowWorker:
    """A Ray actor: one agent of the user's class in a SQLite file of its own; runs a batch of rows
    (or, the `MAX_ATTEMPTS + 1`-th time it is handed one, returns its rows as `DIED` error rows)."""

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
        import pandas as pd
        import ray
        from ray import cloudpickle

        from think_nb.aio import script_loop

        keys = list(batch["key"])
        if ray.get(self.attempts.start.remote(json.dumps(keys))) > MAX_ATTEMPTS:
            return pd.DataFrame([_died(key, text) for key, text in zip(keys, batch["text"], strict=True)],
                                columns=COLUMNS)
        out = []
        for key, text, context in zip(keys, batch["text"], batch["context"], strict=True):
            row = Row(key, 0, key, text, cloudpickle.loads(context))
            out.append(script_loop().run_until_complete(self._one(row)))
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


def _died(key: str, text: str) -> dict[str, Any]:
    """A row of a batch whose worker died `MAX_ATTEMPTS` times: an error row whose transcript is
    the row's user message (as a local error row's is)."""
    message = {"id": new_id("msg"), "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"key": key, "status": "error", "error": DIED, "output": "null", "duration_s": 0.0,
            "transcript": json.dumps([message])}


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
            while (batch := await asyncio.to_thread(next, batches, None)) is not None:  # Ray blocks: off the loop
                for record in batch.to_dict("records"):
                    if record["key"] not in stored:  # a row Ray handed back twice is stored once
                        stored.add(record["key"])
                        self._store(lane, record)
                        await asyncio.sleep(0)  # one row's storing at a time on the loop, never a whole batch's
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
