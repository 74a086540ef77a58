"""Running the model's tool calls for one step.

Calls of one step run concurrently. A tool that raises becomes a `tool-output-error` chunk whose
text goes back to the model, and the turn goes on; an unknown tool or invalid input does the
same. A tool that needs approval does not run: the stream emits `tool-approval-request` and the
turn pauses there (Think's `needsApproval`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

from think_nb.messages.ids import new_id
from think_nb.models.stream import ToolCall
from think_nb.tools.tool import Tool, dump_output

Emit = Callable[[dict], Awaitable[None]]


async def needs_approval(tool: Tool, arguments: dict) -> bool:
    """Evaluate a tool's `needs_approval` (bool, or predicate on the input, sync or async)."""
    flag = tool.needs_approval
    if callable(flag):
        flag = flag(arguments)
        if inspect.isawaitable(flag):
            flag = await flag
    return bool(flag)


async def run_tool_calls(calls: list[ToolCall], tools: dict[str, Tool], emit: Emit) -> tuple[list[dict], bool]:
    """Run every valid call concurrently and emit its output chunk.

    Returns:
        (results, paused): results as `{toolCallId, toolName, output | errorText}`; `paused` is
        True when at least one call awaits approval (the turn must stop after this step).
    """
    results: list[dict] = []
    paused = False

    async def one(call: ToolCall) -> None:
        nonlocal paused
        if call.error is not None:  # already reported as tool-input-error
            results.append({"toolCallId": call.id, "toolName": call.name, "errorText": call.error})
            return
        tool = tools.get(call.name)
        if tool is not None and await needs_approval(tool, call.input or {}):
            paused = True
            await emit({"type": "tool-approval-request", "approvalId": new_id("approval"), "toolCallId": call.id})
            return
        results.append(await _execute(call, tool, tools, emit))

    await asyncio.gather(*(one(call) for call in calls))
    order = {call.id: n for n, call in enumerate(calls)}
    results.sort(key=lambda r: order[r["toolCallId"]])
    return results, paused


async def _execute(call: ToolCall, tool: Tool | None, tools: dict[str, Tool], emit: Emit) -> dict:
    base = {"toolCallId": call.id, "toolName": call.name}
    try:
        if tool is None:
            available = ", ".join(sorted(tools)) or "none"
            raise LookupError(f"There is no tool named {call.name!r}; available tools: {available}.")
        output = dump_output(await tool.invoke(call.input or {}))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - any tool failure goes back to the model
        error = f"{type(exc).__name__}: {exc}"
        await emit({"type": "tool-output-error", "toolCallId": call.id, "errorText": error})
        return {**base, "errorText": error}
    await emit({"type": "tool-output-available", "toolCallId": call.id, "output": output})
    return {**base, "output": output}
