"""`%think context|messages|search|sessions`: the session DataFrames from a magic line.

    %think context [AGENT]          context blocks (label, kind, tokens, usage, content)
    %think messages [AGENT]         the current branch, one row per message
    %think search QUERY [--agent AGENT] [--limit N] [--all]   full-text search of the transcript
                                    (on_branch: False for a hit on another version of a reply)
    %think sessions [AGENT]         the agent's sessions (the active one flagged)

AGENT is a Think subclass or instance in the notebook (as for `%think AGENT`), with `--name NAME`
and `--db PATH` as for `%think AGENT NAME --db PATH`; without AGENT, the agent last shown with
`%think` is used. Registered through `think_nb.magic.subcommand`.
"""

from __future__ import annotations

import argparse
from typing import Any

from IPython.display import display

from think_nb import magic
from think_nb.errors import UserError

EXAMPLES = {"context": "%think context Calc", "messages": "%think messages Calc",
            "search": "%think search red fox --agent Calc", "sessions": "%think sessions Calc"}


def _agent(magics: Any, command: str, parsed: argparse.Namespace) -> Any:
    if parsed.agent:
        return magics.resolve_agent(parsed.agent, parsed.name or "default", parsed.db, existing=True)
    if parsed.name or parsed.db:
        raise UserError(f"--name and --db go with an agent: `{EXAMPLES[command]} --name NAME`.")
    if magic._agents:
        return list(magic._agents.values())[-1]
    raise UserError(f"No agent yet: pass one (`{EXAMPLES[command]}`) or show it first with `%think Calc`.")


def _parse(prog: str, args: list[str], *, query: bool = False) -> argparse.Namespace:
    parser = magic._Parser(prog=f"%think {prog}", add_help=False)
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


def _run(name: str, args: list[str], magics: Any, show: Any) -> None:
    parsed = _parse(name, args, query=name == "search")
    if parsed.help or (name == "search" and not parsed.query):
        print(magic.SUBCOMMANDS[name][0])
        return
    display(show(_agent(magics, name, parsed), parsed))


@magic.subcommand("context", "%think context [AGENT] [--name NAME] [--db PATH]\n"
                  "    Show AGENT's context blocks as a DataFrame "
                  "(label, description, kind, writable, tokens, max_tokens, percent_used, content).")
def context(magics: Any, args: list[str]) -> None:
    _run("context", args, magics, lambda agent, _: agent.context_blocks())


@magic.subcommand("messages", "%think messages [AGENT] [--name NAME] [--db PATH]\n"
                  "    Show AGENT's current branch as a DataFrame "
                  "(id, parent_id, role, text, parts, tool_calls, created_at, model, total_tokens).")
def messages(magics: Any, args: list[str]) -> None:
    _run("messages", args, magics, lambda agent, _: agent.messages_df())


@magic.subcommand("search", "%think search QUERY [--agent AGENT [--name NAME] [--db PATH]] [--limit N] [--all]\n"
                            "    Full-text search (SQLite FTS5, QUERY as one phrase) of AGENT's transcript; --all "
                            "searches every session;\n    on_branch is False for a hit on another version of a reply.")
def search(magics: Any, args: list[str]) -> None:
    _run("search", args, magics, lambda agent, a: agent.search(" ".join(a.query), a.limit, a.all))


@magic.subcommand("sessions", "%think sessions [AGENT] [--name NAME] [--db PATH]\n"
                  "    Show AGENT's sessions as a DataFrame (id, name, "
                  "active, messages, ...); switch with agent.switch_session(name).")
def sessions(magics: Any, args: list[str]) -> None:
    _run("sessions", args, magics, lambda agent, _: agent.sessions())
