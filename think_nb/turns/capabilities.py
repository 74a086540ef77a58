"""The capability block appended to think_nb's default system prompt (Think's
`_systemPromptForTurn` / `_buildThinkCapabilityBlock`): a few lines telling the model what the
tools of this turn let it do, inferred from their names, ending with "do not claim capabilities
that are not exposed as tools".

    system_for_turn(DEFAULT_SYSTEM_PROMPT, {"read": ..., "add": ...}, "openai/gpt-4o-mini")
    # -> "You are a helpful assistant. ...\\n\\nYou are running inside a Think agent.\\n\\n..."

Unlike Think, which appends it to any prompt, think_nb appends it to its own default prompt only:
a prompt of yours (`get_system_prompt()`, the session's context blocks, `TurnConfig.system` /
`instructions`) is sent as you wrote it. As in Think, a prompt already holding `MARKER` gets no
second block. The embedded 135M model (`LOCAL_MODEL`) gets none: its prompt was chosen by
measurement (bench/bench_local_eval.py), and it does not read a page of instructions well.
"""

from __future__ import annotations

from collections.abc import Iterable

from think_nb.models.resolve import LOCAL_MODEL
from think_nb.tools.builtin import EXTENSION_TOOLS, WORKSPACE_TOOLS

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant. Use the tools you are given when they help."
"""What the default `get_system_prompt()` returns; the only prompt the capability block is added to."""

MARKER = "You are running inside a Think agent."
"""The block's first line (Think's); a prompt that holds it gets no block."""

_LINES: tuple[tuple[str, str], ...] = (
    ("workspace", "- You can inspect and edit the agent workspace using the available file tools."),
    ("any", ("- Use the tools exposed in this turn when they materially improve accuracy or let you act on "
             "the user's request. Treat tool descriptions and schemas as the source of truth.")),
    ("any", ("- Some tools may call server code, browser/client code, MCP servers, extensions, or delegated "
             "agents. Use them according to their descriptions.")),
    ("context", ("- If context-loading tools are available, use them to load relevant memory, skills, or "
                 "project context before acting on incomplete information.")),
    ("extensions", ("- If extension tools are available, use them only when loading or inspecting extensions "
                    "directly helps with the task.")),
    ("execute", ("- If sandboxed execution is available, prefer it for safe, bounded checks or coordinated "
                 "multi-step operations.")),
    ("fetch", ("- If fetch tools are available, use them to read allowlisted HTTP resources (documentation, "
               "APIs). They are read-only and bounded; respect their allowlist and do not assume access to "
               "other URLs.")),
)
_LAST = "- Do not claim access to capabilities that are not exposed as tools in this turn."


def _kinds(names: set[str]) -> set[str]:
    """Which of the block's conditions the tool names meet (Think's name tests; think_nb's fetch
    tool is named `fetch`, Think's `fetch_url` / `fetch_<binding>`)."""
    checks = {
        "workspace": bool(names & set(WORKSPACE_TOOLS)),
        "any": bool(names),
        "context": bool(names & {"load_context", "unload_context"}),
        "extensions": bool(names & set(EXTENSION_TOOLS)),
        "execute": "execute" in names,
        "fetch": any(n == "fetch" or n.startswith("fetch_") for n in names),
    }
    return {kind for kind, met in checks.items() if met}


def capability_block(tool_names: Iterable[str]) -> str:
    """The block for a turn offering `tool_names` (Think's `_buildThinkCapabilityBlock`, its
    lines verbatim): `MARKER`, a blank line, "Capabilities available in this turn:", one line
    per capability the names show, then "Do not claim access ...". Lines joined with "\\n"."""
    kinds = _kinds(set(tool_names))
    lines = [MARKER, "", "Capabilities available in this turn:"]
    lines += [text for kind, text in _LINES if kind in kinds]
    return "\n".join([*lines, _LAST])


def system_for_turn(system: str, tool_names: Iterable[str], model: str | None) -> str:
    """`system` with the capability block appended (after a blank line, trailing whitespace
    trimmed, as Think joins them) when `system` is `DEFAULT_SYSTEM_PROMPT`; else `system`
    unchanged: a prompt of the user's, one already holding `MARKER`, or any turn of the embedded
    `LOCAL_MODEL` (`model`, a litellm model string): its prompt and tool offer were chosen by
    measurement for a 135M model (bench/bench_local_eval.py, issue 27 §7), and ~110 more tokens
    of instructions are not something it reads well."""
    names = list(tool_names)
    if system != DEFAULT_SYSTEM_PROMPT or MARKER in system or model == LOCAL_MODEL:
        return system
    return f"{system.rstrip()}\n\n{capability_block(names)}"
