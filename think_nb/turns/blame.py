"""Who failed: the exception that ended a turn, as the error the turn reports.

The places that raise mark their failures (see `think_nb.errors` for the three message forms):
the model call (`think_nb.models.stream.stream_step`) raises `ModelError`, user code runs under
`think_nb.turns.hooks.user_code` and raises `HookError`. What reaches the turn unmarked was
raised by think_nb itself and becomes an `InternalError` naming the innermost think_nb function
it passed through. `UserError` (bad input to think_nb's API) keeps its own message.
"""

from __future__ import annotations

import os
from typing import Any

import think_nb
from think_nb.errors import HookError, InternalError, ThinkError

_PACKAGE = os.path.dirname(os.path.abspath(think_nb.__file__)) + os.sep


def classify(exc: BaseException, agent: Any) -> ThinkError:
    """The error a turn of `agent` reports for `exc`: a `ThinkError` as it is (a `HookError` that
    did not know its class names `agent`'s, `HookError.qualify`), anything else an `InternalError`
    whose `__cause__` is `exc`."""
    if isinstance(exc, HookError):
        return exc.qualify(agent)
    if isinstance(exc, ThinkError):
        return exc
    return InternalError(where(exc), exc)


def where(exc: BaseException) -> str:
    """The innermost function of the think_nb package in `exc`'s traceback, as
    `module.qualname` (e.g. `think_nb.turns.runner.Turn.emit`), or `a turn` without one."""
    found = "a turn"
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
            found = f"{frame.f_globals.get('__name__', 'think_nb')}.{frame.f_code.co_qualname}"
        tb = tb.tb_next
    return found
