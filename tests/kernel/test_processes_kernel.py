"""No process think_nb starts outlives its kernel (issue 28 §10), counted by PID.

A real kernel starts two MCP stdio servers (the demo server, connected, and one that never
answers `initialize`), loads an extension (the extensions' Monty pool) and runs a turn whose
`execute` call burns CPU in its Monty worker (`while True: pass`, with a 600 s limit). The test
collects every descendant PID of the kernel, then ends the kernel by SIGKILL, by a restart or by
a normal shutdown, and waits until every one of those PIDs is gone (a zombie counts as gone: it
runs nothing). On main before the fix the MCP servers and the burning worker lived on."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from harness import start_frontend, stop_frontend, wait_until

SERVER = Path(__file__).resolve().parents[1] / "mcp_server.py"
GONE_WITHIN_S = 30.0  # bounds a failure only: the check passes as soon as the PIDs are gone

SETUP = textwrap.dedent(f'''
    import asyncio, json, os, sys
    from pathlib import Path
    from think_nb import Think
    from think_nb.testing import ScriptedModel as S
    from think_nb.workspace import execute_tool

    BURN = "marker(); n = 0\\nwhile True:\\n    n += 1\\n"
    script = S([[S.tool_call("execute", {{"code": BURN}})], [S.text("never")]])

    def marker() -> str:
        """Say that the code runs."""
        Path("burning").write_text("yes")
        return "ok"

    class Procs(Think):
        include_workspace_tools = False
        def get_model(self):
            return script.model
        def get_tools(self):
            return [marker, execute_tool(self, timeout=600)]

    agent = Procs("procs", db=Path("procs.sqlite"))
    demo = await agent.add_mcp_server("demo", {sys.executable!r}, args=[{str(SERVER)!r}, "stdio"],
                                      connect_timeout=120)
    mute = await agent.add_mcp_server("mute", {sys.executable!r},
                                      args=["-c", "import time; time.sleep(3600)"], connect_timeout=0.1)
    ext = await agent.load_extension({{"name": "e", "version": "1"}},
                                     "def hi():\\n    return 1\\ntools = {{'hi': {{'description': 'hi', "
                                     "'parameters': {{}}, 'function': hi}}}}\\n")
    turn = asyncio.ensure_future(agent.send("burn"))
    print(json.dumps({{"pid": os.getpid(), "demo": demo["state"], "ext": ext["state"]}}))
    ''')


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def descendants(pid: int) -> dict[int, str]:
    out = {}
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            out[child.pid] = " ".join(child.cmdline())[:160]
    return out


@pytest.mark.parametrize("end", ["sigkill", "restart", "shutdown"])
def test_no_process_of_think_nb_survives_its_kernel(tmp_path: Path, end: str) -> None:
    fe = start_frontend(tmp_path)
    stopped = False
    try:
        info = json.loads(fe.execute(SETUP, timeout=180).check().stdout.strip().splitlines()[-1])
        assert info["demo"] == "connected" and info["ext"] == "loaded", info
        kernel = info["pid"]
        wait_until(lambda: (tmp_path / "burning").exists(), "the execute code runs", timeout=GONE_WITHIN_S)
        children = descendants(kernel)
        # what think_nb started: two MCP servers (each a guard and the server), the extensions'
        # and the execute tool's Monty workers (each a guard and a `monty` worker)
        assert sum("mcp_server.py" in c for c in children.values()) >= 1, children
        assert sum("time.sleep(3600)" in c for c in children.values()) >= 1, children
        assert sum(c.split(" ", 1)[0].endswith("/monty") for c in children.values()) >= 2, children
        workers = [pid for pid, c in children.items() if c.split(" ", 1)[0].endswith("/monty")]

        def burning() -> bool:  # a worker has used a second of CPU (the loop runs; no rate is measured)
            with contextlib.suppress(psutil.NoSuchProcess):
                return any(sum(psutil.Process(pid).cpu_times()[:2]) > 1.0 for pid in workers)
            return False

        wait_until(burning, f"a Monty worker burns CPU: {children}", timeout=120)
        if end == "sigkill":
            os.kill(kernel, signal.SIGKILL)
        elif end == "restart":
            fe.km.restart_kernel(now=False)
        else:
            fe.kc.stop_channels()
            fe.km.shutdown_kernel(now=False)
            stopped = True
        wait_until(lambda: not any(alive(pid) for pid in children),
                   f"every process the kernel started is gone: {({p: c for p, c in children.items() if alive(p)})}",
                   timeout=GONE_WITHIN_S)
    finally:
        if not stopped:
            stop_frontend(fe)

