"""`%think context|messages|search|sessions`: the session DataFrames from a magic line.

    %think context [AGENT]          context blocks (label, kind, tokens, usage, content)
    %think messages [AGENT]         the current branch, one row per message
    %think search QUERY [--agent AGENT] [--limit N] [--all]   full-text search of the transcript
                                    (on_branch: False for a hit on another version of a reply)
    %think sessions [AGENT]         the agent's sessions (the active one flagged)

AGENT is a Think subclass or instance in the notebook (as for `%think AGENT`), with `--name NAME`
and `--db PATH` as for `%think AGENT NAME --db PATH`; without AGENT, the agent last shown with
`%think` is used. Listed in `think_nb.frontends.magic.commands`.
"""

from __future__ import annotations

from typing import Any

from think_nb.frontends.magic.base import Command, show_frame

CONTEXT_HELP = ("%think context [AGENT] [--name NAME] [--db PATH]\n"
                "    Show AGENT's context blocks as a DataFrame "
                "(label, description, kind, writable, tokens, max_tokens, percent_used, content).")
MESSAGES_HELP = ("%think messages [AGENT] [--name NAME] [--db PATH]\n"
                 "    Show AGENT's current branch as a DataFrame "
                 "(id, parent_id, role, text, parts, tool_calls, created_at, model, total_tokens).")
SEARCH_HELP = ("%think search QUERY [--agent AGENT [--name NAME] [--db PATH]] [--limit N] [--all]\n"
               "    Full-text search (SQLite FTS5, QUERY as one phrase) of AGENT's transcript; --all "
               "searches every session;\n    on_branch is False for a hit on another version of a reply.")
SESSIONS_HELP = ("%think sessions [AGENT] [--name NAME] [--db PATH]\n"
                 "    Show AGENT's sessions as a DataFrame (id, name, "
                 "active, messages, ...); switch with agent.switch_session(name).")


def context(magics: Any, args: list[str]) -> None:
    show_frame(CONTEXT_HELP, "context", "%think context Calc", args, magics, lambda agent, _: agent.context_blocks())


def messages(magics: Any, args: list[str]) -> None:
    show_frame(MESSAGES_HELP, "messages", "%think messages Calc", args, magics, lambda agent, _: agent.messages_df())


def search(magics: Any, args: list[str]) -> None:
    show_frame(SEARCH_HELP, "search", "%think search red fox --agent Calc", args, magics,
               lambda agent, a: agent.search(" ".join(a.query), a.limit, a.all))


def sessions(magics: Any, args: list[str]) -> None:
    show_frame(SESSIONS_HELP, "sessions", "%think sessions Calc", args, magics, lambda agent, _: agent.sessions())


CONTEXT = Command(CONTEXT_HELP, context)
MESSAGES = Command(MESSAGES_HELP, messages)
SEARCH = Command(SEARCH_HELP, search)
SESSIONS = Command(SESSIONS_HELP, sessions)
