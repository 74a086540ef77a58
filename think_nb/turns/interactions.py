"""Tool calls that wait for the user: approvals and client tools (mixed into `Think`).

- `approve(tool_call_id)` / `deny(tool_call_id, reason)`: the `approval-requested` part becomes
  `approval-responded` (the tool runs in a continuation turn, its result lands in the original
  message) or `output-denied` (the model is told and answers accordingly).
- `add_tool_output(tool_call_id, output | error_text)`: a client tool's result from the panel
  (Think's `addToolOutput`), applied to the running turn's message or to the stored one.
Each change fires listeners' `on_message_updated(message)` (Think's `message_updated`). When
no call of that message waits any more (Think's batch barrier), a continuation turn starts.
A tool that needs approval never runs without one: only `approve` moves a part on, and only
from `approval-requested`; unknown, repeated or out-of-order decisions raise `UserError` and
change nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from think_nb.errors import UserError
from think_nb.messages import new_id
from think_nb.messages.accumulator import SETTLED_TOOL_STATES, is_tool_part, tool_name_of
from think_nb.tools.tool import dump_output

_log = logging.getLogger("think_nb")
DEFAULT_TOOL_ERROR = "Tool execution denied by user"
LAST_CLIENT_TOOLS = "lastClientTools"
"""agent_state key of the panel-registered client tool schemas of the last request (Think's name)."""


class Interactions:
    """Approvals and client-tool results (see the module docstring)."""

    def pending_approvals(self) -> list[dict]:
        """Calls waiting for approval, oldest first: `{tool_call_id, tool_name, input, message_id,
        approval_id}`. They are stored, so they survive a kernel restart."""
        return [{"tool_call_id": p["toolCallId"], "tool_name": tool_name_of(p), "input": p.get("input"),
                 "message_id": m["id"], "approval_id": (p.get("approval") or {}).get("id")}
                for m in self._messages for p in m.get("parts", [])
                if is_tool_part(p) and p.get("state") == "approval-requested"]

    def approve(self, tool_call_id: str, *, auto_continue: bool = True) -> asyncio.Task | None:
        """Approve a pending call: it runs in a continuation turn (returned; None when other calls of
        that message still wait, or `auto_continue=False`). Raises `UserError` if nothing waits."""
        return self._decide(tool_call_id, True, None, auto_continue)

    def deny(self, tool_call_id: str, reason: str | None = None, *, auto_continue: bool = True) -> asyncio.Task | None:
        """Deny a pending call: it becomes `output-denied` (with `reason`) and the model is told in a
        continuation turn. Raises `UserError` if nothing waits."""
        return self._decide(tool_call_id, False, reason, auto_continue)

    def add_tool_output(self, tool_call_id: str, output: Any = None, *, error_text: str | None = None,
                        state: str | None = None, auto_continue: bool = True) -> asyncio.Task | None:
        """Record a client tool's result (`output`, or `error_text` / `state="output-error"`).

        Returns the continuation turn's task when this result completed the batch, else None.
        Raises `UserError` when no call with that id waits for a result.
        """
        failed = state == "output-error" or error_text is not None
        output = dump_output(output)  # JSON-compatible before anything changes (sets, datetimes, objects)
        chunk = ({"type": "tool-output-error", "toolCallId": tool_call_id, "errorText": error_text or DEFAULT_TOOL_ERROR}
                 if failed else {"type": "tool-output-available", "toolCallId": tool_call_id, "output": output})
        turn = self._current_turn
        if turn is not None and _waiting(turn.acc.find_tool_part(tool_call_id), ("input-available",)):
            turn.acc.apply(chunk)  # in flight: persisted with the turn; the barrier runs when it ends
            turn.publish(chunk)
            if auto_continue:
                self._continue_after.add(turn.acc.message["id"])
            return None
        # only calls waiting for a client result: a tool that needs approval never gets an output
        # from a frame (Think also accepts approval states here; think_nb does not)
        message, part = self._find_part(tool_call_id, ("input-available",))
        if failed:
            part.update(state="output-error", errorText=chunk["errorText"])
        else:
            part.update(state="output-available", output=output)
        return self._apply_and_continue(message, auto_continue)

    # -- internals ------------------------------------------------------------------------
    def _decide(self, tool_call_id: str, approved: bool, reason: str | None, auto_continue: bool) -> asyncio.Task | None:
        message, part = self._find_part(tool_call_id, ("approval-requested",))
        approval = {**(part.get("approval") or {}), "approved": approved}
        if reason:
            approval["reason"] = reason
        part.update(state="approval-responded" if approved else "output-denied", approval=approval)
        return self._apply_and_continue(message, auto_continue)

    def _apply_and_continue(self, message: dict, auto_continue: bool) -> asyncio.Task | None:
        """Store the changed message, start the continuation (if the batch is complete), then tell
        the views, so they never see a "ready" gap between the two."""
        self._store.update(message)
        task = self._continue_if_settled(message) if auto_continue else None
        self._notify("on_message_updated", message)
        return task

    def _find_part(self, tool_call_id: str, states: tuple[str, ...]) -> tuple[dict, dict]:
        for message in reversed(self._messages):
            for part in message.get("parts", []):
                if is_tool_part(part) and part.get("toolCallId") == tool_call_id:
                    if part.get("state") not in states:
                        raise UserError(f"Tool call {tool_call_id!r} is {part.get('state')!r}, not waiting "
                                        f"({' or '.join(states)}); nothing was changed.")
                    return message, part
        waiting = [p["toolCallId"] for m in self._messages for p in m.get("parts", [])
                   if is_tool_part(p) and p.get("state") in states]
        raise UserError(f"No tool call {tool_call_id!r} in this conversation; calls waiting ({' or '.join(states)}): "
                        f"{waiting}.")

    def _update_message(self, message: dict) -> None:
        self._store.update(message)
        self._notify("on_message_updated", message)

    def _replace_message(self, message: dict) -> None:
        """Store a new version of a message of the current branch and tell the views."""
        self._messages = [message if m["id"] == message["id"] else m for m in self._messages]
        self._update_message(message)

    def set_client_tools(self, schemas: list[dict] | None) -> None:
        """Remember the panel's client tool schemas `{name, description?, parameters?}` for this and
        later turns (Think persists the last request's `clientTools`; None clears them)."""
        self._store.set_state(LAST_CLIENT_TOOLS, list(schemas) if schemas else None)

    def client_tool_specs(self) -> list[dict]:
        """Python-declared client tools as `{name, description, parameters, js}` (for the panel)."""
        from think_nb.tools.toolset import resolve_tools

        tools = self.get_tools()
        if asyncio.iscoroutine(tools):
            tools.close()
            return []
        return [{"name": t.name, "description": t.description, "parameters": t.parameters, "js": t.js}
                for t in resolve_tools(tools).values() if t.client and t.js]

    def _continue_if_settled(self, message: dict) -> asyncio.Task | None:
        """Think's batch barrier: continue once no call of `message` waits for the user."""
        if self._messages and self._messages[-1]["id"] != message["id"]:
            return None  # the conversation moved on; the next turn will see the result
        if any(_waiting(p, ("approval-requested", "input-available")) for p in message.get("parts", [])):
            return None
        self._continue_after.discard(message["id"])
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        return self._start([], new_id("req"), trigger="continuation", continuation=True)

    def _after_turn(self) -> None:
        """A turn ended: results that arrived while it streamed may complete a batch now."""
        if self._messages and self._messages[-1]["id"] in self._continue_after:
            self._continue_if_settled(self._messages[-1])


def _waiting(part: dict | None, states: tuple[str, ...]) -> bool:
    return part is not None and is_tool_part(part) and part.get("state") in states and \
        part.get("state") not in SETTLED_TOOL_STATES
