"""Helpers to run a real JupyterLab / Notebook 7 and drive it with Playwright.

The recipe, flags and waits come from docs/platform-facts.md §3: an isolated server on
127.0.0.1 with no token and no outbound calls, Debian chromium through
``executable_path``, and ``window.jupyterapp`` exposed so tests can run
commands without returning their promises.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("THINK_NB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]

KERNEL_IDLE = (
    "() => window.jupyterapp?.shell?.currentWidget?.sessionContext?.session?.kernel?.status"
    " === 'idle'"
)

_APPS = {
    "lab": {
        "module": "jupyterlab",
        "flags": ["--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
                  "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                  "--LabApp.extension_manager=readonly"],
        "url": "/lab/tree/{path}?reset",
    },
    "notebook": {
        "module": "notebook",
        "flags": ["--JupyterNotebookApp.expose_app_in_browser=True"],
        "url": "/notebooks/{path}",
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class JupyterServer:
    """One Jupyter server process ("lab" or "notebook") with its own config/data dirs."""

    app: str
    base_dir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    @property
    def root(self) -> Path:
        return self.base_dir / "root"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "server.log"

    def env(self) -> dict[str, str]:
        d = self.base_dir
        env = {k: v for k, v in os.environ.items() if not k.startswith("THINK_NB_")}
        env.update(
            JUPYTER_CONFIG_DIR=str(d / "config"), JUPYTER_DATA_DIR=str(d / "data"),
            JUPYTER_RUNTIME_DIR=str(d / "runtime"), IPYTHONDIR=str(d / "ipython"),
            JUPYTER_PLATFORM_DIRS="1", LITELLM_LOCAL_MODEL_COST_MAP="True",
            THINK_NB_DIR=str(d / "think"), THINK_NB_ALLOW_MODEL_REQUESTS="0",
            PYTHONPATH=os.pathsep.join(p for p in [str(REPO_ROOT), env.get("PYTHONPATH")] if p),
        )
        return env

    def start(self, timeout: float = 60) -> JupyterServer:
        spec = _APPS[self.app]
        self.root.mkdir(parents=True, exist_ok=True)
        (self.base_dir / "think").mkdir(exist_ok=True)
        labconfig = self.base_dir / "config" / "labconfig"
        labconfig.mkdir(parents=True, exist_ok=True)
        (labconfig / "page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        # Run with this interpreter so the kernelspec's `python` resolves to the same venv.
        cmd = [
            sys.executable, "-m", spec["module"], "--no-browser", "--allow-root",
            "--ip=127.0.0.1", f"--port={self.port}", "--ServerApp.port_retries=0",
            "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={self.root}", *spec["flags"],
        ]
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                                     cwd=self.root, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.app} server exited:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"{self.app} server not ready in {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    # -- REST ---------------------------------------------------------------
    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.url}{path}", method=method, data=data,
                                     headers={"Content-Type": "application/json"} if data else {})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def delete_sessions(self) -> None:
        """Kernels outlive pages: end them so the next test starts clean."""
        for s in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{s['id']}")

    def start_kernel_for(self, path: str) -> None:
        """A fresh kernel session for the notebook at `path`, before any page opens it."""
        self.api("POST", "/api/sessions", {"path": path, "name": path, "type": "notebook",
                                           "kernel": {"name": "python3"}})

    def notebook_url(self, path: str) -> str:
        return self.url + _APPS[self.app]["url"].format(path=path)

    def write_notebook(self, name: str, cells: list[str]) -> str:
        """Write a notebook of code cells into the server root; return its path there."""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
        path = f"{name}.ipynb"
        nbformat.write(nb, self.root / path)
        return path


# -- page helpers (Playwright sync API) -------------------------------------

def wait_kernel_idle(page: Any, timeout_ms: float = 60_000) -> None:
    page.wait_for_function(KERNEL_IDLE, timeout=timeout_ms)


def run_all(page: Any) -> None:
    """Run every cell. The braces matter: returning the promise would wait for all cells."""
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def run_cell(page: Any, index: int) -> None:
    """Select cell ``index`` and run it (without waiting for it to finish)."""
    page.evaluate(
        """(i) => {
            const nb = window.jupyterapp.shell.currentWidget.content;
            nb.activeCellIndex = i;
            nb.deselectAll();
            window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )


def menu(page: Any, top: str, item: str) -> None:
    """Open menu `top` of the menu bar and click `item` (real clicks)."""
    page.locator(".lm-MenuBar-item", has_text=top).first.click()
    page.locator(".lm-Menu-item:visible", has_text=item).first.click()


def save(page: Any) -> None:
    """Save the notebook (so a reload raises no 'unsaved changes' prompt)."""
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")


def open_notebook(page: Any, server: JupyterServer, path: str) -> None:
    page.goto(server.notebook_url(path))
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    wait_kernel_idle(page)
