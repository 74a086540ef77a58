"""The model's memory tools, generated from the session's blocks (Think's `session.tools()`).

- `set_context`, offered when a block is writable.
  Input `{label, content, action?: "replace" | "append", metadata?: {title?, description?}}`.
  Output `Written to <label>. Usage: <pct>% (<tokens>/<max> tokens)`; keyed blocks: `Indexed "<key>" in <label>.`
- `load_context`, offered when a skill block exists. Input `{label, key}`.
  Output: the content, or `Not found: <key>`.
- `unload_context`, offered when a skill block exists. Input `{label, key}`.
  Output `Unloaded "<key>" from <label>.` (the stored `load_context` output becomes `[skill unloaded: <key>]`).
- `search_context`, offered when a search block exists. Input `{label, query}`.
  Output: the top 10 as `[key]\\ncontent`, or `No results found.`
- `session_search`, offered by `with_searchable_history()`. Input `{query}`.
  Output: the matching messages of every session of the agent.

`label` is an enum of the eligible labels; `metadata` is offered only when keyed (skill or
search) writable blocks exist. A refused `set_context` write (over `max_tokens`, a read-only
block) raises, so the call is an `output-error` the panel shows as failed and the model reads as
`Error: <ErrorType>: …` (the block stays unchanged and the error names the
limit); the other tools return their failures as `Error: …` text, as Think does.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Protocol

from think_nb.tools.tool import Tool


class Session(Protocol):
    """What the memory tools call on the agent's memory (`think_nb.session.builder.Session` is one;
    declared here so the builder, which offers these tools, is not imported back)."""

    async def set_block(self, label: str, content: str) -> Any: ...
    async def append_block(self, label: str, content: str) -> Any: ...
    async def set_keyed(self, label: str, key: str, content: str, description: str | None = None) -> None: ...
    async def load_keyed(self, label: str, key: str) -> str | None: ...
    def unload_keyed(self, label: str, key: str) -> None: ...
    async def search_keyed(self, label: str, query: str) -> list[tuple[str, str]]: ...
    def search(self, query: str, limit: int = 20, *, all_sessions: bool = False,
               all_words: bool = False) -> list[dict]: ...


def context_tools(session: Session, blocks: list) -> dict[str, Tool]:
    """The tools for `blocks` (the session's current `ContextBlock`s, registration order)."""
    tools: dict[str, Tool] = {}
    writable = [b for b in blocks if b.writable]
    keyed = [b.label for b in writable if b.kind in ("skill", "search")]
    skills = [b.label for b in blocks if b.kind == "skill"]
    searchable = [b.label for b in blocks if b.kind == "search"]

    if writable:
        async def set_context(label: str, content: str, action: str = "replace", metadata: dict | None = None) -> str:
            # a refused write raises: the call is an output-error (failed), not a result that reads as success
            if label in keyed:
                key = _key_for(content, metadata)
                await session.set_keyed(label, key, content, (metadata or {}).get("description"))
                return f'Indexed "{key}" in {label}.'
            block = await (session.append_block(label, content) if action == "append"
                           else session.set_block(label, content))
            if block.max_tokens:
                return f"Written to {label}. Usage: {block.percent_used:g}% ({block.tokens}/{block.max_tokens} tokens)"
            return f"Written to {label}. Usage: {block.tokens} tokens"

        props: dict = {"label": {"type": "string", "enum": [b.label for b in writable]},
                       "content": {"type": "string", "description": "The new content (or the text to append)."},
                       "action": {"type": "string", "enum": ["replace", "append"],
                                  "description": "replace (default) or append to the block."}}
        if keyed:
            props["metadata"] = {"type": "object", "properties": {"title": {"type": "string"},
                                                                  "description": {"type": "string"}},
                                 "description": "For keyed blocks: a title (the entry's key) and description."}
        listing = "\n".join(f"- {b.label}" + (f": {b.description}" if b.description else "")
                            + (f" (max {b.max_tokens} tokens)" if b.max_tokens else "") for b in writable)
        tools["set_context"] = Tool(
            "set_context", "Write to a context block of your system prompt. Writes persist across sessions.\n"
            f"Writable blocks:\n{listing}",
            {"type": "object", "properties": props, "required": ["label", "content"]}, set_context)

    if skills:
        async def load_context(label: str, key: str) -> str:
            try:
                content = await session.load_keyed(label, key)
            except Exception as exc:  # noqa: BLE001
                return f"Error: {exc}"
            return content if content is not None else f"Not found: {key}"

        async def unload_context(label: str, key: str) -> str:
            try:
                session.unload_keyed(label, key)
            except Exception as exc:  # noqa: BLE001
                return f"Error: {exc}"
            return f'Unloaded "{key}" from {label}.'

        schema = {"type": "object", "properties": {"label": {"type": "string", "enum": skills},
                                                   "key": {"type": "string"}}, "required": ["label", "key"]}
        tools["load_context"] = Tool("load_context", "Load an entry (by key) of a loadable context block "
                                     "listed in your system prompt.", schema, load_context)
        tools["unload_context"] = Tool("unload_context", "Unload an entry loaded with load_context to free "
                                       "context; its content is removed from the conversation.", schema, unload_context)

    if searchable:
        async def search_context(label: str, query: str) -> str:
            try:
                hits = await session.search_keyed(label, query)
            except Exception as exc:  # noqa: BLE001
                return f"Error: {exc}"
            return "\n\n".join(f"[{k}]\n{c}" for k, c in hits[:10]) or "No results found."

        tools["search_context"] = Tool(
            "search_context", "Search a searchable context block; every word must match.",
            {"type": "object", "properties": {"label": {"type": "string", "enum": searchable},
                                              "query": {"type": "string"}}, "required": ["label", "query"]},
            search_context)
    return tools


def history_search_tool(session: Session) -> Tool:
    """`session_search {query}`: search the agent's past conversations (every session)."""
    async def session_search(query: str) -> str:
        hits = session.search(query, limit=10, all_sessions=True, all_words=True)
        return "\n\n".join(f"[{h['session']} {h['role']} {h['id']}]\n{h['text']}" for h in hits) or "No results found."

    return Tool("session_search", "Search the text of past conversations with the user (all sessions); "
                "every word must match.",
                {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}, session_search)


def _key_for(content: str, metadata: dict | None) -> str:
    title = (metadata or {}).get("title") or ""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    if slug:
        return slug
    words = re.sub(r"[^a-z0-9]+", "-", content.lower()).strip("-")[:40].strip("-")
    return f"{words}-{hashlib.sha1(content.encode()).hexdigest()[:8]}"
