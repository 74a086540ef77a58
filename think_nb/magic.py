"""`%think` and `%%think`: create or load an agent, show its panel, send a cell as a message.

    %load_ext think_nb
    %think Calc                 # create/load agent `Calc("default")` and show its chat panel
    %think Calc calc-2          # another agent of the same class (own transcript)
    %think agent                # an agent instance defined in the notebook
    %%think Calc
    What is 2 plus 40?          # sent as a user message; the cell returns at once

Agents are looked up by name in the notebook's namespace: a `Think` subclass or instance, or
`default` for the base agent. Re-running `%think` returns the same agent object for the same
class and name; a redefined class gets a new object that loads the same stored transcript.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import dis
import shlex
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from think_nb.agent import Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError

HELP = """\
%think AGENT [NAME] [--db PATH] [--model MODEL]
    Create or load agent AGENT and show its chat panel. AGENT is a Think subclass defined in
    the notebook (or `default` for the base agent), or a variable holding an agent instance.
    NAME (default: "default") picks one of several agents of the class; each has its own
    transcript. --db sets the SQLite file (default: .think/<notebook-stem>.sqlite).
    --model sets this agent's model when its class does not override get_model()
    (a litellm string: openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, ollama/llama3.2).
    `agent = %think Calc` also binds the agent to a variable.
