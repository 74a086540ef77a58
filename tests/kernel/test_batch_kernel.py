"""A batch run in a real kernel SIGKILLed halfway, finished by the same call in a new kernel: every
row stored once, no row's tool run twice (`think_nb.batch`, issue 33's "done when")."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
from collections import Counter
from pathlib import Path

from harness import start_frontend, stop_frontend, wait_until

ROWS = 1_000

SETUP = """
import asyncio, json, os
import pandas as pd
from think_nb import Think, tool
from think_nb.testing import FunctionModel, ScriptedModel as S

LOG = {log!r}

@tool
def double(x: int) -> int:
    '''Double x.'''
    with open(LOG, "a") as f:  # one line per run of the tool: the test counts them across kernels
        f.write(f"{{x}}\\n")
    return 2 * x

def reply(messages, info):
    last = messages[-1]
    if last["role"] == "tool":
        return [f"double is {{last['content']}}", S.usage(10, 3)]
    text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
    return [S.tool_call("double", {{"x": int(text.split()[-1])}}), S.usage(10, 2)]

fm = FunctionModel(reply)

class Doubler(Think):
    include_workspace_tools = False
    def get_model(self): return fm.model
    def get_tools(self): return [double]

agent = Doubler("d", db={db!r})
df = pd.DataFrame({{"n": range({rows})}})
print(json.dumps({{"pid": os.getpid()}}))
"""


def completed(db: Path) -> set[str]:
    """The keys of the run's rows completed so far, read from the ledger by another process."""
    if not db.exists():
        return set()
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as c:
        try:
            return {k for (k,) in c.execute("SELECT id FROM think_submissions WHERE agent_key LIKE '%/map:big' "
                                            "AND status = 'completed'")}
        except sqlite3.OperationalError:  # not migrated yet
            return set()


