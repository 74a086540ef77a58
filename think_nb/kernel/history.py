"""`notebook_history`: the cells run so far in this kernel, from IPython's input/output history.

    notebook_history(shell, last=10)   # {"type": "kernel-history", "cells": [{n, source, result}], "text"}

The sources are `history_manager.input_hist_raw` (what the person typed, `In`), the results
`history_manager.output_hist` (`Out`: a cell's last-expression value), read from the history
manager, so a notebook that rebinds `In` or `Out` changes nothing. Each source is cut to
`SOURCE_CHARS`, each result to a bounded repr of `RESULT_CHARS`; the whole text to `HISTORY_TOKENS`
tokens, oldest cells dropped first.
"""

from __future__ import annotations

import reprlib
from typing import Any

SOURCE_CHARS = 2_000
RESULT_CHARS = 300
HISTORY_TOKENS = 3_000
MAX_LAST = 100

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = RESULT_CHARS
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = _REPR.maxset = 10


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _result(value: Any) -> str:
    try:
        if type(value).__module__.split(".")[0] in ("pandas", "numpy") and hasattr(value, "shape"):
            return f"{type(value).__name__} of shape {tuple(value.shape)}"
        return _cut(" ".join(_REPR.repr(value).split()), RESULT_CHARS)
    except Exception as exc:  # noqa: BLE001 - a user object's __repr__ may raise anything
        return f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"


def notebook_history(shell: Any, last: int = 10, budget: int = HISTORY_TOKENS) -> dict:
    """The last `last` cells (1-`MAX_LAST`) of `shell`'s history, oldest first (see module docstring).
    Without IPython (`shell` None): no cells, and the text says why."""
    from think_nb.session.tokens import count_tokens

    if shell is None:
        return {"type": "kernel-history", "cells": [], "text": "No IPython history: not running in a kernel."}
    last = max(1, min(int(last), MAX_LAST))
    manager = shell.history_manager
    sources = list(manager.input_hist_raw)
    outputs = dict(manager.output_hist)
    first = max(1, len(sources) - last)
    cells = [{"n": n, "source": _cut(sources[n], SOURCE_CHARS),
              "result": _result(outputs[n]) if n in outputs else None} for n in range(first, len(sources))
             if sources[n].strip()]

    def text_of(rows: list[dict]) -> str:
        return "\n\n".join(f"In [{c['n']}]:\n{c['source']}" + (f"\nOut[{c['n']}]: {c['result']}" if c["result"] else "")
                           for c in rows)

    text = text_of(cells)
    while len(cells) > 1 and count_tokens(text) > budget:
        cells.pop(0)
        text = text_of(cells)
    if cells and count_tokens(text) > budget:
        text = _cut(text, budget * 3)
    return {"type": "kernel-history", "cells": cells, "text": text or "No cells have run yet."}