%%think AGENT [NAME] [--db PATH] [--model MODEL] [--with VAR,VAR...]
    Send the cell's text to AGENT as a user message; --with attaches a bounded description of
    each notebook variable (a DataFrame's shape, dtypes, head/tail, describe()). The cell returns at once and the reply
    streams into the agent's panel (one is shown in this cell if none is open yet); keep
    running other cells meanwhile.
%think --help
    Show this help.
Python equivalents: agent = Calc("default"); agent.panel(); await agent.send("...")."""

_agents: dict[tuple[type, str, str | None], Think] = {}

SUBCOMMANDS: dict[str, tuple[str, Callable[[ThinkMagics, list[str]], None]]] = {}
"""`%think <name> ...` sub-commands: name -> (help text, handler(magics, args))."""


def subcommand(name: str, help: str) -> Callable:
    """Register `%think NAME ...`; `help` (first line = usage) is appended to `%think --help`."""
    def register(handler: Callable[[ThinkMagics, list[str]], None]) -> Callable:
        SUBCOMMANDS[name] = (help, handler)
        return handler
    return register


def full_help() -> str:
    return "\n".join([HELP, *(text for text, _ in SUBCOMMANDS.values())])


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{message}. See `%think --help`.")


def _parser() -> _Parser:
    parser = _Parser(prog="%think", add_help=False)
    parser.add_argument("agent", nargs="?")
    parser.add_argument("name", nargs="?", default="default")
    parser.add_argument("--db", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--with", dest="with_", default=None)
    parser.add_argument("-h", "--help", action="store_true")
    return parser


@magics_class
class ThinkMagics(Magics):
    """The `%think` / `%%think` magic (one line-and-cell magic)."""

    @line_cell_magic
    def think(self, line: str, cell: str | None = None) -> Any:
        try:
            return self._dispatch(line, cell)
        except UserError as exc:
            print(f"think: {exc}")  # one clean line for misuse; real bugs keep their traceback

    def _dispatch(self, line: str, cell: str | None) -> Any:
        try:
            tokens = shlex.split(line)
        except ValueError:  # e.g. an apostrophe in a message: split on spaces instead
            tokens = line.split()
        if tokens and tokens[0] in SUBCOMMANDS and cell is None:
            return SUBCOMMANDS[tokens[0]][1](self, tokens[1:])
        args = _parser().parse_args(tokens)
        if args.help:
            print(full_help())
            return None
        if not args.agent:
            if cell is not None:
                raise UserError("%%think needs an agent on its first line: `%%think Calc` (a Think subclass or "
                                "agent in this notebook) or `%%think default`.")
            print(full_help())
            return None
        agent = self.resolve_agent(args.agent, args.name, args.db)
        if args.model:
            agent.default_model = args.model
        if cell is not None:
            self._send(agent, cell.strip(), self._context(args.with_))
            return None
        if args.with_:
            raise UserError("--with attaches data to a message: use it on a %%think cell, e.g. "
                            "`%%think Calc --with df`.")
        display(agent.panel())
        return agent if _assigned() else None

    def resolve_agent(self, ref: str, name: str, db: str | None, *, existing: bool = False) -> Think:
        """The agent for `ref` (class or instance name in the user namespace, or `default`).

        With `existing` (the sub-commands that only show an agent), the `db` file must exist and
        a `name` other than "default" must already be stored in it: a typo raises `UserError`
        naming the stored names instead of creating an empty agent. An instance `ref` is that
        agent: a `name` or `db` naming another raises `UserError`."""
        user_ns = self.shell.user_ns if self.shell is not None else {}
        value = Think if ref == "default" else user_ns.get(ref)
        if isinstance(value, Think):
            _check_instance(ref, value, name, db)
            return value
        if value is not None and not (isinstance(value, type) and issubclass(value, Think)):
            raise UserError(f"{ref!r} is a {type(value).__name__}, not a Think agent or Think subclass; "
                            f"pass the name of a `class ...(Think)` or of an agent instance.")
        if not (isinstance(value, type) and issubclass(value, Think)):
            known = [k for k, v in user_ns.items() if not k.startswith("_") and (
                isinstance(v, Think) or (isinstance(v, type) and issubclass(v, Think) and v is not Think))]
            close = difflib.get_close_matches(ref, known, n=1)
            if close:
                raise UserError(f"No agent named {ref!r} in this notebook; did you mean {close[0]!r}?")
            raise UserError(f"No agent named {ref!r} in this notebook: define `class {ref}(Think): ...` "
                            f"(or `{ref} = Think(...)`) first, or use `%think default`.")
        key = (value, name, str(Path(db).resolve()) if db else None)
        if key not in _agents and existing and (name != "default" or db):
            _check_stored(value, name, db)
        if key not in _agents:
            try:
                _agents[key] = value(name, db=db)
            except (OSError, sqlite3.Error) as exc:
                raise UserError(f"cannot open the SQLite file ({exc}); pass a writable path with --db.") from None
        return _agents[key]

    def _context(self, names: str | None) -> dict[str, Any] | None:
        """`--with df,model_results` → `{"df": <df>, "model_results": <...>}` from the notebook's namespace."""
        if not names:
            return None
        user_ns = self.shell.user_ns if self.shell is not None else {}
        context = {}
        for name in (n.strip() for n in names.split(",")):
            if not name:
                continue
            if name not in user_ns:
                raise UserError(f"--with {name}: no variable {name!r} in this notebook; define it first, or "
                                "list existing names separated by commas: --with df,results.")
            context[name] = user_ns[name]
        return context or None

    def _send(self, agent: Think, text: str, context: dict[str, Any] | None = None) -> None:
        if not text:
            raise UserError("The %%think cell is empty; write the message below the magic line.")
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # plain IPython: no kernel loop, run the turn here and print it
            from think_nb.terminal import TerminalView

            unsubscribe = runtime_of(agent).subscribe(TerminalView())
            try:
                agent.run(text, context=context)
            finally:
                unsubscribe()
            return
        if not runtime_of(agent).has_listeners():
            display(agent.panel())
        agent.submit(text, trigger="cell", context=context)


def _assigned() -> bool:
    """True when the line magic's value is stored (`agent = %think Calc`): the instruction after the
    cell's `run_line_magic(...)` call is a STORE. A bare `%think Calc` returns None, so the cell shows
    the panel and not also the agent's repr."""
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "run_line_magic":
        frame = frame.f_back  # type: ignore[assignment]
    caller = frame.f_back if frame is not None else None
    if caller is None:
        return False
    after = [i for i in dis.get_instructions(caller.f_code) if i.offset > caller.f_lasti and i.opname != "CACHE"]
    return bool(after) and after[0].opname.startswith("STORE_")


def register(ipython: Any) -> None:
    """Register the magics on an IPython shell (called by `%load_ext think_nb`)."""
    ipython.register_magics(ThinkMagics)


# -- session sub-commands (think_nb.session.magic_commands) ------------------------------------------
# Imported here so `%think context|messages|search|sessions` exist as soon as the extension loads.
import think_nb.session.magic_commands  # noqa: E402, F401

# `%think files` (think_nb.workspace.magic_commands), likewise.
from think_nb.workspace import magic_commands as _files  # noqa: E402, F401


def _check_instance(ref: str, agent: Think, name: str, db: str | None) -> None:
    """Raise `UserError` when `name`/`db` name another agent than the instance `ref`."""
    other_name = name not in ("default", agent.name)
    other_db = bool(db) and Path(str(db)).expanduser().resolve() != agent.db_path
    if other_name or other_db:
        cls = type(agent).__name__
        raise UserError(f"{ref!r} is the agent {cls}({agent.name!r}) in {agent.db_path}; --name and --db choose "
                        f"an agent of a class instead: `%think ... {cls} --name NAME --db PATH`.")


def _check_stored(cls: type[Think], name: str, db: str | None) -> None:
    """Raise `UserError` unless the file (`db`, else the notebook's default) exists and, for a name
    other than "default", holds the top-level agent `cls` named `name` (key `<class>:<name>`)."""
    from think_nb.store import default_db_path, open_database
    from think_nb.store.agent import stored_agent_names, stored_sub_agent_keys

    path = Path(db).expanduser().resolve() if db else default_db_path().resolve()
    if not path.is_file():
        raise UserError(f"No file {path}: check the --db path (an agent's file is made when it first starts, "
                        f"e.g. `%think {cls.__name__} --db {shlex.quote(db or str(path))}`).")
    if name == "default":
        return
    db_file = open_database(path)
    names = stored_agent_names(db_file, cls.__name__)
    sub_agents = [] if name in names else stored_sub_agent_keys(db_file, cls.__name__, name)
    if sub_agents:
        raise UserError(f"{cls.__name__} {name!r} in {path} is a sub-agent ({', '.join(sub_agents)}): show the "
                        f"instance its parent's sub_agent({cls.__name__}, {name!r}) returns, e.g. `%think child`.")
    if name not in names:
        stored = f"stored: {', '.join(map(repr, names))}" if names else f"no {cls.__name__} agent is stored there"
        start = f"%think {cls.__name__} {shlex.quote(name)}" + (f" --db {shlex.quote(db)}" if db else "")
        raise UserError(f"No {cls.__name__} agent named {name!r} in {path} ({stored}). Leave out --name for "
                        f"'default', or start it first with `{start}`.")


def _agent_and_rest(magics: ThinkMagics, args: list[str], *, existing: bool = True) -> tuple[Think, list[str]]:
    """The agent a sub-command names (`AGENT [--name NAME] [--db PATH]`, as `%think AGENT NAME
    --db PATH` does) and the arguments left. Raises `UserError` without an AGENT, and (with
    `existing`) for a `--name` not stored in the file (`ThinkMagics.resolve_agent`)."""
    if any(token in ("-h", "--help") for token in args):
        raise UserError("usage: see `%think --help`, which lists every sub-command.")
    rest, options = [], {"--name": "default", "--db": None}
    tokens = iter(args)
    for token in tokens:
        key, eq, value = token.partition("=")
        if key in options:
            options[key] = value if eq else next(tokens, None)
            if options[key] is None:
                raise UserError(f"{key} needs a value. See `%think --help`.")
        else:
            rest.append(token)
    if not rest:
        raise UserError("name the agent: a Think subclass or agent in this notebook. See `%think --help`.")
    return magics.resolve_agent(rest[0], options["--name"] or "default", options["--db"], existing=existing), rest[1:]


# -- inspecting turns: %think step / %think trace ------------------------------------------------
@subcommand("step", "%think step AGENT [--name NAME] MESSAGE...\n    Start a turn of AGENT in step mode and return "
                    "its stepper: "
                    "`stepper = %think step Calc What is 2+2?`,\n    then `stepper.next()` pauses at each hook, "
                    "`stepper.run()` finishes, `stepper.cancel()` aborts.")
def _step(magics: ThinkMagics, args: list[str]) -> Any:
    agent, words = _agent_and_rest(magics, args, existing=False)  # stepping a turn may start an agent
    if not words:
        raise UserError("usage: %think step AGENT MESSAGE. See `%think --help`.")
    stepper = agent.step(" ".join(words))
    print(f"Stepping a turn of {agent.name!r}: call .next() on the returned stepper (or .run() to finish).")
    return stepper


@subcommand("trace", "%think trace AGENT [REQUEST_ID] [--name NAME]\n    The hook trace of AGENT's last turn "
                     "(or of REQUEST_ID) "
                     "as a DataFrame: one row per hook call and chunk group.")
def _trace(magics: ThinkMagics, args: list[str]) -> Any:
    agent, rest = _agent_and_rest(magics, args)
    frame = agent.trace(rest[0] if rest else None)
    if frame.empty:
        print(f"No traced turn for {agent.name!r} yet: run a turn first.")
        return None
    return frame


@subcommand("schedules", "%think schedules AGENT [--name NAME]\n    AGENT's scheduled tasks as a DataFrame "
                         "(id, kind, schedule, "
                         "task, next_run, last_run, last_status, runs, source);\n    see `agent.schedule(...)` and "
                         "`get_scheduled_tasks()`.")
def _schedules(magics: ThinkMagics, args: list[str]) -> Any:
    agent, rest = _agent_and_rest(magics, args)
    if rest:
        raise UserError("usage: %think schedules AGENT [--name NAME]. See `%think --help`.")
    frame = agent.get_schedules()
    if frame.empty:
        print(f"{agent.name!r} has no scheduled tasks: agent.schedule(when, prompt) or get_scheduled_tasks() add some.")
        return None
    return frame


@subcommand("export", "%think export AGENT FILE [--name NAME]\n    Write AGENT's transcript to FILE; the suffix "
                      "picks the format: "
                      ".md, .ipynb, .json (reads back with agent.import_messages) or .html (sanitised).")
def _export(magics: ThinkMagics, args: list[str]) -> Any:
    from think_nb.export import format_for_path

    agent, rest = _agent_and_rest(magics, args)
    if len(rest) != 1:
        raise UserError("usage: %think export AGENT FILE (FILE ending in .md, .ipynb, .json or .html).")
    agent.export(format_for_path(rest[0]), rest[0])
    print(f"Exported {len(agent.messages)} messages of {agent.name!r} to {rest[0]}.")
    return None
