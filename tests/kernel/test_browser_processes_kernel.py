"""No browser process outlives its kernel (issue 31 §2), counted by PID.

A real kernel runs an agent's turn whose `browser_markdown` call is still loading a page that
never finishes (a server on 127.0.0.1 that sends half a page and waits), so the browser is busy.
The test collects every process of the browser — the kernel's descendants (Playwright's driver,
the guard, Chromium and its zygotes, renderers, GPU and network processes) and every process whose
environment carries `THINK_NB_BROWSER_OWNER=<kernel pid>` (Chromium's crash handler double-forks
out of the kernel's tree) — then ends the kernel by SIGKILL (alone, or with Playwright's driver at
the same instant) or by a normal shutdown, and waits until every one of them is gone (a zombie
counts as gone). (Chromium also exits by itself when its DevTools pipe to the driver closes; the
process guard is there for a Chromium that does not.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from harness import start_frontend, stop_frontend, wait_until
from test_processes_kernel import GONE_WITHIN_S, alive, descendants

release = threading.Event()


class Hanging(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body><h1>Loading</h1>")
        self.wfile.flush()
        Path(self.server.marker).write_text("loading")  # type: ignore[attr-defined]
        release.wait(300)


@pytest.fixture
def hanging(tmp_path: Path) -> Iterator[str]:
    release.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hanging)
    httpd.daemon_threads = True
    httpd.marker = str(tmp_path / "loading")  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def setup_code(url: str) -> str:
    port = url.rsplit(":", 1)[1]
    return textwrap.dedent(f'''
        import asyncio, json, os
        from pathlib import Path
        from think_nb import Think
        from think_nb.browser import browser_tools
        from think_nb.testing import ScriptedModel as S

        script = S([[S.tool_call("browser_markdown", {{"url": "{url}/slow"}})], [S.text("never")]])

        class Surfer(Think):
            include_workspace_tools = False
            def get_model(self):
                return script.model
            def get_tools(self):
                return browser_tools(allow_hosts=["127.0.0.1:{port}"], allow_private=["127.0.0.1"],
                                     timeout=600)

        agent = Surfer("surfer", db=Path("surfer.sqlite"))
        turn = asyncio.ensure_future(agent.send("read it"))
        print(json.dumps({{"pid": os.getpid()}}))
        ''')


def browser_processes(kernel: int) -> dict[int, str]:
    """The kernel's descendants, and every process marked with the kernel's pid (THINK_NB_BROWSER_OWNER)."""
    found = descendants(kernel)
    for proc in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("THINK_NB_BROWSER_OWNER") == str(kernel):
                found[proc.pid] = " ".join(proc.cmdline())[:160]
    return found


@pytest.mark.parametrize("end", ["sigkill", "sigkill-driver-too", "shutdown"])
def test_no_browser_process_survives_its_kernel(tmp_path: Path, hanging: str, end: str) -> None:
    fe = start_frontend(tmp_path)
    stopped = False
    try:
        info = json.loads(fe.execute(setup_code(hanging), timeout=180).check().stdout.strip().splitlines()[-1])
        kernel = info["pid"]
        wait_until(lambda: (tmp_path / "loading").exists(), "the browser is loading the page", timeout=120)
        procs = browser_processes(kernel)
        commands = list(procs.values())
        assert sum("playwright/driver/node" in c for c in commands) == 1, procs  # Playwright's driver
        assert sum("guard-chromium" in c for c in commands) == 1, procs  # the guard over chromium
        assert sum("--type=renderer" in c for c in commands) >= 1, procs
        marked = [pid for pid in procs if pid not in descendants(kernel)]
        if end.startswith("sigkill"):
            if end == "sigkill-driver-too":  # as an OOM kill or a `kill -9` of the kernel's process group would
                for pid, command in procs.items():
                    if "playwright/driver/node" in command:
                        os.kill(pid, signal.SIGKILL)
            os.kill(kernel, signal.SIGKILL)
        else:
            fe.kc.stop_channels()
            fe.km.shutdown_kernel(now=False)
            stopped = True
        wait_until(lambda: not any(alive(pid) for pid in procs),
                   f"every browser process is gone: {({p: c for p, c in procs.items() if alive(p)})} "
                   f"(outside the kernel's tree: {marked})", timeout=GONE_WITHIN_S)
    finally:
        if not stopped:
            stop_frontend(fe)
