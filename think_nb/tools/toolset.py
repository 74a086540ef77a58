"""Normalise what `get_tools()` returns into `{name: Tool}`.

Accepted: a list of functions and/or `Tool`s, or a dict `name -> function | Tool` (the dict key
wins over the function name, like Think's AI SDK `ToolSet`). Later entries win on a name clash.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from think_nb.errors import UserError
from think_nb.tools.tool import TOOL_NAME, Tool, from_function, valid_tool_name


def resolve_tools(tools: Iterable[Any] | Mapping[str, Any] | None) -> dict[str, Tool]:
    """Return `{name: Tool}`.

    Raises:
        UserError: (one line) for an entry that is neither a callable nor a Tool, a dict key that is
            not a valid tool name, or a function `from_function` refuses (generators, parameters
            without a JSON schema, ...).
    """
    if not tools:
        return {}
    if isinstance(tools, (str, bytes)) or not isinstance(tools, (Iterable, Mapping)):
        raise UserError(f"get_tools() returned {tools!r:.60}; return a list of functions / Tools, or a dict "
                        "name -> tool.")
    items = tools.items() if isinstance(tools, Mapping) else ((None, t) for t in tools)
    resolved: dict[str, Tool] = {}
    for key, item in items:
        t = _as_tool(item, key)
        resolved[t.name] = t
    return resolved


def _as_tool(item: Any, key: str | None) -> Tool:
    if key is not None and not valid_tool_name(key):
        raise UserError(f"get_tools() key {key!r} is not a valid tool name: names must match {TOOL_NAME.pattern} "
                        "(letters, digits, _ and -, at most 64); rename it.")
    if isinstance(item, Tool):
        if key and key != item.name:
            return dataclasses.replace(item, name=key)
        return item
    if isinstance(item, Callable):  # type: ignore[arg-type]
        return from_function(item, name=key)
    raise UserError(f"get_tools() returned {item!r}; return functions or @tool objects "
                    "(a list or a dict name -> tool).")
