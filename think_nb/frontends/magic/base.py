"""What every `%think` sub-command shares: the argument parser that answers misuse in one line,
the agents `%think` has shown (the last one is a sub-command's default), and finding the agent a
sub-command names (`AGENT [--name NAME] [--db PATH]`)."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from IPython.display import display

from think_nb.agent import Think
from think_nb.errors import UserError

SHOWN: dict[tuple[type, str, str | None], Think] = {}
"""The agents `%think` created or loaded, by `(class, name, db)`: the same object again for the same
key; the newest is the default of the sub-commands that take an optional AGENT."""


class Command(NamedTuple):
    """One `%think NAME ...` sub-command: its help (first line = usage) and `handler(magics, args)`."""

    help: str
    handler: Callable[[Any, list[str]], Any]


def split_line(line: str) -> list[str]:
    """The tokens of a `%think`/`%%think` line, shell-style: quotes group words, and an unquoted
    `#` that starts a word begins a comment running to the end of the line (`%think Demo   # create
    or load` is `%think Demo`; `a#b` and `"#1"` stay). A line whose quotes do not close (an
    apostrophe in a message: `%think step Calc it's 4`) is split on spaces, the comment still cut."""
    quote, previous = "", " "
    for index, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#" and previous.isspace():
            line = line[:index]
            break
        previous = char
    try:
        return shlex.split(line)
    except ValueError:
        words = line.split()
        cut = next((i for i, word in enumerate(words) if word.startswith("#")), len(words))
        return words[:cut]


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{message}. See `%think --help`.")


def check_instance(ref: str, agent: Think, name: str, db: str | None) -> None:
    """Raise `UserError` when `name`/`db` name another agent than the instance `ref`."""
    other_name = name not in ("default", agent.name)
    other_db = bool(db) and Path(str(db)).expanduser().resolve() != agent.db_path
    if other_name or other_db:
        cls = type(agent).__name__
        raise UserError(f"{ref!r} is the agent {cls}({agent.name!r}) in {agent.db_path}; --name and --db choose "
                        f"an agent of a class instead: `%think ... {cls} --name NAME --db PATH`.")


def check_stored(cls: type[Think], name: str, db: str | None) -> None:
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


def agent_and_rest(magics: Any, args: list[str], *, existing: bool = True) -> tuple[Think, list[str]]:
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




def shown_or_named(magics: Any, example: str, parsed: argparse.Namespace) -> Think:
    """The agent `parsed.agent` names (it must be stored), else the agent last shown."""
    if parsed.agent:
        return magics.resolve_agent(parsed.agent, parsed.name or "default", parsed.db, existing=True)
    if parsed.name or parsed.db:
        raise UserError(f"--name and --db go with an agent: `{example} --name NAME`.")
    if SHOWN:
        return list(SHOWN.values())[-1]
    raise UserError(f"No agent yet: pass one (`{example}`) or show it first with `%think Calc`.")


def parse_optional_agent(prog: str, args: list[str], *, query: bool = False) -> argparse.Namespace:
    """`[AGENT] [--name NAME] [--db PATH]`, or with `query`: `QUERY... [--agent AGENT] [--limit N] [--all]`."""
    parser = Parser(prog=f"%think {prog}", add_help=False)
    if query:
        parser.add_argument("query", nargs="*")
        parser.add_argument("--agent", default=None)
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument("--all", action="store_true")
    else:
        parser.add_argument("agent", nargs="?")
    parser.add_argument("--name", default=None)
    parser.add_argument("--db", default=None)
    parser.add_argument("-h", "--help", action="store_true")
    return parser.parse_args(args)


def show_frame(help: str, name: str, example: str, args: list[str], magics: Any,
               show: Callable[[Think, argparse.Namespace], Any]) -> None:
    """Parse an optional-AGENT sub-command and display `show(agent, parsed)` (its `help` on -h)."""
    parsed = parse_optional_agent(name, args, query=name == "search")
    if parsed.help or (name == "search" and not parsed.query):
        print(help)
        return
    display(show(shown_or_named(magics, example, parsed), parsed))
