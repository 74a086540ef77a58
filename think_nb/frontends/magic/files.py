"""`%think files [AGENT]`: the agent's workspace files as a DataFrame (path, size, modified).

AGENT as for the memory sub-commands (`think_nb.frontends.magic.memory`): a Think subclass or
instance in the notebook, else the agent last shown with `%think`.
"""

from __future__ import annotations

from typing import Any

from think_nb.frontends.magic.base import Command, show_frame

FILES_HELP = "%think files [AGENT]\n    Show AGENT's workspace files as a DataFrame (path, size, modified)."


def files(magics: Any, args: list[str]) -> None:
    show_frame(FILES_HELP, "files", "%think files Calc", args, magics, lambda agent, _: agent.workspace_df())


FILES = Command(FILES_HELP, files)
