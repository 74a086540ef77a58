"""Calling an action's function once: with its context, under its timeout, off the event loop.

A sync function runs on a worker thread (the kernel's loop never waits for it); an async one is
awaited; a returned awaitable is awaited and an async iterable's last value is the result, as
for tools. Past `action.timeout` seconds the call's `signal` is aborted and `TimeoutError`
raised (a sync function's thread cannot be stopped: it runs on, its result is dropped); a
stopped turn aborts the signal too and cancels the call.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from think_nb.actions.context import ActionContext
from think_nb.actions.output import prepare


async def invoke(action: Any, kwargs: dict[str, Any], ctx: ActionContext) -> Any:
    """Run `action.function` with the validated input `kwargs`; returns its prepared output
    (`think_nb.actions.output.prepare`). Raises what the function raised, `TimeoutError`, or
    `CancelledError` (the turn was stopped)."""
    arguments = dict(kwargs)
    if action.context_param:
        arguments[action.context_param] = ctx
    task = asyncio.ensure_future(_contained(action.function, arguments))
    try:
        done, _ = await asyncio.wait({task}, timeout=action.timeout)
    except asyncio.CancelledError:  # the turn was stopped
        _stop(task, ctx, "the turn was stopped")
        raise
    if not done:
        _stop(task, ctx, "timed out")
        raise TimeoutError(f"Action timed out after {action.timeout:g} s")
    value, failure = task.result()
    if failure is not None:
        raise failure
    return prepare(value)


def _stop(task: asyncio.Future, ctx: ActionContext, reason: str) -> None:
    """Abort the call's signal first (its code may read it), then cancel its task."""
    ctx.abort(reason)
    task.cancel()
    task.add_done_callback(_retrieve)


def _retrieve(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # read: nothing reported as never retrieved for a call given up on


async def _contained(function: Any, arguments: dict[str, Any]) -> tuple[Any, BaseException | None]:
    """`(value, None)` or `(None, what it raised)`: nothing but a cancellation leaves the call's task
    (a `SystemExit` or `KeyboardInterrupt` leaving a task would stop the kernel's event loop)."""
    try:
        return await _call(function, arguments), None
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - raised again in the turn's task, by `invoke`
        return None, exc


async def _call(function: Any, arguments: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(function):
        value = await function(**arguments)
    else:
        value = await asyncio.to_thread(function, **arguments)
    if inspect.isawaitable(value):
        value = await value
    if hasattr(type(value), "__aiter__"):
        last = None
        async for last in value:  # noqa: B007 - the last value is the result
            pass
        value = last
    return value
