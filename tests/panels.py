"""Helpers for the panel tests (test_widget.py, test_panel_flows.py), which drive real `Think`
agents on `ScriptedModel`s through the frames a front end sends (helpers_comm.from_js) and read
the frames the panel sent back (helpers_comm.custom_msgs)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from helpers_comm import custom_msgs, open_state
from think_nb import tool
from think_nb.panel import protocol
from think_nb.panel.batcher import merge_chunk


def user_msg(text: str, id: str = "u1") -> dict:
    return {"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}


USER = user_msg("What is 2 + 40?")


def chat_request(request_id: str, message: dict = USER, **extra: Any) -> dict:
    """The `use_chat_request` frame a panel sends for a new user message."""
    return {"type": protocol.USE_CHAT_REQUEST, "id": request_id, "messages": [message],
            "trigger": protocol.SUBMIT_MESSAGE, **extra}


def responses(panel: Any, request_id: str | None = None) -> list[dict]:
    """The `use_chat_response` frames the panel sent (of one turn if `request_id` is given)."""
    return [m for m in custom_msgs(panel) if m["type"] == protocol.USE_CHAT_RESPONSE
            and (request_id is None or m["id"] == request_id)]


def chunks_of(frames: list[dict]) -> list[dict]:
    return [c for f in frames for c in f["chunks"]]


def streamed_text(frames: list[dict]) -> str:
    return "".join(c["delta"] for c in chunks_of(frames) if c["type"] == "text-delta")


def chunk_types(frames: list[dict]) -> list[str]:
    """Chunk types across frames, a run of one type counted once (deltas split by flushes)."""
    types = [c["type"] for c in chunks_of(frames)]
    return [t for i, t in enumerate(types) if i == 0 or types[i - 1] != t]


def merged(chunks: list[dict]) -> list[dict]:
    """`chunks` with consecutive deltas of one part joined (what a replay or a batch holds)."""
    out: list[dict] = []
    for chunk in chunks:
        merge_chunk(out, chunk)
    return out


def apply_patch(view: list[dict], frame: dict) -> list[dict]:
    """`view` (a suffix of the branch a view holds) after a `transcript_patch` (js/src/transcript.ts, in Python)."""
    ids = [m["id"] for m in view]
    after = frame["after"]
    kept = view[:ids.index(after) + 1] if after is not None and after in ids else []
    new = {m["id"]: m for m in frame["updated"]}
    return [new.get(m["id"], m) for m in kept] + list(frame["messages"])


def view_transcript(panel: Any) -> list[dict]:
    """What a view that opened with `panel` holds after every `transcript_patch` sent to all its views:
    the `messages` trait of its `comm_open`, then each patch in order (each applies to the revision
    the one before made)."""
    state = open_state(panel)
    view, rev = list(state["messages"]), state["transcript"]["rev"]
    for frame in custom_msgs(panel):
        if frame["type"] == protocol.TRANSCRIPT_PATCH and not frame.get("probeId"):
            assert frame["base"] == rev, f"patch {frame['rev']} applies to {frame['base']}, the view is at {rev}"
            view, rev = apply_patch(view, frame), frame["rev"]
    return view


def patches(panel: Any) -> list[dict]:
    """The `transcript_patch` frames sent to every view of `panel`."""
    return [m for m in custom_msgs(panel) if m["type"] == protocol.TRANSCRIPT_PATCH and not m.get("probeId")]


def statuses(panel: Any) -> list[str]:
    """Every value the panel's `status` trait was synced to, in order."""
    from helpers_comm import state_updates

    return [s["status"] for s in state_updates(panel) if "status" in s]


async def until(predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> None:
    """Poll `predicate` (every 2 ms) until it is true; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.002)


class Probe:
    """An agent listener that keeps every chunk of every turn as the engine broadcast it."""

    def __init__(self) -> None:
        self.chunks: dict[str, list[dict]] = {}
        self.first_at: float | None = None  # time.monotonic() of the first chunk

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.chunks.setdefault(request_id, []).append(chunk)


class Holds:
    """A tool `hold` whose every call waits until the test releases it: it keeps a turn running
    (streaming, with what streamed so far recorded) at a known point while the test acts."""

    def __init__(self) -> None:
        self.events: list[asyncio.Event] = []
        self.released = 0

        @tool
        async def hold() -> str:
            """Wait until released."""
            event = asyncio.Event()
            self.events.append(event)
            await event.wait()
            return "released"

        self.tool = hold

    @property
    def waiting(self) -> int:
        """Calls waiting now."""
        return len(self.events) - self.released

    def release(self) -> None:
        self.events[self.released].set()
        self.released += 1
