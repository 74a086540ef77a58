"""Which Jupyter kernel this process is: its id, for the panel's Stop (POST /api/kernels/<id>/interrupt)."""

from __future__ import annotations

import re
import sys

_NAME = re.compile(r"kernel-([0-9A-Za-z-]+)\.json$")


def kernel_id() -> str:
    """The running ipykernel's id, from its connection file name (`kernel-<id>.json`, as Jupyter
    Server names it); "" outside an ipykernel, or for a connection file named otherwise."""
    if "ipykernel" not in sys.modules:  # never import it: a plain script has no kernel
        return ""
    try:
        from ipykernel.connect import get_connection_file

        path = get_connection_file()
    except Exception:  # noqa: BLE001 - not in a kernel (no app instance), or an old ipykernel
        return ""
    found = _NAME.search(str(path))
    return found.group(1) if found else ""
