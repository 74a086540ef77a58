"""`%think step|trace|history|fork|schedules|export AGENT ...`: inspect an agent's turns from a magic line."""

from __future__ import annotations

from typing import Any

from think_nb.errors import UserError
from think_nb.frontends.magic.base import Command, agent_and_rest


def step(magics: Any, args: list[str]) -> Any:
    agent, words = agent_and_rest(magics, args, existing=False)  # stepping a turn may start an agent
    if not words:
        raise UserError("usage: %think step AGENT MESSAGE. See `%think --help`.")
    stepper = agent.step(" ".join(words))
    print(f"Stepping a turn of {agent.name!r}: call .next() on the returned stepper (or .run() to finish).")
    return stepper


def trace(magics: Any, args: list[str]) -> Any:
    agent, rest = agent_and_rest(magics, args)
    frame = agent.trace(rest[0] if rest else None)
    if frame.empty:
        print(f"No traced turn for {agent.name!r} yet: run a turn first.")
        return None
    return frame


def history(magics: Any, args: list[str]) -> Any:
    from think_nb.binding import runtime_of
    from think_nb.turns import fork as forks

    agent, rest = agent_and_rest(magics, args)
    if rest:
        raise UserError("usage: %think history AGENT [--name NAME]. See `%think --help`.")
    frame = forks.history(runtime_of(agent))
    if frame.empty:
        print(f"{agent.name!r} has run no turn yet.")
        return None
    return frame


FORK_OPTIONS = ("--at", "--model", "--tools")


def fork(magics: Any, args: list[str]) -> Any:
    agent, rest = agent_and_rest(magics, args)
    options: dict[str, str] = {}
    words: list[str] = []
    while rest:
        word = rest.pop(0)
        if word in FORK_OPTIONS and rest:
            options[word[2:]] = rest.pop(0)
        else:
            words.append(word)
    if len(words) != 1 or "at" not in options:
        raise UserError("usage: %think fork AGENT TURN --at SITE [--model recorded|MODEL] [--tools live|recorded]; "
                        "TURN is a request id or an index into agent.turns(), SITE one of `%think history AGENT`'s.")
    turn: int | str = int(words[0]) if words[0].lstrip("-").isdigit() else words[0]
    stepper = agent.fork(turn, at=options["at"], model=options.get("model"), tools=options.get("tools", "live"))
    print(f"Forked turn {turn} of {agent.name!r} at {options['at']}: edit stepper.paused.ctx, then "
          "stepper.run() (or .next()).")
    return stepper


def schedules(magics: Any, args: list[str]) -> Any:
    agent, rest = agent_and_rest(magics, args)
    if rest:
        raise UserError("usage: %think schedules AGENT [--name NAME]. See `%think --help`.")
    frame = agent.get_schedules()
    if frame.empty:
        print(f"{agent.name!r} has no scheduled tasks: agent.schedule(when, prompt) or get_scheduled_tasks() add some.")
        return None
    return frame


def export(magics: Any, args: list[str]) -> Any:
    from think_nb.frontends.export import format_for_path

    agent, rest = agent_and_rest(magics, args)
    if len(rest) != 1:
        raise UserError("usage: %think export AGENT FILE (FILE ending in .md, .ipynb, .json or .html).")
    agent.export(format_for_path(rest[0]), rest[0])
    print(f"Exported {len(agent.messages)} messages of {agent.name!r} to {rest[0]}.")
    return None


STEP = Command("%think step AGENT [--name NAME] MESSAGE...\n    Start a turn of AGENT in step mode and return "
                    "its stepper: "
                    "`stepper = %think step Calc What is 2+2?`,\n    then `stepper.next()` pauses at each hook, "
                    "`stepper.run()` finishes, `stepper.cancel()` aborts.", step)
TRACE = Command("%think trace AGENT [REQUEST_ID] [--name NAME]\n    The hook trace of AGENT's last turn "
                     "(or of REQUEST_ID) "
                     "as a DataFrame: one row per hook call and chunk group.", trace)
HISTORY = Command("%think history AGENT [--name NAME]\n    AGENT's turns as a DataFrame with the hook sites each can "
                   "be forked at (turn, request_id, trigger, status, sites, forkable).", history)
FORK = Command("%think fork AGENT TURN --at SITE [--model recorded|MODEL] [--tools live|recorded] [--name NAME]\n"
               "    Fork AGENT's turn TURN (request id or index) at hook SITE and return a stepper paused there: "
               "`s = %think fork Calc -1 --at before_turn`,\n    edit `s.paused.ctx`, then `s.run()`; the reply is "
               "a new branch beside the original.", fork)
SCHEDULES = Command("%think schedules AGENT [--name NAME]\n    AGENT's scheduled tasks as a DataFrame "
                         "(id, kind, schedule, "
                         "task, next_run, last_run, last_status, runs, source);\n    see `agent.schedule(...)` and "
                         "`get_scheduled_tasks()`.", schedules)
EXPORT = Command("%think export AGENT FILE [--name NAME]\n    Write AGENT's transcript to FILE; the suffix "
                      "picks the format: "
                      ".md, .ipynb, .json (reads back with agent.import_messages) or .html (sanitised).", export)
