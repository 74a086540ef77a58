"""The `%think` sub-commands, declared in one table: `%think NAME ...` runs `SUBCOMMANDS[NAME]`, and
`%think --help` lists their help in this order. Adding one: a `Command(help, handler)` in the module
of its concept, and a row here."""

from __future__ import annotations

from think_nb.frontends.magic import batch, files, kernel, memory, turns
from think_nb.frontends.magic.base import Command

SUBCOMMANDS: dict[str, Command] = {
    "context": memory.CONTEXT,
    "messages": memory.MESSAGES,
    "search": memory.SEARCH,
    "sessions": memory.SESSIONS,
    "files": files.FILES,
    "step": turns.STEP,
    "trace": turns.TRACE,
    "history": turns.HISTORY,
    "fork": turns.FORK,
    "schedules": turns.SCHEDULES,
    "export": turns.EXPORT,
    "kernel": kernel.KERNEL,
    "map": batch.MAP,
}
