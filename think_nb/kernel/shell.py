"""Where the kernel tools find the notebook: IPython's shell and the namespace cells run in."""

from __future__ import annotations

import sys
from typing import Any


def shell() -> Any:
    """IPython's running shell, or None outside IPython. Read from IPython's own module (never
    imported here), so code that rebinds `get_ipython` in the notebook changes nothing."""
    if "IPython" not in sys.modules:
        return None
    from IPython.core.getipython import get_ipython

    return get_ipython()


def namespace() -> tuple[Any, dict]:
    """`(shell, user_ns)`: IPython's shell (None outside IPython) and the namespace code runs in
    (`__main__`'s outside IPython, as a script's)."""
    found = shell()
    if found is not None:
        return found, found.user_ns
    return None, sys.modules["__main__"].__dict__
