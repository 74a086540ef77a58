"""Batch runs: an agent over a DataFrame, one full turn per row (`agent.map`, issue 33).

    results = await agent.map(df, prompt="Classify: {text}", concurrency=8, output_type=Label)
    results = agent.run_map(df, prompt="text")            # the blocking form, for scripts
    agent.runs()                                          # every run: counts, cost, status
    agent.cancel_run(results.attrs["run_id"])

Each row is a real turn of the agent's class: hooks fire, tools run, approvals gate, and the row's
conversation is stored in the notebook's SQLite file, where it can be opened
(`think_nb.batch.conversation_agent(agent, conversation_id).panel()`), searched and exported.

Why a lane sub-agent per concurrency slot, and a session per row: an agent runs one turn at a
time (its queue, `message_concurrency`), so rows cannot run concurrently as sessions of the agent
itself; a sub-agent per row would build a whole runtime per row (store, engine, extensions, MCP,
schedules; 1,000 of them for 1,000 rows); so the run makes `concurrency` sub-agents of the
agent's class (`map-<run id>-<n>`, in the agent's file), and each runs its rows one after
another, each in a new session: a row is still its own stored conversation (`conversation_id`,
`<lane key>#<session id>`), with `concurrency` runtimes in all.

Durable and idempotent: every row is a submission in the ledger (`think_nb.store.batch`) before
any turn runs; a row is claimed (`running`, owned by this process) before its turn and settled
with its result in one transaction. Calling `map` again with the same `run_id` skips settled rows
and runs the pending ones; rows a killed process left `running` are settled `error`
(`INTERRUPTED`) when their turn had started (never run twice: their tools may have run), else
run. The results table is on `df`'s index: `reply`, the `output_type`'s fields, `status`
(completed | error | aborted | not_run), `error`, `tool_calls` (names), `input_tokens`,
`output_tokens`, `cost_usd` (unknown stays <NA>), `duration_s`, `conversation_id`; `evaluate=`
adds one column per function and `results.attrs["summary"]` their means.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from think_nb.aio import script_loop
from think_nb.batch.local import DENIED_TEXT, INTERRUPTED, LocalRun, open_conversation
from think_nb.batch.outcome import COLUMNS, checked, not_run, of_messages
from think_nb.batch.pacing import Budget, Pacer
from think_nb.batch.progress import stopped_text
from think_nb.batch.rows import Row, check, prepare
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.interrupts import loop_wakes_on_interrupt
from think_nb.messages import new_id
from think_nb.store.batch import BatchRows, RunChanged

Agent = Any
"""A `think_nb.Think` (not imported: `think_nb.agent` imports this module)."""

if TYPE_CHECKING:
    import pandas as pd


__all__ = ["DENIED_TEXT", "INTERRUPTED", "cancel_run", "check_call", "compare_runs", "conversation_agent", "map_rows",
           "run_map", "runs"]

APPROVALS = ("deny", "ask")
_ACTIVE: dict[tuple[str, str], asyncio.Task[Any]] = {}
"""The runs going on in this process: `(agent key, run id)` → the task running them."""


def check_call(df: Any, prompt: Any, context: Any = None, concurrency: int = 8, approvals: str = "deny",
               max_cost: float | None = None, run_id: str | None = None) -> None:
    """What `map_rows` refuses before reading a row (`df`, `prompt`, `context`, the options), checked
    synchronously: `%think map` calls it so that, in a notebook, bad input is its line's error, not a
    failed task nobody awaited. Raises `UserError`."""
    _check(concurrency, approvals, max_cost, None, None, None, None, None)
    _check_run_id(run_id)
    check(df, prompt, context)


def _check_run_id(run_id: Any) -> None:
    if run_id is not None and (not isinstance(run_id, str) or not run_id.strip() or "#" in run_id or "/" in run_id):
        raise UserError(f"run_id={run_id!r}: a run id is a non-empty string without '#' or '/', e.g. 'labels-v1'.")


async def map_rows(agent: Agent, df: Any, prompt: Any, *, concurrency: int = 8, run_id: str | None = None,
                   context: Any = None, output_type: type | None = None, approvals: str = "deny",
                   max_cost: float | None = None, max_tokens: int | None = None, rpm: float | None = None,
                   tpm: float | None = None, evaluate: list[Callable[..., Any]] | None = None,
                   progress: bool = True, engine: str = "local", num_cpus: float = 1) -> pd.DataFrame:
    """`Think.map` (see there)."""
    _check(concurrency, approvals, max_cost, max_tokens, rpm, tpm, output_type, evaluate)
    if engine not in ("local", "ray"):
        raise UserError(f"map(engine={engine!r}): 'local' (in this kernel) or 'ray' (a Ray cluster).")
    if engine == "ray" and any(v is not None for v in (max_cost, max_tokens, rpm, tpm)):
        raise UserError("map(engine='ray') does not take max_cost, max_tokens, rpm or tpm yet; use the local "
                        "engine for a bounded run.")
    if engine == "ray":  # refused before the run is written (it would stay listed as running)
        from think_nb.batch.ray_engine import check_ready

        await asyncio.to_thread(check_ready, approvals)  # imports ray (seconds), off the loop
    run_id = new_id("run") if run_id is None else run_id
    _check_run_id(run_id)
    store = _store(agent)
    key = (store.agent_key, run_id)
    if key in _ACTIVE and not _ACTIVE[key].done():
        raise UserError(f"Run {run_id!r} is running already; wait for it, or agent.cancel_run({run_id!r}).")
    task = asyncio.current_task()
    if task is not None:  # claimed before the first await: a second call with this id is refused, not interleaved
        _ACTIVE[key] = task
    try:
        return await _map_claimed(agent, df, prompt, store, run_id, task, concurrency=concurrency, context=context,
                                  output_type=output_type, approvals=approvals, max_cost=max_cost,
                                  max_tokens=max_tokens, rpm=rpm, tpm=tpm, evaluate=evaluate, progress=progress,
                                  engine=engine, num_cpus=num_cpus)
    finally:
        if _ACTIVE.get(key) is task:
            _ACTIVE.pop(key, None)


async def _map_claimed(agent: Agent, df: Any, prompt: Any, store: BatchRows, run_id: str,
                       task: asyncio.Task[Any] | None, *, concurrency: int, context: Any, output_type: type | None,
                       approvals: str, max_cost: float | None, max_tokens: int | None, rpm: float | None,
                       tpm: float | None, evaluate: list[Callable[..., Any]] | None, progress: bool, engine: str,
                       num_cpus: float) -> pd.DataFrame:
    """The run under its claimed id: rows accepted into the ledger, the unsettled ones run, the table."""
    rows = await asyncio.to_thread(prepare, df, prompt, context)  # 10,000 rows: ~80 ms, off the loop
    spec = {"total": len(rows), "concurrency": concurrency, "approvals": approvals, "max_cost": max_cost,
            "max_tokens": max_tokens, "output_type": getattr(output_type, "__name__", None),
            "prompt": prompt if isinstance(prompt, str) else getattr(prompt, "__name__", repr(prompt))}
    try:  # one transaction (10,000 rows: ~200 ms), off the loop
        await asyncio.to_thread(store.accept, run_id, spec,
                                [(r.key, r.position, {"role": "user", "text": r.text}) for r in rows])
    except RunChanged as exc:
        raise UserError(f"Run {run_id!r} was started with other prompts for {len(exc.keys)} row(s) (e.g. row "
                        f"{exc.keys[0]}); use a new run_id for a new prompt.") from None
    todo, budget = await asyncio.to_thread(_resume, store, run_id, rows, Budget(max_cost, max_tokens))  # off the loop
    run = LocalRun(agent, run_id, rows, store, concurrency=concurrency, output_type=output_type,
                   approvals=approvals, budget=budget, pacer=Pacer(rpm, tpm), progress=progress)
    wakes = loop_wakes_on_interrupt()
    try:
        with wakes as heard:  # Stop (Kernel → Interrupt) reaches a run whose rows all wait
            if engine == "ray":
                await _go_ray(agent, run_id, store, todo, len(rows), concurrency=concurrency, num_cpus=num_cpus,
                              output_type=output_type, approvals=approvals, progress=progress)
            else:
                await run.go(todo, len(rows) - len(todo))
    except asyncio.CancelledError:
        if store.run(run_id)["status"] != "cancelled":  # type: ignore[index]
            store.set_status(run_id, "stopped")
        if progress:  # Stop (an interrupted cell): the cell says what settled and what did not run
            print(stopped_text(run_id, store.statuses(run_id)))
        if not heard.user_stop(task):
            raise  # cancel_run, a timeout, an outer task's cancel: not ours to swallow
        # the user's Stop: the cell ends cleanly (no CancelledError traceback) with what settled
        return await asyncio.to_thread(results_frame, agent, df, rows, run_id, output_type, evaluate,
                                       f"stopped (Stop); map(..., run_id={run_id!r}) again runs it")
    settled = await asyncio.to_thread(_all_settled, store, run_id, rows)
    if store.run(run_id)["status"] != "cancelled":  # type: ignore[index]
        store.set_status(run_id, "completed" if settled else "stopped")
    return await asyncio.to_thread(results_frame, agent, df, rows, run_id, output_type, evaluate, run.stop_reason)


async def _go_ray(agent: Agent, run_id: str, store: BatchRows, todo: list[Row], total: int, *, concurrency: int,
                  num_cpus: float, output_type: type | None, approvals: str, progress: bool) -> None:
    from think_nb.batch.progress import Progress
    from think_nb.batch.ray_engine import RayRun

    bar = Progress(run_id, total, total - len(todo), progress)
    try:
        await RayRun(agent, run_id, store, concurrency=concurrency, num_cpus=num_cpus, output_type=output_type,
                     approvals=approvals, on_settled=bar.settled).go(todo)
    finally:
        bar.close()


def run_map(agent: Agent, df: Any, prompt: Any, **options: Any) -> pd.DataFrame:
    """`Think.run_map`: `map_rows` for scripts (no running event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError("agent.run_map() cannot be used inside a running event loop (a notebook cell); "
                        "use `await agent.map(...)`.")
    frame: pd.DataFrame = script_loop().run_until_complete(map_rows(agent, df, prompt, **options))
    return frame


def results_frame(agent: Agent, df: Any, rows: list[Row], run_id: str, output_type: type | None,
                  evaluate: list[Callable[..., Any]] | None, stop_reason: str | None) -> pd.DataFrame:
    """The run's results table on `df`'s index (see the module docstring)."""
    import pandas as pd

    store = _store(agent)
    stored, statuses = _results(store, run_id), store.statuses(run_id)
    fields = list(getattr(output_type, "model_fields", {}) or {})
    records = []
    for row in rows:
        status = statuses.get(row.key)
        result = stored.get(row.key) or not_run(_why(status, stop_reason), aborted=status == "aborted")
        record = {"reply": result["reply"]}
        for name in fields:
            record[name] = (result.get("output") or {}).get(name)
        record.update({c: result.get(c) for c in COLUMNS if c != "reply"})
        records.append(record)
    frame = pd.DataFrame(records, index=df.index, columns=["reply", *fields, *COLUMNS[1:]])
    frame = frame.astype({"input_tokens": "Int64", "output_tokens": "Int64", "cost_usd": "Float64",
                          "duration_s": "Float64"})
    from think_nb.frontends.views import nulls_as_none

    frame = nulls_as_none(frame)
    frame.attrs["run_id"] = run_id
    if evaluate:
        _evaluate(frame, df, evaluate)
    return frame


def runs(agent: Agent) -> pd.DataFrame:
    """`Think.runs`: one line per run of this agent, oldest first."""
    import pandas as pd

    store = _store(agent)
    lines = []
    for run in store.runs():
        statuses = list(store.statuses(run["run_id"]).values())
        results = list(_results(store, run["run_id"]).values())
        costs = [r.get("cost_usd") for r in results if r.get("status") != "not_run"]
        lines.append({"run_id": run["run_id"], "status": run["status"], "rows": len(statuses),
                      "completed": statuses.count("completed"), "error": statuses.count("error"),
                      "aborted": statuses.count("aborted"), "pending": statuses.count("pending"),
                      "running": statuses.count("running"),
                      "cost_usd": sum(float(c) for c in costs if c is not None) if costs and None not in costs
                      else None,
                      "created_at": pd.Timestamp(run["created_at"], unit="s", tz="UTC")})
    columns = ["run_id", "status", "rows", "completed", "error", "aborted", "pending", "running", "cost_usd",
               "created_at"]
    return pd.DataFrame(lines, columns=columns).astype({"cost_usd": "Float64"})


def cancel_run(agent: Agent, run_id: str) -> dict[str, int]:
    """`Think.cancel_run`: stop a run; `{aborted: pending rows aborted, stopped: 1 when it was
    running in this process}`."""
    store = _store(agent)
    if store.run(run_id) is None:
        raise UserError(f"No run {run_id!r} (see agent.runs()).")
    store.set_status(run_id, "cancelled")
    aborted = store.abort_pending(run_id, "cancelled (cancel_run)")
    task = _ACTIVE.get((store.agent_key, run_id))
    stopped = 0
    if task is not None and not task.done():
        task.cancel()
        stopped = 1
    return {"aborted": aborted, "stopped": stopped}


def compare_runs(agent: Agent, a: str, b: str) -> pd.DataFrame:
    """`Think.compare_runs`: runs `a` and `b` side by side, one line per row of either (indexed by
    the row's index label): `reply`, the `output_type`'s fields, `status`, `cost_usd` of each
    (suffixes `_a`, `_b`), and `same` (the reply and the fields equal)."""
    import pandas as pd

    store = _store(agent)
    for run_id in (a, b):
        if store.run(run_id) is None:
            raise UserError(f"compare_runs: no run {run_id!r} (see agent.runs()).")

    def side(run_id: str) -> dict[Any, dict]:
        return {_label(_key(k)): {"reply": r["reply"], **(r.get("output") or {}), "status": r["status"],
                                        "cost_usd": r["cost_usd"]} for k, r in _results(store, run_id).items()}

    left, right = side(a), side(b)
    lines = {}
    for label in [*left, *(k for k in right if k not in left)]:
        one, two = left.get(label, {}), right.get(label, {})
        line = {f"{k}_a": v for k, v in one.items()} | {f"{k}_b": v for k, v in two.items()}
        compared = [k for k in {*one, *two} if k not in ("status", "cost_usd")]
        line["same"] = bool(one) and bool(two) and all(one.get(k) == two.get(k) for k in compared)
        lines[label] = line
    frame = pd.DataFrame.from_dict(lines, orient="index")
    ordered = [c for k in dict.fromkeys(c[:-2] for c in frame.columns if c != "same") for c in (f"{k}_a", f"{k}_b")
               if c in frame.columns]
    return frame[[*ordered, "same"]]


def _key(row_key: str) -> Any:
    try:
        return json.loads(row_key)
    except ValueError:  # an edited ledger: the key as it is
        return row_key


def _label(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def conversation_agent(agent: Agent, conversation_id: str) -> Agent:
    """The lane sub-agent that ran `conversation_id` (a results table's), switched to that
    row's session: `conversation_agent(agent, cid).panel()` opens the row. Raises `UserError`
    for an id not of this agent's runs, or while that lane runs."""
    lane_key, _, session_id = conversation_id.partition("#")
    prefix = f"{runtime_of(agent).key}/{type(agent).__name__}:"
    if not lane_key.startswith(prefix) or not session_id:
        raise UserError(f"{conversation_id!r} is not a conversation of {agent.name!r}'s runs (see a results "
                        "table's conversation_id column).")
    lane = agent.sub_agent(type(agent), lane_key[len(prefix):])
    lane.switch_session(session_id)
    return lane


def _results(store: BatchRows, run_id: str) -> dict[str, dict]:
    """The run's settled rows' results, each checked (`outcome.checked`: the file is untrusted)."""
    return {key: checked(result) for key, result in store.results(run_id).items()}


def _store(agent: Agent) -> BatchRows:
    runtime = runtime_of(agent)
    return BatchRows(runtime.store.db, runtime.key)


def _resume(store: BatchRows, run_id: str, rows: list[Row], budget: Budget) -> tuple[list[Row], Budget]:
    """`(the rows still pending, budget with what the settled rows spent)`, after settling orphans. In
    a worker thread: a run of 40,000 settled rows took ~0.5 s of CPU to read."""
    _settle_orphans(store, run_id)
    statuses = store.statuses(run_id)
    for result in _results(store, run_id).values():
        budget.add(result)
    return [r for r in rows if statuses.get(r.key) == "pending"], budget


def _all_settled(store: BatchRows, run_id: str, rows: list[Row]) -> bool:
    statuses = store.statuses(run_id)
    return all(statuses.get(r.key) not in ("pending", "running") for r in rows)


def _settle_orphans(store: BatchRows, run_id: str) -> None:
    """Rows a dead process left `running`: `error` (INTERRUPTED) when their turn had begun, else
    back to `pending`."""
    conversations = store.conversations(run_id)
    for row_key in store.orphaned(run_id):
        conversation_id = conversations.get(row_key)
        messages = open_conversation(store.db, conversation_id) if conversation_id else []
        if not messages:
            store.requeue(run_id, row_key)
            continue
        result = of_messages(messages, "error", INTERRUPTED, None, 0.0, conversation_id or "")
        result["duration_s"] = None
        store.settle(run_id, row_key, "error", INTERRUPTED, result)


def _why(status: str | None, stop_reason: str | None) -> str:
    if status == "aborted":
        return "cancelled (cancel_run)"
    if status == "running":
        return "still running (in another call or process)"
    return stop_reason or "not run"


def _evaluate(frame: pd.DataFrame, df: Any, evaluate: list[Callable[..., Any]]) -> None:
    """One column per evaluator `fn(row, result) -> number | bool | None` (`row`: the df row's
    dict, `result`: the results row's dict), named after the function; rows not run get None.
    `frame.attrs["summary"]`: `{name: {"mean": float | None, "count": int}}`."""
    summary = {}
    records = df.to_dict("records")
    results = frame.to_dict("records")
    for fn in evaluate:
        name = getattr(fn, "__name__", "score")
        scores = []
        for label, row, result in zip(frame.index, records, results, strict=True):
            scores.append(None if result["status"] == "not_run" else _score(fn, name, label, row, result, frame))
        frame[name] = scores
        numbers = [float(s) for s in scores if isinstance(s, (int, float)) and not math.isnan(float(s))]
        summary[name] = {"mean": sum(numbers) / len(numbers) if numbers else None, "count": len(numbers)}
    frame.attrs["summary"] = summary


def _score(fn: Callable[..., Any], name: str, label: Any, row: dict, result: dict, frame: pd.DataFrame) -> Any:
    """`fn(row, result)`; an evaluator that raises is one `UserError` line naming it and the row, and
    how to get the table back (the rows are settled and stored: nothing runs again)."""
    try:
        return fn(row, result)
    except Exception as exc:  # user code: its failure names the fix, the run is kept
        said = " ".join(str(exc).split())
        raise UserError(f"map(evaluate=...): {name} raised {type(exc).__name__}: {said:.120} on row {label!r:.40}; "
                        f"the run's rows are kept: fix it and call map again with run_id="
                        f"{frame.attrs['run_id']!r} (nothing runs again).") from exc


def _check(concurrency: Any, approvals: Any, max_cost: Any, max_tokens: Any, rpm: Any, tpm: Any,
           output_type: Any, evaluate: Any) -> None:
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0

    if not (isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency >= 1):
        raise UserError(f"map(concurrency={concurrency!r}): a whole number of rows at once >= 1, e.g. 8.")
    if approvals not in APPROVALS:
        raise UserError(f"map(approvals={approvals!r}): 'deny' (a gated tool is refused) or 'ask' (the row waits "
                        "for agent.approve / the panel while the other rows go on).")
    for name, value in (("max_cost", max_cost), ("max_tokens", max_tokens), ("rpm", rpm), ("tpm", tpm)):
        if value is not None and not number(value):
            raise UserError(f"map({name}={value!r}): a number > 0, or None for no limit.")
    if output_type is not None and not hasattr(output_type, "model_validate"):
        raise UserError(f"map(output_type={output_type!r}): a pydantic model class, e.g. class Label(BaseModel).")
    clashes = sorted(set(getattr(output_type, "model_fields", {}) or {}) & set(COLUMNS))
    if clashes:
        name = getattr(output_type, "__name__", output_type)
        raise UserError(f"map(output_type={name}): its field {clashes[0]!r} is a column of the results table; "
                        "give the field another name.")
    if evaluate is not None and not (isinstance(evaluate, (list, tuple)) and all(callable(f) for f in evaluate)):
        raise UserError("map(evaluate=...): a list of functions fn(row, result) -> score.")
