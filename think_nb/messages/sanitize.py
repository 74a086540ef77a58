"""The sanitize pass every message goes through before it is stored (Think's `sanitizeMessage`,
`agents/chat/sanitize.ts`).

Two rules, as Think's:

- OpenAI's per-response item ids are not history: `itemId` and `reasoningEncryptedContent` are
  removed from a part's `providerMetadata.openai` / `callProviderMetadata.openai` (an `openai`
  entry left empty goes, and so does a metadata dict left empty). Other providers' metadata (an
  Anthropic reasoning signature) is kept.
- A `reasoning` part whose text is empty or blank is dropped, unless it still has provider
  metadata (a signed or redacted reasoning block the provider needs back).

`sanitize(message)` is applied where a message enters from outside (`think_nb.messages.validate
.incoming`: submit, send, save_messages, add_messages, a panel frame, import_messages) and where
every message is stored (`think_nb.conversation`), so what is stored, kept in memory and compared
is the sanitized form. It never mutates its argument; it is idempotent.
"""

from __future__ import annotations

from typing import Any

OPENAI_TRANSIENT = ("itemId", "reasoningEncryptedContent")
"""Keys of `providerMetadata.openai` that are dropped (Think's `stripOpenAIMetadata`)."""
METADATA_KEYS = ("providerMetadata", "callProviderMetadata")


def sanitize(message: Any) -> Any:
    """`message` without OpenAI item ids and without empty reasoning parts lacking metadata; a new
    dict when anything changed, else `message` itself. A value that is not a message with a
    `parts` list is returned as it is (validation reports it)."""
    if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
        return message
    parts = [_stripped(p) for p in message["parts"]]
    kept = [p for p in parts if not _empty_reasoning(p)]
    if len(kept) == len(parts) and all(a is b for a, b in zip(parts, message["parts"], strict=True)):
        return message
    return {**message, "parts": kept}


def _stripped(part: Any) -> Any:
    if not isinstance(part, dict):
        return part
    out = part
    for key in METADATA_KEYS:
        meta = out.get(key)
        if not isinstance(meta, dict) or not isinstance(meta.get("openai"), dict):
            continue
        openai = meta["openai"]
        if not any(k in openai for k in OPENAI_TRANSIENT):
            continue
        rest = {k: v for k, v in openai.items() if k not in OPENAI_TRANSIENT}
        meta = {k: v for k, v in meta.items() if k != "openai"} | ({"openai": rest} if rest else {})
        out = {k: v for k, v in out.items() if k != key} | ({key: meta} if meta else {})
    return out


def _empty_reasoning(part: Any) -> bool:
    if not isinstance(part, dict) or part.get("type") != "reasoning":
        return False
    text = part.get("text")
    if isinstance(text, str) and text.strip():
        return False
    meta = part.get("providerMetadata")
    return not (isinstance(meta, dict) and meta)
