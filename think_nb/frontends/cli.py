"""The terminal main job: `think-nb chat "PROMPT"` (also `python -m think_nb chat "PROMPT"`).

Runs one turn of the default agent (the embedded local model unless `--model` is given) with
the demo tools (add, multiply, current_time), streams the reply and each tool call to stdout,
and persists the turn to a SQLite file whose path it prints. Each run is a new conversation
unless `--name` names an earlier one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sqlite3
import sys
from pathlib import Path

from think_nb.agent import Think
from think_nb.binding import runtime_of
from think_nb.errors import ThinkError
from think_nb.frontends.terminal import TerminalView
from think_nb.messages.ids import new_id
from think_nb.models.resolve import LOCAL_MODEL
from think_nb.tools.demo import DEMO_TOOLS


class TerminalAgent(Think):
    """The agent of `think-nb chat`: demo tools and a model chosen on the command line."""

    model = LOCAL_MODEL
    include_workspace_tools = False  # the 135M embedded model picks among three tools, not ten

    def get_model(self) -> str:
        return self.model

    def get_tools(self) -> list:
        return DEMO_TOOLS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="think-nb", description="think_nb from the terminal.")
    sub = parser.add_subparsers(dest="command", required=True)
    chat = sub.add_parser("chat", help="run one agent turn and stream it to stdout")
    chat.add_argument("prompt", help="the user message")
    chat.add_argument("--model", default=LOCAL_MODEL, help=f"litellm model string (default: {LOCAL_MODEL})")
    chat.add_argument("--db", type=Path, default=None, help="SQLite file (default: ./.think/cli.sqlite)")
    chat.add_argument("--name", default=None,
                      help="conversation name; reuse one to continue it (default: a new chat-<time> each run)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 completed, 1 turn error, 2 usage error)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = build_parser().parse_args(argv)
    if not args.prompt.strip():
        print("think-nb: the prompt is empty; pass a message, e.g. think-nb chat \"What is 2 plus 40?\"",
              file=sys.stderr)
        return 2
    try:
        name = args.name or f"chat-{datetime.datetime.now():%Y%m%d-%H%M%S}-{new_id()[-4:]}"
        agent = TerminalAgent(name, db=args.db or Path.cwd() / ".think" / "cli.sqlite")
        agent.model = args.model
        runtime_of(agent).subscribe(TerminalView())
        print(f"think_nb: {args.model} · transcript: {agent.db_path}", file=sys.stderr)
        result = agent.run(args.prompt)
    except ThinkError as exc:
        print(f"think-nb: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error) as exc:
        print(f"think-nb: cannot open the SQLite file ({exc}); pass a writable path with --db.", file=sys.stderr)
        return 2
    print(f"[{result.status}] saved to {agent.db_path} (conversation {name!r}, {len(agent.messages)} messages)")
    return 0 if result.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
