"""Small asyncio helpers shared by the engine, the session and the panel.

Every overridable method and hook may be sync or async (as in Think); `maybe_await` is the one
place that knows how to call both.
"""

from __future__ import annotations

import atexit
import contextlib
import inspect
from typing import Any


async def maybe_await(value: Any) -> Any:
    """`await value` when it is awaitable, else `value` itself."""
    return await value if inspect.isawaitable(value) else value


async def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a sync or async function and return its result."""
    return await maybe_await(fn(*args, **kwargs))


async def call_method(obj: Any, method: str, *args: Any) -> None:
    """Call `obj.method(*args)` (sync or async) when `obj` has it, else nothing: a callback object
    implements the methods it wants (`run_turn`'s and `sub_agent`'s `on_start`, `on_event`, ...)."""
    fn = getattr(obj, method, None)
    if fn is not None:
        await maybe_await(fn(*args))


def close_unawaited(value: Any) -> None:
    """Close a coroutine a sync caller cannot await (avoids "never awaited" warnings)."""
    if inspect.iscoroutine(value):
        value.close()


_thread = __import__("threading").local()


def script_loop() -> Any:
    """The event loop synchronous calls (`agent.run`, a stepper's `next`) drive outside a running
    loop: one per thread, kept, so turns of one agent started from a script share one queue."""
    import asyncio

    loop = getattr(_thread, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread.loop = asyncio.new_event_loop()
        atexit.register(_close_script_loop, loop)
    return loop


def task_loop() -> Any:
    """The loop background tasks (recovery, submissions, schedules, MCP connections) go on: the
    running loop (a kernel's, an `asyncio.run`), else this thread's `script_loop()`."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return script_loop()


def _close_script_loop(loop: Any) -> None:
    """At exit, cancel what a script left on its loop (a recovery or schedule task it never drove)
    so nothing is reported "destroyed but pending" while the interpreter shuts down."""
    import asyncio

    if loop.is_closed() or loop.is_running():
        return
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    with contextlib.suppress(Exception):
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.close()
