"""`%think files [AGENT]`: the agent's workspace files as a DataFrame (path, size, modified).

AGENT as for the session sub-commands (`think_nb.session.magic_commands`): a Think subclass or
instance in the notebook, else the agent last shown with `%think`.
"""

from __future__ import annotations

from typing import Any

from think_nb import magic


@magic.subcommand("files", "%think files [AGENT]\n    Show AGENT's workspace files as a DataFrame "
                  "(path, size, modified).")
def files(magics: Any, args: list[str]) -> None:
    from think_nb.session.magic_commands import _run  # imported late: magic.py imports both modules

    _run("files", args, magics, lambda agent, _: agent.workspace_df())
