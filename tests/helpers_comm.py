"""Record and fake widget comm traffic in-process, without a kernel or a browser.

Outside a kernel ``comm.create_comm`` returns a no-op ``DummyComm``; the
``recording_comm`` fixture (tests/conftest.py) swaps in :class:`RecordingComm`
so a test can read what a widget sent and play the front end's part.
See docs/platform-facts.md §4(a).
"""

from __future__ import annotations

from typing import Any

import comm
from comm.base_comm import BaseComm


class RecordingComm(BaseComm):
    """A comm that keeps every message it would have published."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[tuple[str, dict | None, list | None]] = []
        super().__init__(*args, **kwargs)

    def publish_msg(  # BaseComm's contract
        self,
        msg_type: str,
        data: dict | None = None,
        metadata: dict | None = None,
        buffers: list | None = None,
        **keys: Any,
    ) -> None:
        self.sent.append((msg_type, data, buffers))


def install(monkeypatch: Any) -> None:
    """Make every widget created from now on use a :class:`RecordingComm`.

    ipykernel's `ipkernel` module sets `comm.create_comm` when it is first imported; think_nb
    imports it lazily (e.g. during a turn), so it is imported here first, or a first import inside
    the test would undo the patch (seen under pytest-xdist, where a worker's file order differs)."""
    import ipykernel.ipkernel  # noqa: F401 - for its side effect on comm.create_comm

    monkeypatch.setattr(comm, "create_comm", RecordingComm)


def _sent(w: Any) -> list[tuple[str, dict | None, list | None]]:
    if not isinstance(w.comm, RecordingComm):
        raise TypeError(
            "widget has no RecordingComm; use the `recording_comm` fixture "
            "before creating the widget"
        )
    return w.comm.sent


def custom_msgs(w: Any) -> list[dict]:
    """Contents of every custom message the widget sent (``widget.send``), in order."""
    return [
        data["content"]
        for _, data, _ in _sent(w)
        if data and data.get("method") == "custom"
    ]


def state_updates(w: Any) -> list[dict]:
    """Every trait sync the widget sent after ``comm_open``, in order."""
    return [
        data["state"]
        for _, data, _ in _sent(w)
        if data and data.get("method") == "update"
    ]


def open_state(w: Any) -> dict:
    """The full state the widget sent with ``comm_open``."""
    for msg_type, data, _ in _sent(w):
        if msg_type == "comm_open" and data:
            return data.get("state", {})
    raise AssertionError("widget never sent comm_open")


def from_js(w: Any, content: dict) -> None:
    """Deliver ``content`` to the widget as if the front end called ``model.send``."""
    w.comm.handle_msg(
        {
            "content": {
                "comm_id": w.comm.comm_id,
                "data": {"method": "custom", "content": content},
            },
            # Required: without it ipywidgets raises KeyError, which it swallows.
            "buffers": [],
        }
    )


def js_sets(w: Any, **state: Any) -> None:
    """Apply ``state`` as if the front end did ``model.set(...)`` + ``save_changes()``."""
    w.comm.handle_msg(
        {
            "content": {
                "comm_id": w.comm.comm_id,
                "data": {"method": "update", "state": state, "buffer_paths": []},
            },
            "buffers": [],
        }
    )
