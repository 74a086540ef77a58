"""Extension hooks: what an extension's `hooks` receive and may change (Think's hook proxy).

An extension subscribes by defining `hooks = {"before_turn": fn, ...}` in its source. Each hook
gets one JSON snapshot (never the agent's objects) and runs after the agent's own hook, in
extension load order, each bounded by `Think.extension_hook_timeout` seconds (default 5, Think's
`hookTimeout`). A hook that raises or passes its timeout is logged, counted in `hook_errors`
and skipped; the turn goes on.

- `before_turn({system, tool_names, message_count, continuation, body, model, request_id, trigger})`
  may return a dict of `MERGEABLE` fields (system, messages, active_tools, tool_choice, max_steps,
  send_reasoning and the sampling options: Think's list), merged over the agent's `TurnConfig` (later extensions
  win; the next one sees the changed `system` / `tool_names`). Other fields (model, tools) are
  ignored and logged.
- `before_tool_call({tool_name, tool_call_id, input, step_number})`: observation only.
- `after_tool_call({... , duration_ms, success, output | error})`: observation only.
- `on_step_finish({step_number, step_type, finish_reason, text, tool_call_count, tool_result_count, usage})`.
- `on_chunk({type, text?, tool_name?, tool_call_id?})`: once per chunk (a sandbox run each: costly).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Protocol

from think_nb.extensions.sandbox import ExtensionError
from think_nb.jsonsafe import to_json_value

log = logging.getLogger("think_nb")

HOOKS = ("before_turn", "before_tool_call", "after_tool_call", "on_step_finish", "on_chunk")
MERGEABLE = ("system", "messages", "active_tools", "tool_choice", "max_steps", "send_reasoning", "temperature",
             "top_p", "max_output_tokens", "seed", "stop_sequences", "presence_penalty", "frequency_penalty")


def snapshot(hook: str, ctx: Any) -> dict:
    """The JSON snapshot extension hook `hook` receives for the agent's hook context `ctx`."""
    if hook == "before_turn":
        return {"system": ctx.system, "tool_names": list(ctx.tools), "message_count": len(ctx.messages),
                "continuation": ctx.continuation, "body": to_json_value(ctx.body), "model": str(ctx.model),
                "request_id": ctx.request_id, "trigger": ctx.trigger}
    if hook == "before_tool_call":
        return {"tool_name": ctx.tool_name, "tool_call_id": ctx.tool_call_id, "input": to_json_value(ctx.input),
                "step_number": ctx.step_number}
    if hook == "after_tool_call":
        out = {"tool_name": ctx.tool_name, "tool_call_id": ctx.tool_call_id, "input": to_json_value(ctx.input),
               "step_number": ctx.step_number, "duration_ms": ctx.duration_ms, "success": ctx.success}
        return {**out, **({"output": to_json_value(ctx.output)} if ctx.success else {"error": ctx.error})}
    if hook == "on_step_finish":
        return {"step_number": ctx.step_number, "step_type": ctx.step_type, "finish_reason": ctx.finish_reason,
                "text": ctx.text,
                "tool_call_count": len(ctx.tool_calls), "tool_result_count": len(ctx.tool_results),
                "usage": to_json_value(ctx.usage)}
    chunk = ctx if isinstance(ctx, dict) else {}
    out = {"type": chunk.get("type")}
    for key, name in (("delta", "text"), ("text", "text"), ("toolName", "tool_name"), ("toolCallId", "tool_call_id")):
        if isinstance(chunk.get(key), str):
            out[name] = chunk[key]
    return out


class HookRunner(Protocol):
    """What the pipeline needs of the extension manager (`ExtensionManager` is one)."""

    def subscribers(self, hook: str) -> list[Any]: ...
    async def call_hook(self, ext: Any, hook: str, snapshot: Any) -> Any: ...


async def dispatch(manager: HookRunner, hook: str, ctx: Any, value: Any) -> Any:
    """Run `hook` in each subscribed extension; returns the agent hook's `value`, for
    `before_turn` merged with what the extensions returned (a `TurnConfig`)."""
    subscribers = manager.subscribers(hook)
    if not subscribers:
        return value
    from think_nb.turns.hooks import TurnConfig

    config = (TurnConfig.coerce(value) or TurnConfig()) if hook == "before_turn" else None
    snap = snapshot(hook, ctx)
    if config is not None and config.system is not None:
        snap["system"] = config.system
    for ext in subscribers:
        try:
            result = await manager.call_hook(ext, hook, snap)
        except ExtensionError as exc:
            ext.hook_errors += 1
            log.warning("extension %r %s failed: %s", ext.manifest.name, hook, exc)
            continue
        if config is None or not isinstance(result, dict):
            continue
        changes = {k: v for k, v in result.items() if k in MERGEABLE and v is not None}
        ignored = sorted(set(result) - set(MERGEABLE))
        if ignored:
            log.warning("extension %r before_turn: fields %s cannot be changed by an extension; ignored",
                        ext.manifest.name, ignored)
        config = dataclasses.replace(config, **changes)
        if "system" in changes:
            snap["system"] = changes["system"]
        if "active_tools" in changes:
            snap["tool_names"] = list(changes["active_tools"])
    return config if config is not None else value
