"""Client tools given to one `chat()` call with an executor (Think's "RPC client tools":
`ChatOptions.clientTools` + `onClientToolCall`).

    async def pick(call):                    # {"tool_name", "input", "tool_call_id"}
        return {"color": "teal"}

    await agent.chat("Pick a color.", callback,
                     client_tools=[{"name": "pick_color", "description": "Ask the caller for a color.",
                                    "parameters": {"type": "object", "properties": {}}}],
                     on_client_tool_call=pick)

- **Per turn only**: offered to that `chat()`'s turn and never stored (the panel's client tools are,
  as Think's `lastClientTools`), so a call a dead process left without a result is not a pending
  interaction after a restart: nothing could answer it, and it is repaired as interrupted.
- **With an executor** the tool runs in the kernel: `on_client_tool_call(call)` (sync, in a worker
  thread, or async) returns the call's output, so the round trip completes inside the one `chat()`
  (several calls of a step, and calls of later steps, too); a raise becomes that call's
  `output-error`, which the model reads, and the turn goes on. No approval gate (Think has none
  for them); `before_tool_call` / `after_tool_call` see the calls as any other.
- **Without an executor** the call is streamed to the caller and left `input-available` (Think's
  dangling call): the turn ends after that step.
- A name a gated tool of the agent already has (`needs_approval`) is refused, as the panel's client
  tools are (`think_nb.tools.collisions`): `chat()` raises `UserError` before anything is stored;
  a gated tool that appears only later keeps its name at assembly (`merge`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from think_nb.aio import maybe_await
from think_nb.errors import UserError
from think_nb.tools.client import EMPTY_OBJECT
from think_nb.tools.collisions import is_gated
from think_nb.tools.tool import CURRENT_TOOL_CALL, Tool, valid_tool_name

log = logging.getLogger("think_nb")

Executor = Callable[[dict[str, Any]], Any]


def build(schemas: Any, executor: Executor | None) -> dict[str, Tool]:
    """`{name: Tool}` of `chat(client_tools=schemas, on_client_tool_call=executor)`.

    Raises:
        UserError: `schemas` is not a list of `{name, description?, parameters?}` with valid,
            distinct names and object schemas, or `executor` is not callable.
    """
    if not isinstance(schemas, list | tuple):
        raise UserError(f"chat(client_tools={schemas!r:.60}): pass a list of tool schemas "
                        "[{'name': ..., 'description': ..., 'parameters': {...}}].")
    if executor is not None and not callable(executor):
        raise UserError(f"chat(on_client_tool_call={executor!r:.60}): pass a function of the call "
                        "({'tool_name', 'input', 'tool_call_id'}) returning the output.")
    tools: dict[str, Tool] = {}
    for schema in schemas:
        name = schema.get("name") if isinstance(schema, dict) else None
        if not isinstance(name, str) or not valid_tool_name(name):
            raise UserError(f"chat(client_tools=...): {schema!r:.80} needs a 'name' of letters, digits, _ and - "
                            "(at most 64).")
        if name in tools:
            raise UserError(f"chat(client_tools=...): the name {name!r} is given twice; give each tool its own name.")
        parameters = schema.get("parameters") or EMPTY_OBJECT
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise UserError(f"chat(client_tools=...): {name!r} parameters must be a JSON object schema "
                            "({'type': 'object', 'properties': {...}}).")
        description = schema.get("description") or name
        tools[name] = Tool(name, str(description), {"type": "object", **parameters},
                           _executes(name, executor) if executor is not None else None, client=executor is None)
    return tools


def _executes(name: str, executor: Executor) -> Callable[..., Any]:
    """The tool function: hands the call to `executor` and returns what it returns."""

    async def run(**arguments: Any) -> Any:
        call = {"tool_name": name, "input": arguments, "tool_call_id": CURRENT_TOOL_CALL.get()}
        if inspect.iscoroutinefunction(executor):
            return await executor(call)
        return await maybe_await(await asyncio.to_thread(executor, call))  # a sync executor never blocks the loop

    run.__name__ = name
    return run


def refuse_gated(tools: dict[str, Tool], rpc: dict[str, Tool]) -> None:
    """Raise `UserError` when a client tool takes the name of a gated tool of `tools`."""
    taken = sorted(name for name in rpc if name in tools and is_gated(tools[name]))
    if taken:
        raise UserError(f"chat(client_tools=...): {', '.join(map(repr, taken))} is the name of a tool of the agent "
                        "that needs approval, which a client tool may not take (it would run ungated); rename "
                        "the client tool. Nothing was sent.")


def merge(tools: dict[str, Tool], rpc: dict[str, Tool] | None) -> dict[str, Tool]:
    """`tools` with a turn's RPC client tools last (they win a name), except over a gated tool,
    which keeps its name (a warning)."""
    if not rpc:
        return tools
    out = dict(tools)
    for name, tool in rpc.items():
        if name in tools and is_gated(tools[name]):
            log.warning("client tool %r of chat(): a tool of that name needs approval; the client tool is not offered",
                        name)
            continue
        out[name] = tool
    return out
