"""`agent.marimo_chat()`: marimo's own chat element (`mo.ui.chat`) bound to an agent.

    chat = agent.marimo_chat()      # a marimo cell; display `chat`
    chat                            # or mo.ui.chat(ChatModel(agent), max_height=400, ...)

`mo.ui.chat` calls its model with the browser's message list and streams what an async generator
yields; dicts are passed to the browser as AI SDK UI message chunks, which is what a turn streams.
`ChatModel` is that model: it sends the browser's last message to the agent (one turn, on the
kernel's loop) and yields the turn's chunks as they come.

What works, and what does not (marimo 0.25):

- **Streaming**: text, reasoning and tool calls (name, input, output) stream into the chat.
- **Approvals**: a tool that needs approval shows marimo's Approve / Deny on the call; the browser
  then sends the conversation back with the decision, and `ChatModel` applies it
  (`agent.approve` / `agent.deny`) and streams the continuation into the same chat message (the
  agent stores it as a continuation message). A decision already taken elsewhere (the panel,
  `agent.approve`) is not redone: the chat says so.
- **Stop** cancels the turn (`agent.abort_request`): the partial reply is kept, status `aborted`.
- **Regenerate** (marimo's reload on the last reply) runs `agent.regenerate()` (a new branch).
- **Client tools** (JavaScript the panel runs) are not run by `mo.ui.chat`: a turn that ends waiting
  for one says so; run it from `agent.panel()`.
- **History**: the agent's SQLite transcript is the conversation the model sees. The chat shows only
  what was said through it since it was displayed; deleting or clearing messages in the chat does
  not change the agent's transcript (use `agent.clear_messages()`).
- Only the text of a message is sent (attachments are not); the chat's configuration controls
  (temperature, max_tokens) are ignored: the agent's `get_model()` / `before_turn` decide.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from think_nb.binding import runtime_of
from think_nb.messages import new_id, user_message
from think_nb.turns.broadcast import RequestStream

NOTE_ID = "think-note"


def _field(message: Any, name: str) -> Any:
    """A ChatMessage's field as the browser sent it (`dict(message)` is marimo's wire form)."""
    return (message if isinstance(message, dict) else dict(message)).get(name)


def _text(message: Any) -> str:
    parts = _field(message, "parts") or []
    texts = [p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    content = _field(message, "content")
    return "".join(texts) if texts else (content if isinstance(content, str) else "")


class ChatModel:
    """The model of a `mo.ui.chat` bound to `agent` (see the module docstring): an async generator
    `model(messages, config)` over AI SDK UI message chunks (dicts)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.sent: set[str] = set()  # ids of the browser's user messages already sent to the agent

    async def __call__(self, messages: list[Any], config: Any = None) -> AsyncIterator[dict]:
        if not messages:
            return
        last = messages[-1]
        request_id = new_id("req")
        stream = RequestStream(request_id)
        unsubscribe = runtime_of(self.agent).subscribe(stream)
        finish: dict | None = None
        try:
            task, note = self._start(last, request_id)
            continues = _field(last, "role") == "assistant"
            if task is not None:
                while (chunk := await stream.queue.get()) is not None:
                    if chunk.get("type") == "finish":
                        finish = chunk  # sent last, after a note
                        continue
                    if continues and chunk.get("type") == "start":  # the browser continues its message:
                        chunk = {k: v for k, v in chunk.items() if k != "messageId"}  # a new id would copy it
                    yield chunk
                await task
                note = self._waiting_note()
        except asyncio.CancelledError:  # Stop in the chat: marimo cancels this generator
            self.agent.abort_request(request_id, "stopped in mo.ui.chat")
            raise
        finally:
            unsubscribe()
        if note:
            yield {"type": "text-start", "id": NOTE_ID}
            yield {"type": "text-delta", "id": NOTE_ID, "delta": note}
            yield {"type": "text-end", "id": NOTE_ID}
        if finish is not None:
            yield finish

    def _start(self, last: Any, request_id: str) -> tuple[asyncio.Future | None, str | None]:
        """Start the turn the browser's last message asks for: (its task, or None and a note)."""
        role, message_id = _field(last, "role"), _field(last, "id")
        if role == "user":
            if message_id and message_id in self.sent:  # marimo's reload: answer it again
                return asyncio.ensure_future(self.agent.regenerate(request_id)), None
            if message_id:
                self.sent.add(message_id)
            return self.agent.submit(user_message(_text(last)), request_id, trigger="marimo"), None
        waiting = {p["tool_call_id"] for p in self.agent.pending_approvals()}
        decided = False
        for part in _field(last, "parts") or []:
            approval = part.get("approval") if isinstance(part, dict) else None
            call_id = part.get("toolCallId") if isinstance(part, dict) else None
            if part.get("state") != "approval-responded" or call_id not in waiting or not isinstance(approval, dict):
                continue
            if approval.get("approved"):
                self.agent.approve(call_id, auto_continue=False)
            else:
                self.agent.deny(call_id, approval.get("reason"), auto_continue=False)
            decided = True
        if decided and not self.agent.pending_approvals():
            return asyncio.ensure_future(self.agent.continue_last_turn(request_id=request_id)), None
        if decided:
            return None, "Other calls still wait for a decision."
        return None, "Nothing here waits for a decision (it may have been decided in the panel)."

    def _waiting_note(self) -> str | None:
        waiting = [p for m in self.agent.messages[-1:] for p in m.get("parts", [])
                   if p.get("state") == "input-available" and p.get("type", "")[len("tool-"):]
                   in runtime_of(self.agent).client_tool_names()]
        if waiting:
            names = ", ".join(sorted({p["type"][len("tool-"):] for p in waiting}))
            return (f"The agent waits for the client tool {names}, which mo.ui.chat cannot run: "
                    "display agent.panel() to run it.")
        return None


def marimo_chat(agent: Any, **options: Any) -> Any:
    """A `mo.ui.chat` element bound to `agent` (`options` go to `mo.ui.chat`, e.g. `max_height=400`,
    `prompts=[...]`). Needs marimo (`pip install think-nb[marimo]`); `UserError` without it."""
    from think_nb.errors import UserError

    try:
        import marimo as mo
    except ImportError:
        raise UserError("marimo_chat() needs marimo: pip install 'think-nb[marimo]'.") from None
    if "model" in options:
        raise UserError("marimo_chat() brings its own model (the agent); drop model=.")
    return mo.ui.chat(ChatModel(agent), **options)
