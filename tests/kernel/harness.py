"""A real ipykernel over ZMQ with the test playing the front end (docs/platform-facts.md §4b).

:class:`FakeFrontend` runs cells, reads IOPub, and sends comm messages the way
the chat panel's ``model.send`` would. Everything read from IOPub is kept in
``frontend.log`` so a test can look back at frames that arrived while it was
waiting for something else.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

REPO_ROOT = Path(__file__).resolve().parents[2]
WIDGET_TARGET = "jupyter.widget"
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

Msg = dict[str, Any]


def kernel_env(think_dir: Path, **extra: str) -> dict[str, str]:
    """The environment a test kernel runs in: offline litellm, isolated storage, repo importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINK_NB_")}
    pythonpath = [str(REPO_ROOT), env.get("PYTHONPATH", "")]
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in pythonpath if p),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        THINK_NB_DIR=str(think_dir),
        THINK_NB_ALLOW_MODEL_REQUESTS="0",
        JUPYTER_PLATFORM_DIRS="1",
        IPYTHONDIR=str(think_dir / ".ipython"),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    env.update(extra)
    return env


def wait_until(condition: Callable[[], object], what: str, timeout: float = 120.0) -> None:
    """Wait until ``condition()`` is true, checking every 50 ms: for what no IOPub message announces
    (a file the kernel's code writes, rows another process commits, a process that exits).
    ``timeout`` only bounds a failure: ``AssertionError("not true after {timeout} s: {what}")``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true after {timeout} s: {what}")
        time.sleep(0.05)


def _write_kernelspec(folder: Path) -> KernelSpecManager:
    """A kernelspec pinned to this interpreter, so no user-installed `python3` spec wins."""
    spec_dir = folder / "kernels" / "think-nb-test"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher",
                 "-f", "{connection_file}"],
        "display_name": "think_nb test kernel",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return KernelSpecManager(kernel_dirs=[str(folder / "kernels")])


@dataclass
class ExecResult:
    """What one ``execute`` produced on IOPub, up to the cell's ``idle``."""

    msg_id: str
    reply: Msg | None
    msgs: list[Msg] = field(default_factory=list)
    duration_s: float = 0.0

    def _of(self, msg_type: str) -> list[Msg]:
        return [m for m in self.msgs if m["msg_type"] == msg_type]

    @property
    def stdout(self) -> str:
        return "".join(m["content"]["text"] for m in self._of("stream")
                       if m["content"]["name"] == "stdout")

    @property
    def stderr(self) -> str:
        return "".join(m["content"]["text"] for m in self._of("stream")
                       if m["content"]["name"] == "stderr")

    @property
    def errors(self) -> list[Msg]:
        """``error`` messages' contents: ``{ename, evalue, traceback}``."""
        return [m["content"] for m in self._of("error")]

    @property
    def comm_opens(self) -> list[Msg]:
        return [m["content"] for m in self._of("comm_open")]

    @property
    def displays(self) -> list[Msg]:
        return [m["content"] for m in self._of("display_data")]

    def check(self) -> ExecResult:
        """Fail with the kernel's traceback if the cell raised."""
        if self.errors:
            err = self.errors[0]
            tb = "\n".join(err.get("traceback", []))
            raise AssertionError(f"cell raised {err['ename']}: {err['evalue']}\n{tb}")
        return self


