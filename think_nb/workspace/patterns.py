"""Patterns a model writes, run in linear time: RE2 (google-re2) instead of Python's `re`.

A model's regular expression (`grep`'s query) or glob (`find`, `grep`'s `include`) is untrusted
input: Python's backtracking `re` takes exponential time on `(a+)+$` against thirty `a`s and a
`!` (98 s measured, holding the GIL, so the kernel froze and Stop waited), and a glob such as
`*a*a*a*a*a*b` is polynomial with a high degree. RE2 matches in time linear in the text, always.
Its syntax is Python's minus look-around and back-references; a pattern using them is refused
with a `PatternError` that says so.

`google-re2` is imported on first use (its native module takes ~0.1 s to load), and logs nothing
to the kernel's stderr (`log_errors` off).
"""

from __future__ import annotations

import functools
from typing import Any


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message names the pattern and why."""


@functools.cache
def _re2() -> Any:
    import re2

    return re2


def escape(text: str) -> str:
    """`text` as a pattern matching itself literally."""
    return str(_re2().escape(text))


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Any:
    """A compiled RE2 pattern (`.search(text)`, `.fullmatch(text)` as with `re`).

    Args:
        pattern: RE2 syntax (Python's, without look-around and back-references).
        ignore_case: match letters of either case.

    Raises:
        PatternError: the pattern does not compile; the message includes RE2's reason.
    """
    re2 = _re2()
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        if _python_only(pattern):
            reason += " (patterns are RE2 syntax: no look-around or back-references)"
        raise PatternError(reason) from None


def _python_only(pattern: str) -> bool:
    """Whether Python's `re` would take `pattern` (so what RE2 refuses is a feature it lacks)."""
    import re

    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
