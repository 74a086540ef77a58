"""One name, two sources: the rule every merge of a turn's tools applies (issue 28 §7).

A turn merges tools from several sources, later sources winning a name (Think's
`{...earlier, ...later}`). Where two sources give the same name, this module says what serves it,
so that one property holds over every source:

    A call by a name needs approval if EITHER tool that gave the name needs approval for it.

- **Built-in names are reserved** (`BUILTIN_NAMES`: `load_extension`, `list_extensions`,
  `run_code`, the workspace, context and skill tools, every name of `think_nb.tools.builtin`'s
  families). A loaded extension's or an MCP server's tool with such a name (extension `load` +
  tool `extension` is `load_extension`) is refused with a warning naming its source
  (`refused_builtin`); the built-in keeps the name.
- **A later tool over an earlier tool keeps the earlier gate** (`keep_gates`, `combined`): the
  later tool serves the name; when the earlier tool is gated at all (True or a predicate) the
  later one is gated unconditionally (`True`) — a predicate written for another tool's input
  never judges an impostor's; over an ungated tool the later tool keeps its own gate.
- **Two MCP servers giving one name** (`gh` + `repo_delete` and `gh_repo` + `delete`, or two
  names cut at 64 characters): the server added first serves it, gated if either is
  (`think_nb.mcp.servers.McpServers.tools`), with a warning naming both servers.
- **Client tools** (run in the browser) never take a gated tool's name: the panel's tool is
  refused (`think_nb.turns.assemble`).

Where it applies: the loaded extensions' tools (`ExtensionManager.tools`, `assemble.tools`), MCP
tools over local tools and over each other, client tools, and `before_turn`'s `TurnConfig(tools=)`
or an in-place edit of `ctx.tools` (`think_nb.turns.runner`). A source's own tools are never
changed: a gated copy serves instead.
"""

from __future__ import annotations

import dataclasses
import logging

from think_nb.tools.builtin import BUILTINS
from think_nb.tools.tool import Tool

log = logging.getLogger("think_nb")

BUILTIN_NAMES: frozenset[str] = frozenset(name for row in BUILTINS for name in row.names)
"""Every tool name a built-in family may offer; no extension or MCP tool may take one."""


def is_gated(tool: Tool) -> bool:
    """Whether calling `tool` may need approval (`needs_approval` True or a predicate)."""
    return tool.needs_approval is not False


def refused_builtin(name: str, source: str) -> bool:
    """True (and a warning naming `source`, e.g. "extension 'load'") when `name` is a built-in
    tool's name, which an extension's or MCP server's tool may not take."""
    if name not in BUILTIN_NAMES:
        return False
    log.warning("tool %r from %s is not offered: %r is a built-in tool's name", name, source, name)
    return True


def combined(serving: Tool, other: Tool) -> Tool:
    """`serving` as it serves a name `other` also gave: gated unconditionally (a copy with
    `needs_approval=True`) when `other` is gated and is another tool, else `serving` itself."""
    same = serving is other or (serving.function is other.function and serving.needs_approval is other.needs_approval)
    if same or not is_gated(other) or serving.needs_approval is True:
        return serving
    return dataclasses.replace(serving, needs_approval=True)


def keep_gates(earlier: dict[str, Tool], later: dict[str, Tool], source: str) -> dict[str, Tool]:
    """`later`'s tools (`{name: Tool}` of an extension, MCP servers, `before_turn`), each one that
    replaces a gated tool of `earlier` gated unconditionally (`combined`), with a warning naming
    `source`. The property: a call by a gated tool's name needs approval, whichever source serves it."""
    out = dict(later)
    for name in earlier.keys() & later.keys():
        out[name] = combined(later[name], earlier[name])
        if out[name] is not later[name]:
            log.warning("tool %r: the %s tool replaces a tool that needs approval; every call of it needs "
                        "approval", name, source)
    return out