class FakeFrontend:
    """Drive a kernel the way JupyterLab and the chat panel would."""

    def __init__(self, km: KernelManager, kc: Any) -> None:
        self.km = km
        self.kc = kc
        self.log: list[Msg] = []

    # -- IOPub -------------------------------------------------------------
    def _pump(self, timeout: float) -> Msg | None:
        try:
            msg = self.kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            return None
        self.log.append(msg)
        return msg

    def drain(self, quiet: float = 0.2) -> None:
        """Read IOPub until nothing arrives for ``quiet`` seconds."""
        while self._pump(quiet) is not None:
            pass

    def wait_for(
        self,
        predicate: Callable[[Msg], bool],
        timeout: float = 30.0,
        since: int = 0,
    ) -> Msg:
        """First message in ``log[since:]`` (read more as needed) matching ``predicate``."""
        checked = since
        deadline = time.monotonic() + timeout
        while True:
            for msg in self.log[checked:]:
                if predicate(msg):
                    return msg
            checked = len(self.log)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                kinds = [m["msg_type"] for m in self.log[since:]][-30:]
                raise TimeoutError(f"no matching IOPub message in {timeout}s; last: {kinds}")
            self._pump(min(remaining, 0.2))

    # -- shell -------------------------------------------------------------
    def execute(self, code: str, timeout: float = 60.0) -> ExecResult:
        """Run ``code`` and collect its IOPub traffic until the kernel goes idle for it."""
        start = len(self.log)
        t0 = time.monotonic()
        msg_id = self.kc.execute(code)
        self.wait_for(
            lambda m: m["msg_type"] == "status"
            and m["parent_header"].get("msg_id") == msg_id
            and m["content"]["execution_state"] == "idle",
            timeout=timeout,
            since=start,
        )
        duration = time.monotonic() - t0
        reply = self._shell_reply(msg_id, timeout=5)
        return ExecResult(msg_id, reply, self.log[start:], duration)

    def _shell_reply(self, msg_id: str, timeout: float) -> Msg | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = self.kc.get_shell_msg(timeout=deadline - time.monotonic())
            except queue.Empty:
                return None
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply
        return None

    def send_custom(self, comm_id: str, content: dict) -> None:
        """What the panel's ``model.send(content)`` puts on the wire."""
        self._send_comm(comm_id, {"method": "custom", "content": content})

    def set_state(self, comm_id: str, **state: Any) -> None:
        """What the panel's ``model.set(...); model.save_changes()`` puts on the wire."""
        self._send_comm(comm_id, {"method": "update", "state": state, "buffer_paths": []})

    def _send_comm(self, comm_id: str, data: dict) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)

    # -- widgets -----------------------------------------------------------
    def anywidget_opens(self, since: int = 0) -> list[Msg]:
        """``comm_open`` contents of anywidget models (not their Layout children)."""
        return [
            m["content"] for m in self.log[since:]
            if m["msg_type"] == "comm_open"
            and m["content"].get("target_name") == WIDGET_TARGET
            and m["content"]["data"]["state"].get("_model_module") == "anywidget"
        ]

    def custom_frames(self, comm_id: str, since: int = 0) -> list[dict]:
        """Custom messages the kernel sent to one widget, in order."""
        return [d["content"] for d in self._comm_data(comm_id, since) if d.get("method") == "custom"]

    def state_updates(self, comm_id: str, since: int = 0) -> list[dict]:
        """Trait syncs the kernel sent to one widget, in order."""
        return [d["state"] for d in self._comm_data(comm_id, since) if d.get("method") == "update"]

    def _comm_data(self, comm_id: str, since: int) -> list[dict]:
        return [
            m["content"]["data"] for m in self.log[since:]
            if m["msg_type"] == "comm_msg" and m["content"].get("comm_id") == comm_id
        ]

    def opened_state(self, comm_id: str) -> dict:
        """The state the kernel sent with the widget's ``comm_open``."""
        for m in self.log:
            if m["msg_type"] == "comm_open" and m["content"].get("comm_id") == comm_id:
                return m["content"]["data"]["state"]
        raise AssertionError(f"no comm_open for {comm_id}")

    def view_transcript(self, comm_id: str, state: dict | None = None, since: int = 0) -> list[dict]:
        """What a chat panel view that opened with `state` (default: the ``comm_open`` state) holds
        after the ``transcript_patch`` frames sent to every view since `since` (tests/panels.py
        `apply_patch`, the reducer of js/src/transcript.ts in Python); each must follow the revision."""
        from panels import apply_patch

        state = state if state is not None else self.opened_state(comm_id)
        view, rev = list(state["messages"]), state["transcript"]["rev"]
        for frame in self.custom_frames(comm_id, since):
            if frame.get("type") == "transcript_patch" and not frame.get("probeId"):
                if frame["base"] != rev:
                    continue  # sent before the state was read (a view opened later)
                view, rev = apply_patch(view, frame), frame["rev"]
        return view

    @staticmethod
    def is_custom(comm_id: str, predicate: Callable[[dict], bool]) -> Callable[[Msg], bool]:
        """A ``wait_for`` predicate on custom frames sent to ``comm_id``."""
        def match(m: Msg) -> bool:
            if m["msg_type"] != "comm_msg" or m["content"].get("comm_id") != comm_id:
                return False
            data = m["content"]["data"]
            return data.get("method") == "custom" and predicate(data["content"])
        return match

    @staticmethod
    def is_update(comm_id: str, predicate: Callable[[dict], bool]) -> Callable[[Msg], bool]:
        """A ``wait_for`` predicate on trait syncs sent to ``comm_id``."""
        def match(m: Msg) -> bool:
            if m["msg_type"] != "comm_msg" or m["content"].get("comm_id") != comm_id:
                return False
            data = m["content"]["data"]
            return data.get("method") == "update" and predicate(data["state"])
        return match


def start_frontend(workdir: Path, **env: str) -> FakeFrontend:
    """Start a kernel in ``workdir`` (also its THINK_NB_DIR) and return its front end."""
    workdir.mkdir(parents=True, exist_ok=True)
    ksm = _write_kernelspec(workdir / "jupyter")
    km = KernelManager(kernel_name="think-nb-test", kernel_spec_manager=ksm)
    km.start_kernel(env=kernel_env(workdir, **env), cwd=str(workdir))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except Exception:
        stop_frontend(FakeFrontend(km, kc))
        raise
    fe = FakeFrontend(km, kc)
    fe.drain(0.1)
    return fe


def stop_frontend(fe: FakeFrontend) -> None:
    """Shut the kernel down (and kill it if it will not go)."""
    try:
        fe.kc.stop_channels()
    finally:
        fe.km.shutdown_kernel(now=False)
