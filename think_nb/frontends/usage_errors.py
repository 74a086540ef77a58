"""A `UserError` raised in a notebook cell shows as its one-line message, not a traceback.

think_nb's usage errors (`think_nb.errors.UserError`) say in one line what was wrong and how to
fix it ("Tool call 'call_1' is 'output-denied', not waiting for approval; ..."). The traceback
under it is think_nb's own frames, which a person in front of a class does not need. `%load_ext
think_nb` registers `show_user_error` with IPython's `set_custom_exc` for `UserError` only: every
other exception keeps its full traceback, and `%xmode Verbose` brings back the full traceback of a
`UserError` too. A custom handler the user registered first is left in place.
"""

from __future__ import annotations

from typing import Any

from think_nb.errors import UserError


def show_user_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> Any:
    """IPython's custom-exception handler: the exception line alone (`UserError: ...`), or the
    whole traceback under `%xmode Verbose`. Returns IPython's structured traceback."""
    verbose = getattr(getattr(shell, "InteractiveTB", None), "mode", "") == "Verbose"
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset, exception_only=not verbose)
    return None


def install(shell: Any) -> None:
    """Register `show_user_error` for `UserError` on `shell`, unless another handler is set."""
    if not getattr(shell, "custom_exceptions", ()):
        shell.set_custom_exc((UserError,), show_user_error)
