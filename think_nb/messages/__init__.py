"""UIMessages, their parts, and UIMessageChunks, shaped exactly as the AI SDK defines them.

Everything here is plain JSON-compatible dicts: what users see, what the panel receives and what
SQLite stores. `accumulator` turns a chunk stream into one assistant UIMessage; `convert` turns a
UIMessage history into the OpenAI-style model messages litellm takes.
"""

from think_nb.messages.accumulator import MessageAccumulator
from think_nb.messages.convert import to_model_messages
from think_nb.messages.ids import new_id

__all__ = ["MessageAccumulator", "new_id", "text_of", "to_model_messages", "user_message"]


def user_message(text: str, *, id: str | None = None) -> dict:
    """Build a user UIMessage `{id, role: "user", parts: [{type: "text", text}]}`."""
    return {"id": id or new_id("msg"), "role": "user", "parts": [{"type": "text", "text": text}]}


def text_of(message: dict) -> str:
    """Concatenate the `text` parts of a UIMessage (reasoning and tool parts are left out)."""
    return "".join(p.get("text", "") for p in message.get("parts", []) if p.get("type") == "text")
