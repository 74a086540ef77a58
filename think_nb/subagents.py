"""Sub-agents and `chat()`: one agent driving another's turn and watching its stream
(`Think.sub_agent`, `Think.chat`, `Think.cancel_chat` and `Think.delegate` call these).

- `parent.sub_agent(Child, name)` → a `Child` stored in the parent's SQLite file under its own
  key (`"<parent key>/<Child>:<name>"`), with its own messages and tools.
- `await child.chat(message, callback, signal=None)` runs a full turn and calls
  `callback.on_start({"request_id": ...})`, `callback.on_event(json_chunk)` per chunk, then
  `callback.on_done()` or `callback.on_error(message)`, or `callback.on_interrupted()` when the
  stall watchdog ended the turn and a continuation will own the answer (`on_chat_recovery`
  decided to continue, attempts left; that answer does not arrive on this callback). A stall
  that nothing continues ends with `on_error`, as does a missing `on_interrupted` (Think's
  `StreamCallback`, #1644). Callback methods may be sync or async, and any may be missing;
  `on_interrupted` may take no argument (Think's `onInterrupted()`) or one (the stall's message).
  `client_tools=[{name, description?, parameters?}]` with `on_client_tool_call=fn` are tools for
  that turn only whose calls `fn` answers inside the one `chat()` (Think's RPC client tools,
  `think_nb.tools.rpc_client`).
- `child.cancel_chat(request_id, reason=None)` cancels it from anywhere (no-op when unknown/ended).
- `await parent.delegate(child, message)`, called from one of the parent's tools, runs
  `child.chat` and streams the child's progress into the parent's running turn as a
  `data-subagent` part (updated in place), then returns the child's final text. The run is
  recorded in the parent's agent-tool runs and re-attached after a restart (`think_nb.agent_tools`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import warnings
from typing import TYPE_CHECKING, Any

from think_nb import agent_tools, jsonsafe
from think_nb.aio import call_method, maybe_await
from think_nb.binding import runtime_of
from think_nb.errors import describe
from think_nb.messages import new_id, text_of, user_message
from think_nb.tools.tool import CURRENT_TOOL_CALL
from think_nb.turns.broadcast import RequestStream
from think_nb.turns.result import TurnResult
from think_nb.turns.signal import AbortSignal

if TYPE_CHECKING:
    from think_nb.turns.engine import TurnEngine

FORWARD_INTERVAL_S = 0.1  # data-subagent updates at most every 100 ms


def _accepts_argument(fn: Any) -> bool:
    """True when `fn` can be called with one positional argument (a callback method that takes
    the message), False for Think's argument-less form (`def on_interrupted(self)`)."""
    try:
        inspect.signature(fn).bind(None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): call it as Think does, with nothing
        return False
    return True


async def _interrupted(callback: Any, message: str) -> None:
    fn = callback.on_interrupted
    await maybe_await(fn(message) if _accepts_argument(fn) else fn())


async def chat(engine: TurnEngine, message: str | dict | list[dict], callback: Any, *,
               signal: AbortSignal | None = None, tools: Any = None, client_tools: Any = None,
               on_client_tool_call: Any = None) -> TurnResult:
    """Run one full turn on `engine` and stream it to `callback` (see the module docstring).
    Raises `UserError` for bad `client_tools` (before anything is stored)."""
    if tools is not None:
        warnings.warn("chat(tools=...) is ignored: the agent's tools come from its get_tools().", stacklevel=3)
    rpc = await _client_tools(engine, client_tools, on_client_tool_call)
    messages: Any = [user_message(message)] if isinstance(message, str) else (
        [message] if isinstance(message, dict) else message if callable(message) else list(message))
    request_id = new_id("req")
    listener = RequestStream(request_id)
    unsubscribe = engine.subscribe(listener)
    if rpc:
        engine.rpc_tools[request_id] = rpc
    try:
        await call_method(callback, "on_start", {"request_id": request_id})
        task = engine.start(messages, request_id, trigger="chat", signal=signal)
        while (chunk := await listener.queue.get()) is not None:
            await call_method(callback, "on_event", jsonsafe.dumps(chunk))
        result = await task
    finally:
        unsubscribe()
        engine.rpc_tools.pop(request_id, None)
    continues = result.interrupted and await engine.continuation_scheduled(result.request_id)  # asked once, always
    if result.status == "completed":
        await call_method(callback, "on_done")
    elif continues and callable(getattr(callback, "on_interrupted", None)):
        await _interrupted(callback, result.error or "The turn was interrupted.")
    else:
        await call_method(callback, "on_error", result.error or f"The turn ended: {result.status}.")
    return result


