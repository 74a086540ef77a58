"""`await agent.map(df, engine="ray")` in a real kernel (issue 33 §6): the agent's class, defined in a
notebook cell, travels to the Ray workers (cloudpickle pickles a `__main__` class by value); and no
process of the Ray cluster the kernel started (`ray.init()`: GCS, raylet, workers, the agents Ray
starts beside them) outlives the kernel, SIGKILL included — Ray fate-shares the processes `ray.init`
starts with their driver (Linux PR_SET_PDEATHSIG, its reaper), and this test holds it to that.

Ray is the `ray` extra, which CI installs: without it the cell fails, and so does the test."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil

from harness import start_frontend, stop_frontend, wait_until
from test_processes_kernel import GONE_WITHIN_S, alive, descendants

CELL = """
import json, os, pandas as pd, ray
from think_nb import Think, tool
from think_nb.testing import FunctionModel, number_tool_reply, start_local_ray

@tool
def triple(x: int) -> int:
    '''Triple x.'''
    return 3 * x

fm = FunctionModel(number_tool_reply("triple", "triple is"))

class CellTripler(Think):  # defined in this cell: only cloudpickle can take it to a worker
    include_workspace_tools = False
    def get_model(self): return fm.model
    def get_tools(self): return [triple]

start_local_ray(2, join=False)  # ray.init(address="local"): the kernel's own cluster, a start that timed out retried
agent = CellTripler("cell")
results = await agent.map(pd.DataFrame({"n": range(24)}), "Triple {n}", engine="ray", concurrency=2, progress=False)
print(json.dumps({"pid": os.getpid(), "replies": results["reply"].tolist(), "status": results["status"].tolist(),
                  "tools": results["tool_calls"].tolist(), "ray_up": ray.is_initialized(),
                  "session": ray.get_runtime_context().get_node_id() and
                             ray._private.worker._global_node.get_session_dir_path()}))
"""


def naming(session: str) -> dict[int, str]:
    """Every live process whose command line names the cluster's session folder."""
    found = {}
    for proc in psutil.process_iter(["pid", "cmdline"]):
        command = " ".join(proc.info["cmdline"] or [])
        if Path(session).name in command and alive(proc.pid):
            found[proc.pid] = command[:160]
    return found


def test_a_notebook_cell_class_runs_on_ray_and_no_ray_process_outlives_the_kernel(tmp_path: Path) -> None:
    fe = start_frontend(tmp_path)
    try:
        out = json.loads(fe.execute(CELL, timeout=300).check().stdout.strip().splitlines()[-1])
        assert out["status"] == ["completed"] * 24
        assert out["replies"] == [f"triple is {3 * n}" for n in range(24)]
        assert out["tools"] == [["triple"]] * 24
        assert out["ray_up"]  # the cluster the user started is still up: map never shuts Ray down
        kernel = out["pid"]
        procs = {**descendants(kernel), **naming(out["session"])}
        commands = " ".join(procs.values())
        assert "gcs_server" in commands and "raylet" in commands, procs
        os.kill(kernel, signal.SIGKILL)
        wait_until(lambda: not any(alive(pid) for pid in procs),
                   f"every Ray process is gone: {({p: c for p, c in procs.items() if alive(p)})}",
                   timeout=GONE_WITHIN_S)
        assert naming(out["session"]) == {}  # nor one started after the count
    finally:
        stop_frontend(fe)
