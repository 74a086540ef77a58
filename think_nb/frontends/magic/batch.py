"""`%think map AGENT DF --prompt "..."`: a batch run (`agent.map`, `think_nb.batch`) from a magic line.

In a notebook the run starts as a task on the kernel's loop and the line returns it (the tqdm bar
shows progress; `results = await _` or `await task` gives the results table); in plain IPython (no
running loop) it runs to the end and returns the table."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from think_nb.errors import UserError
from think_nb.frontends.magic.base import Command, agent_and_rest


def run_map(magics: Any, args: list[str]) -> Any:
    agent, rest = agent_and_rest(magics, args, existing=False)
    parsed = _parser().parse_args(rest)
    user_ns = magics.shell.user_ns if magics.shell is not None else {}
    if parsed.df not in user_ns:
        raise UserError(f"%think map: no variable {parsed.df!r} in this notebook; pass the name of a DataFrame.")
    options: dict[str, Any] = {"concurrency": parsed.concurrency, "approvals": parsed.approvals}
    if parsed.run_id:
        options["run_id"] = parsed.run_id
    if parsed.max_cost is not None:
        options["max_cost"] = parsed.max_cost
    if parsed.output_type:
        options["output_type"] = _output_type(user_ns, parsed.output_type)
    df = user_ns[parsed.df]
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return agent.run_map(df, parsed.prompt, **options)
    from think_nb.batch import check_call

    check_call(df, parsed.prompt, **options)  # bad input is this line's error, not a failed task's
    task = asyncio.ensure_future(agent.map(df, parsed.prompt, **options))
    print(f"Started a batch run of {agent.name!r} over {parsed.df}: `results = await _` waits for its table.")
    return task


def _output_type(user_ns: dict, name: str) -> type:
    """The pydantic model named `name` in the notebook (`--output-type Label`)."""
    found = user_ns.get(name)
    if not (isinstance(found, type) and hasattr(found, "model_validate")):
        raise UserError(f"%think map --output-type {name}: no pydantic model named {name!r} in this notebook; "
                        "define `class Label(BaseModel): ...` first and pass its name.")
    return found


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"%think map: {message}. Usage: {MAP.help.splitlines()[0]}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%think map", add_help=False)
    parser.add_argument("df")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--run-id", dest="run_id")
    parser.add_argument("--approvals", choices=["deny", "ask"], default="deny")
    parser.add_argument("--max-cost", dest="max_cost", type=float)
    parser.add_argument("--output-type", dest="output_type")
    return parser


MAP = Command('%think map AGENT DF --prompt "Classify: {text}" [--concurrency 8] [--run-id ID] '
              "[--approvals deny|ask] [--max-cost USD] [--output-type MODEL] [--name NAME]\n"
              "    Run one turn of AGENT per row of the DataFrame DF (agent.map); in a notebook returns the "
              "running task\n    (`results = await _`), elsewhere the results table.", run_map)