async def _client_tools(engine: TurnEngine, schemas: Any, executor: Any) -> dict[str, Any]:
    """`chat()`'s per-turn client tools, checked: `UserError` for bad schemas, an executor without
    tools, or a name a gated tool of the agent has (against the tools a turn would merge now; a
    `get_tools()` that fails here is left for the turn to report)."""
    from think_nb.errors import UserError
    from think_nb.tools import rpc_client
    from think_nb.turns import assemble

    if schemas is None:
        if executor is not None:
            raise UserError("chat(on_client_tool_call=...) needs client_tools=[{'name': ..., ...}]: the tools the "
                            "function answers.")
        return {}
    rpc = rpc_client.build(schemas, executor)
    try:
        merged = await assemble.tools(engine.host)
    except Exception:  # noqa: BLE001 - user code; the turn reports it
        return rpc
    rpc_client.refuse_gated(merged, rpc)
    return rpc


async def delegate(engine: TurnEngine, child: Any, message: str | dict, *, signal: AbortSignal | None = None) -> str:
    """`child.chat(message)` from inside a tool of `engine`'s agent, mirrored into its running turn
    and recorded as an agent-tool run (`think_nb.agent_tools`)."""
    runs = engine.store.child_runs
    tool_call_id = CURRENT_TOOL_CALL.get()
    rid = agent_tools.run_id(tool_call_id)
    done = runs.get(rid)
    if done is not None and done["status"] in ("completed", "error", "aborted"):  # Think: not run again
        if done["status"] == "completed":
            return str(done["output"] or "")
        raise RuntimeError(agent_tools.failure(done))
    msg = user_message(message) if isinstance(message, str) else {**message, "id": message.get("id") or new_id("msg")}
    turn = engine.current_turn
    runs.begin({"run_id": rid, "child_key": runtime_of(child).key, "child_class": type(child).__name__,
                "child_name": child.name, "class_ref": agent_tools.class_ref(type(child)),
                "parent_request_id": turn.request_id if turn is not None else None,
                "parent_tool_call_id": tool_call_id, "input_message_id": msg["id"]})
    forward = _Forwarder(engine, child, bind=lambda request_id: runs.bind(rid, request_id))
    try:
        result = await child.chat(msg, forward, signal=signal)
    except asyncio.CancelledError:
        if forward.request_id:
            child.cancel_chat(forward.request_id, "parent cancelled")
        runs.settle(rid, "aborted", error="the parent's turn was cancelled")
        raise
    except BaseException as exc:
        runs.settle(rid, "error", error=describe(exc))
        raise
    text = text_of(result.message or {})
    row = agent_tools.finish(runs, rid, result, text)
    await forward.publish(result.status, force=True)
    if row["status"] != "completed":
        raise RuntimeError(agent_tools.failure(row))
    return text


class _Forwarder:
    """A `chat()` callback that mirrors a child's stream into the parent's current turn."""

    def __init__(self, engine: TurnEngine, child: Any, bind: Any = None) -> None:
        self.engine, self.child = engine, child
        self.bind = bind  # told the child's request id before its turn starts
        self.request_id = ""
        self.text = ""
        self.tools: list[str] = []
        self._last = 0.0

    def on_start(self, info: dict) -> None:
        self.request_id = info["request_id"]
        if self.bind is not None:
            self.bind(self.request_id)

    async def on_event(self, raw: str) -> None:
        chunk = json.loads(raw)
        if chunk["type"] == "text-delta":
            self.text += chunk["delta"]
        elif chunk["type"] == "tool-input-available":
            self.tools.append(chunk["toolName"])
        await self.publish("streaming")

    async def publish(self, status: str, force: bool = False) -> None:
        turn = self.engine.current_turn
        now = time.monotonic()
        if turn is None or (not force and now - self._last < FORWARD_INTERVAL_S):
            return
        self._last = now
        await turn.emit({"type": "data-subagent", "id": self.request_id, "data": {
            "agent": runtime_of(self.child).key, "label": f"{type(self.child).__name__} · {self.child.name}",
            "request_id": self.request_id, "status": status,
            "text": self.text, "tools": list(self.tools)}})