def test_a_run_killed_at_row_500_finishes_in_a_new_kernel_and_no_row_runs_twice(tmp_path: Path) -> None:
    db, log = tmp_path / "batch.sqlite", tmp_path / "ran.log"
    setup = SETUP.format(log=str(log), db=str(db), rows=ROWS)
    first = start_frontend(tmp_path / "k1")
    try:
        pid = json.loads(first.execute(setup, timeout=120).check().stdout.strip().splitlines()[-1])["pid"]
        first.execute("run = asyncio.ensure_future(agent.map(df, 'Double {n}', run_id='big', concurrency=8, "
                      "progress=False))").check()
        wait_until(lambda: len(completed(db)) >= ROWS // 2, "half the rows settle", timeout=300)
        os.kill(pid, signal.SIGKILL)
    finally:
        with contextlib.suppress(Exception):
            first.kc.stop_channels()
        with contextlib.suppress(Exception):
            first.km.shutdown_kernel(now=True)
    before = completed(db)
    assert ROWS // 2 <= len(before) < ROWS, len(before)
    ran_before = Counter(log.read_text().split())

    second = start_frontend(tmp_path / "k2")
    try:
        second.execute(setup, timeout=120).check()
        out = second.execute(
            "results = await agent.map(df, 'Double {n}', run_id='big', concurrency=8, progress=False)\n"
            "from think_nb.batch.local import open_conversation\n"
            "from think_nb.binding import runtime_of\n"
            "store = runtime_of(agent).store\n"
            "convs = [open_conversation(store.db, c) for c in results['conversation_id']]\n"
            "print(json.dumps({'status': results['status'].tolist(), 'reply': results['reply'].tolist(),\n"
            "                  'error': results['error'].tolist(),\n"
            "                  'runs': agent.runs().to_dict('records')[0]['status'],\n"
            "                  'users': [sum(m['role'] == 'user' for m in c) for c in convs],\n"
            "                  'cids': results['conversation_id'].tolist()}))", timeout=600).check()
        found = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        stop_frontend(second)

    ran = Counter(log.read_text().split())
    assert max(ran.values()) == 1, [n for n, c in ran.items() if c > 1]  # no row's tool ran twice
    status = Counter(found["status"])
    interrupted = [i for i, s in enumerate(found["status"]) if s != "completed"]
    # the rows in flight at the kill (at most the 8 lanes') are settled as interrupted, never run again
    assert status["completed"] + status["error"] == ROWS and status["error"] <= 8, status
    assert all("process running this row ended" in found["error"][i] for i in interrupted)
    for i, (reply, st) in enumerate(zip(found["reply"], found["status"], strict=True)):
        if st == "completed":
            assert reply == f"double is {2 * i}" and ran[str(i)] == 1
    assert found["runs"] == "completed"
    assert len(set(found["cids"])) == ROWS  # every row its own stored conversation
    assert found["users"] == [1] * ROWS  # each row's message stored once
    # the new kernel ran exactly the rows the first left pending: not the settled, not the interrupted
    completed_now = {str(i) for i, s in enumerate(found["status"]) if s == "completed"}
    assert set(ran) - set(ran_before) == completed_now - before
    assert before <= set(ran_before)
    print(f"killed after {len(before)} rows settled; {status['error']} interrupted; "
          f"{len(completed_now - before)} run by the new kernel")


def test_in_a_notebook_kernel_the_progress_bar_is_a_widget_that_counts_every_row(tmp_path: Path) -> None:
    fe = start_frontend(tmp_path / "k")
    try:
        fe.execute(SETUP.format(log=str(tmp_path / "ran.log"), db=str(tmp_path / "b.sqlite"), rows=12),
                   timeout=120).check()
        start = len(fe.log)
        out = fe.execute("results = await agent.map(df, 'Double {n}', run_id='bar', concurrency=4)\n"
                         "print(results['status'].tolist())", timeout=300).check()
    finally:
        stop_frontend(fe)
    assert out.stdout.strip().splitlines()[-1] == str(["completed"] * 12)
    opens = [m["content"] for m in fe.log[start:] if m["msg_type"] == "comm_open"]
    models = {o["comm_id"]: o["data"]["state"] for o in opens}
    bars = [cid for cid, state in models.items() if state.get("_model_name") == "FloatProgressModel"]
    assert len(bars) == 1, [s.get("_model_name") for s in models.values()]  # tqdm.auto chose the notebook bar
    values = [d["value"] for d in fe.state_updates(bars[0], start) if "value" in d]
    assert values and values[-1] == 12 and models[bars[0]]["max"] == 12
    labels = [d["value"] for cid, state in models.items() if state.get("_model_name") == "HTMLModel"
              for d in fe.state_updates(cid, start) if "value" in d]
    assert any("12/12" in label and "errors=0" in label for label in labels), labels[-3:]


def test_stopping_the_cell_keeps_the_settled_rows_and_the_same_call_finishes_the_others(tmp_path: Path) -> None:
    """Jupyter's Stop button interrupts the kernel while the cell awaits `map`: the cell ends
    cleanly, saying in one line what settled (no CancelledError traceback), and `map` returns the
    partial results table."""
    db = tmp_path / "b.sqlite"
    fe = start_frontend(tmp_path / "k")
    try:
        fe.execute(SETUP.format(log=str(tmp_path / "ran.log"), db=str(db), rows=400), timeout=120).check()
        start = len(fe.log)
        msg_id = fe.kc.execute("results = await agent.map(df, 'Double {n}', run_id='big', concurrency=4)")
        wait_until(lambda: len(completed(db)) >= 20, "some rows settle", timeout=300)
        fe.km.interrupt_kernel()
        fe.wait_for(lambda m: m["msg_type"] == "status" and m["parent_header"].get("msg_id") == msg_id
                    and m["content"]["execution_state"] == "idle", timeout=120)
        cell = [m for m in fe.log[start:] if m["parent_header"].get("msg_id") == msg_id]
        assert [m["content"]["ename"] for m in cell if m["msg_type"] == "error"] == []  # no traceback
        said = "".join(m["content"]["text"] for m in cell if m["msg_type"] == "stream")
        assert said.startswith("map 'big' stopped: ") and said.count("\n") == 1, said  # one line, nothing else
        assert fe._shell_reply(msg_id, timeout=30)["content"]["status"] == "ok"
        out = fe.execute("print(json.dumps(agent.runs()[['status', 'completed', 'aborted', 'pending', 'running']]"
                         ".to_dict('records')[0]))\n"
                         "print(json.dumps(results['status'].value_counts().to_dict()))").check()
        line = json.loads(out.stdout.strip().splitlines()[-2])
        partial = json.loads(out.stdout.strip().splitlines()[-1])  # the table of what settled, as map returns it
        assert partial == {k: v for k, v in {"completed": line["completed"], "aborted": line["aborted"],
                                             "not_run": line["pending"]}.items() if v}, (partial, line)
        assert line["status"] == "stopped" and line["running"] == 0, line
        assert line["completed"] >= 20 and line["pending"] > 0 and line["aborted"] <= 4, line
        assert line["completed"] + line["aborted"] + line["pending"] == 400
        out = fe.execute("results = await agent.map(df, 'Double {n}', run_id='big', concurrency=4, progress=False)\n"
                         "print(json.dumps(results['status'].value_counts().to_dict()))", timeout=300).check()
        finished = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        stop_frontend(fe)
    assert finished == {"completed": 400 - line["aborted"], **({"aborted": line["aborted"]} if line["aborted"] else {})}
    ran = Counter((tmp_path / "ran.log").read_text().split())
    assert max(ran.values()) == 1
