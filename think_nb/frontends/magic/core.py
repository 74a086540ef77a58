"""`%think` and `%%think`: create or load an agent, show its panel, send a cell as a message.

    %load_ext think_nb
    %think Calc                 # create/load agent `Calc("default")` and show its chat panel
    %think Calc calc-2          # another agent of the same class (own transcript)
    %think agent                # an agent instance defined in the notebook
    %%think Calc
    What is 2 plus 40?          # sent as a user message; the cell returns at once

Agents are looked up by name in the notebook's namespace: a `Think` subclass or instance, or
`default` for the base agent. Re-running `%think` returns the same agent object for the same
class and name; a redefined class gets a new object that loads the same stored transcript, and
the panels of the older object follow the new one (`ChatPanel.follow`).
"""

from __future__ import annotations

import asyncio
import difflib
import dis
import sqlite3
import sys
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from think_nb.agent import Think, callable_as
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.frontends.magic.base import SHOWN, Parser, check_instance, check_stored, split_line
from think_nb.frontends.magic.commands import SUBCOMMANDS

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
    running other cells meanwhile (a cell that blocks, e.g. time.sleep(25), holds the stream
    until it ends: the kernel runs one cell at a time on the turn's thread).
%think --help
    Show this help.
Python equivalents: agent = Calc("default"); agent.panel(); await agent.send("...")."""

def full_help() -> str:
    return "\n".join([HELP, *(command.help for command in SUBCOMMANDS.values())])


def _parser() -> Parser:
    parser = Parser(prog="%think", add_help=False)
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
        tokens = split_line(line)
        if tokens and tokens[0] in SUBCOMMANDS and cell is None:
            return SUBCOMMANDS[tokens[0]].handler(self, tokens[1:])
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
            check_instance(ref, value, name, db)
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
        if key not in SHOWN and existing and (name != "default" or db):
            check_stored(value, name, db)
        if key not in SHOWN:
            options = {"db": db} if db else {}  # no --db: Calc(name), as the README says
            callable_as(value, name, **options)
            try:
                SHOWN[key] = value(name, **options)
            except (OSError, sqlite3.Error) as exc:
                raise UserError(f"cannot open the SQLite file ({exc}); pass a writable path with --db.") from None
            _supersede(key, SHOWN[key])
        return SHOWN[key]

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
            from think_nb.frontends.terminal import TerminalView

            unsubscribe = runtime_of(agent).subscribe(TerminalView())
            try:
                agent.run(text, context=context)
            finally:
                unsubscribe()
            return
        if not runtime_of(agent).has_listeners():
            display(agent.panel())
        agent.submit(text, trigger="cell", context=context)


def _supersede(key: tuple[type, str, str | None], agent: Think) -> None:
    """`agent` was just created for a class redefined in the notebook (same module and qualified
    name, a new class object): the agents `%think` made for the older class objects, with the same
    name and file, are dropped from `SHOWN`, and their open panels follow `agent`
    (`think_nb.panel.widget.ChatPanel.follow`, which says why panels follow rather than go stale)."""
    cls, name, db = key
    older = [k for k in SHOWN if k[0] is not cls and k[1:] == (name, db)
             and (k[0].__module__, k[0].__qualname__) == (cls.__module__, cls.__qualname__)]
    widget = sys.modules.get("think_nb.panel.widget")  # not imported: no panel is open
    for k in older:
        old = SHOWN.pop(k)
        if widget is not None:
            widget.follow_newest(old, agent)
    if widget is not None:  # and the panels of agents made in cells (`agent = Calc("q")`, `%think agent`)
        widget.follow_redefined(agent)


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
