"""What a turn waits for before its first token: the seam that says so to the panels and the trace.

A turn's task installs a reporter (`reporting(fn)`); code on the model path calls `report(detail)`
when it starts waiting for something slow and `report(None)` when the wait is over:

    "loading litellm…"        `litellm_env.aget_litellm` while the import runs on its thread
    "loading the local model…" `models/local.py` while the GGUF file is loaded (first call)
    "thinking — choosing a tool…" `models/local.py` while the embedded model's non-streamed call
                              with tools offered runs (llama-cpp cannot stream it; many seconds)
    "reading the prompt…"     `models/local.py` until the first token of a streamed call (the
                              embedded model evaluates the whole prompt before its first token)
    "waiting for MCP…"         hook point for MCP servers still connecting (no MCP yet)

The reporter is a context variable, so only the turn that waits reports, and code that runs
outside a turn (a plain `await aget_litellm()`) reports nothing. A reporter that raises is never
allowed to break the wait (it is logged).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar

_log = logging.getLogger("think_nb")
Reporter = Callable[[str | None], None]
_reporter: ContextVar[Reporter | None] = ContextVar("think_nb_progress", default=None)

LOADING_LITELLM = "loading litellm…"
LOADING_LOCAL_MODEL = "loading the local model…"
WAITING_FOR_MCP = "waiting for MCP…"
CHOOSING_TOOL = "thinking — choosing a tool…"
READING_PROMPT = "reading the prompt…"


def report(detail: str | None) -> None:
    """Tell the current turn what it waits for (`detail`, one short line), or that it stopped
    waiting (None). A no-op outside a turn."""
    reporter = _reporter.get()
    if reporter is None:
        return
    try:
        reporter(detail)
    except Exception:  # noqa: BLE001 - a view's failure must not break the model call
        _log.exception("progress reporter failed for %r", detail)


@contextlib.contextmanager
def reporting(reporter: Reporter) -> Iterator[None]:
    """Install `reporter(detail | None)` for the code run inside the block (this task only)."""
    token = _reporter.set(reporter)
    try:
        yield
    finally:
        _reporter.reset(token)


@contextlib.contextmanager
def waiting(detail: str) -> Iterator[None]:
    """`report(detail)` for the block, then `report(None)` (also when it raises)."""
    report(detail)
    try:
        yield
    finally:
        report(None)
