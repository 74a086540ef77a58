"""`Session`: an agent's memory, configured by a chainable builder (Think's `Session`).

    class Notes(Think):
        def configure_session(self, session):
            return (session
                    .with_context("soul", provider=ReadOnly("You are a careful analyst."))
                    .with_context("memory", description="Facts learned.", max_tokens=2000)
                    .compact_after(8000))

Builder methods (order-independent, each returns the session): `with_context(label,
description=, max_tokens=, provider=)`, `with_cached_prompt()`, `freeze_prompt(bool)`,
`compact_after(tokens, token_counter=)`, `on_compaction(fn)`, `on_compaction_error(fn)`,
`with_searchable_history()`. The agent builds its session on first use
(`Think.configure_session`), then each turn asks it for the system prompt, the tools and the
history (`think_nb.session.host.SessionHost`).

**When a block written by the model reaches the prompt.** Think freezes the rendered prompt
the first time and re-renders it only on a refresh (compaction, clear, skill change), so a
`set_context` write is durable at once but the model sees it in its prompt only after the next
refresh (it sees the tool call in the transcript meanwhile). That keeps the prompt prefix
byte-identical across turns, which hosted models' prefix caches reward. think_nb's default is
the opposite, **live**: the prompt is rendered at the start of every turn, so a write shows
up in the very next turn's prompt. Notebook users inspect memory cell by cell and expect what
they see in `agent.context_blocks()` to be what the model gets, and the default model is
in-process, with no prefix cache to protect. Within one turn the prompt never changes (it
is assembled once per turn). `freeze_prompt()` restores Think's behaviour (a snapshot per
session, refreshed by `refresh_system_prompt()`, compaction and clear); `with_cached_prompt()`
freezes too and also persists the snapshot in SQLite (block `_system_prompt:<session>`), so it
is returned verbatim after a kernel restart, as Think's `withCachedPrompt()` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from think_nb import events
from think_nb.aio import call as _call
from think_nb.aio import close_unawaited as _close
from think_nb.errors import UserError
from think_nb.session import compaction, tokens
from think_nb.session import skills as skills_mod
from think_nb.session.history import count_history_tokens, message_text
from think_nb.session.tokens import count_tokens
from think_nb.store.messages import SYNTHETIC_PREFIX
from think_nb.turns.hooks import user_code

if TYPE_CHECKING:  # blocks, providers and search load with the first block or search (a turn without any needs none)
    from think_nb.session.blocks import ContextBlock
    from think_nb.session.host import SessionEngine, SessionHost
    from think_nb.session.providers import SqliteSearchProvider
    from think_nb.tools.tool import Tool

log = logging.getLogger("think_nb")

PROMPT_KEY = "_system_prompt"
UNLOADED = "unloaded_tool_calls"


@dataclass
class _Spec:
    label: str
    description: str
    max_tokens: int | None
    provider: Any


class Session:
    """The memory of one agent: context blocks, the prompt made from them, the memory tools,
    compaction and search. Get it as `agent.session`; configure it in `configure_session`.

    Attributes:
        host: the agent it belongs to, as a `SessionHost` (`think_nb.session.host`).
        phase: "idle" or "compacting" (shown by the panel's context tab).
    """

    def __init__(self, host: SessionHost, engine: SessionEngine) -> None:
        self.host = host
        self.store = host.store
        self.conversation = host.conversation
        self._engine = engine
        self.phase = "idle"
        self._specs: dict[str, _Spec] = {}
        self._freeze = False
        self._cached = False
        self._frozen: dict[str, str] = {}
        self._threshold: int | None = None
        self._counter: Callable[[str], int] | None = None
        self._compact_fn: Callable | None = None
        self._compaction_error: Callable | None = None
        self._history_search = False
        self._last_content: dict[str, str] = {}
        self._skill_state: dict = {}
        self._skills: dict[str, skills_mod.Skill] | None = None
        self._last_compaction: dict | None = None

    # -- builder ---------------------------------------------------------------------------
    def with_context(self, label: str, *, description: str | None = None, max_tokens: int | None = None,
                     provider: Any = None) -> Session:
        """Add a context block (Think's `withContext`). Without `provider` the block is writable
        and stored in SQLite. Raises `UserError` for a duplicate or reserved label."""
        self.add_context(label, description=description, max_tokens=max_tokens, provider=provider)
        return self

    def with_cached_prompt(self) -> Session:
        """Freeze the prompt and persist the snapshot (Think's `withCachedPrompt`)."""
        self._freeze = self._cached = True
        return self

    def freeze_prompt(self, frozen: bool = True) -> Session:
        """Render the prompt once per session and reuse it until a refresh (Think's default);
        `False` (think_nb's default) renders it every turn. See the module docstring."""
        self._freeze = frozen
        return self

    def compact_after(self, tokens: int, *, token_counter: Callable[[str], int] | None = None) -> Session:
        """Compact automatically before a turn whose prompt + history exceed `tokens` (litellm's
        count for the agent's model, or `token_counter(text)`). Uses `on_compaction`'s function,
        else the built-in summariser on the agent's model (`compaction.create_compact_function()`,
        with the verbatim tail capped at half the threshold so compaction can bring the
        history under it; Think's fixed 20,000-token tail would make a small threshold a no-op)."""
        self._threshold, self._counter = int(tokens), token_counter
        return self

    def on_compaction(self, fn: Callable) -> Session:
        """The compaction function: `async fn(messages, ctx) -> {"summary", "from_message_id",
        "to_message_id"} | None` (see `think_nb.session.compaction`)."""
        self._compact_fn = fn
        return self

    def on_compaction_error(self, fn: Callable[[Exception], Any]) -> Session:
        """Called with the exception when automatic compaction fails (the turn still runs)."""
        self._compaction_error = fn
        return self

    def with_searchable_history(self) -> Session:
        """Offer the model `session_search {query}` over the agent's past conversations (Think's
        `SessionManager.tools()`; Think itself gives the model no transcript search)."""
        self._history_search = True
        return self

    # -- blocks ----------------------------------------------------------------------------
    def add_context(self, label: str, *, description: str | None = None, max_tokens: int | None = None,
                    provider: Any = None) -> None:
        """Add a block at run time (Think's `addContext`); call `refresh_system_prompt()` when frozen."""
        if label in self._specs or label in (PROMPT_KEY, skills_mod.CATALOG_LABEL):
            raise UserError(f"Context block {label!r} already exists (or is reserved).")
        if provider is None:
            from think_nb.session.providers import SqliteBlockProvider

            provider = SqliteBlockProvider(self.store.blocks, label)
        self._specs[label] = _Spec(label, description or "", max_tokens, provider)

    def remove_context(self, label: str) -> None:
        """Remove a block (Think's `removeContext`); its stored content is kept."""
        self._specs.pop(label, None)

    def searchable(self, label: str, limit: int = 10) -> SqliteSearchProvider:
        """A ready-made SQLite FTS5 search provider for `with_context(label, provider=...)`."""
        from think_nb.session.providers import SqliteSearchProvider

        return SqliteSearchProvider(self.store.search_rows(label), limit)

    @property
    def has_blocks(self) -> bool:
        """True when the prompt is built from blocks (any block, or skills)."""
        return bool(self._specs) or bool(self.skill_registry())

    async def ablocks(self) -> list[ContextBlock]:
        """Every block as it is now, in registration order (the skills catalogue last)."""
        if self._specs:
            await tokens.aready(self.model_name())  # each block's tokens are counted: never block the loop
        out = []
        for spec in self._specs.values():
            getter = getattr(spec.provider, "get", None)
            with user_code("get", spec.provider, f"context block {spec.label!r}"):
                content = str(await _call(getter) or "") if callable(getter) else ""
            self._last_content[spec.label] = content
            out.append(self._block(spec, content))
        out.extend(self._skill_blocks())
        return out

    def blocks(self) -> list[ContextBlock]:
        """`ablocks()` from synchronous code. An async provider cannot be awaited inside a running
        event loop (a notebook cell), so its content is the one read at the last turn."""
        out = []
        for spec in self._specs.values():
            getter = getattr(spec.provider, "get", None)
            value = getter() if callable(getter) else ""
            if inspect.isawaitable(value):
                try:
                    asyncio.get_running_loop()
                except RuntimeError:
                    value = asyncio.run(_await(value))
                else:
                    _close(value)
                    value = self._last_content.get(spec.label, "")
            out.append(self._block(spec, str(value or "")))
        out.extend(self._skill_blocks())
        return out

    def get_context_block(self, label: str) -> ContextBlock | None:
        """One block by label, or None."""
        return next((b for b in self.blocks() if b.label == label), None)

    async def set_block(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's content (Think's `replaceContextBlock`).

        Raises:
            UserError: unknown or read-only block, or `content` over `max_tokens` (the block is
                unchanged; the message names the limit).
        """
        spec = self._writable(label)
        block = self._block(spec, content)
        if spec.max_tokens and block.tokens > spec.max_tokens:
            raise UserError(f"content is {block.tokens} tokens, which exceeds maxTokens ({spec.max_tokens}) "
                            f"of block {label!r}; the block was not changed. Shorten it.")
        await _call(spec.provider.set, content)
        self._last_content[label] = content
        self.emit_status()
        return block

    async def append_block(self, label: str, content: str) -> ContextBlock:
        """Append to a writable block, adding a newline separator if needed (Think's `appendContextBlock`)."""
        spec = self._writable(label)
        current = str(await _call(spec.provider.get) or "")
        joined = current + ("\n" if current and not current.endswith("\n") else "") + content
        return await self.set_block(label, joined)

    async def set_keyed(self, label: str, key: str, content: str, description: str | None = None) -> None:
        """Store an entry of a keyed (skill or search) block whose provider has `set`."""
        spec = self._spec(label)
        if not callable(getattr(spec.provider, "set", None)):
            raise UserError(f"Block {label!r} is read-only.")
        from think_nb.session.providers import provider_kind

        if provider_kind(spec.provider) == "skill":
            await _call(spec.provider.set, key, content, description)
        else:
            await _call(spec.provider.set, key, content)
        self.emit_status()

    async def load_keyed(self, label: str, key: str) -> str | None:
        """`load(key)` of a skill block; records the key as loaded."""
        spec = self._spec(label)
        content = await _call(spec.provider.load, key)
        if content is not None:
            self._skill_state.setdefault("loaded", set()).add((label, key))
        return content

    def unload_keyed(self, label: str, key: str) -> None:
        """Replace the `load_context` output for (label, key) with `[skill unloaded: <key>]` in the
        stored transcript, to give the context back (Think's `unload_context`).

        A load made earlier in the running turn is still held by the turn, which persists its
        message at the end of each step; those tool calls are remembered (agent state
        `unloaded_tool_calls`) and rewritten when the history is next read, so the model never
        sees the content again after this turn.
        """
        self._spec(label)
        ids = [p["toolCallId"] for m in self.conversation for p in m.get("parts", [])
               if p.get("type") == "tool-load_context" and p.get("input") == {"label": label, "key": key}]
        state = self.store.state
        state.set(UNLOADED, sorted(self._unloaded_ids() | set(ids)))
        self._rewrite_unloaded()
        self._skill_state.get("loaded", set()).discard((label, key))

    def _unloaded_ids(self) -> set[str]:
        """The tool call ids `unload_context` hid (agent state, a JSON list)."""
        stored = self.store.state.get(UNLOADED, [])
        return {str(i) for i in stored} if isinstance(stored, list) else set()

    def _rewrite_unloaded(self) -> None:
        unloaded = self._unloaded_ids()
        if not unloaded:
            return

        def rewrite(message: dict) -> dict | None:  # a changed copy: stored messages never change in place
            parts = [_unloaded(part, unloaded) for part in message.get("parts", [])]
            changed = any(new is not old for new, old in zip(parts, message.get("parts", []), strict=True))
            return {**message, "parts": parts} if changed else None

        self.conversation.rewrite(rewrite)

    async def search_keyed(self, label: str, query: str) -> list[tuple[str, str]]:
        """`search(query)` of a search block: `[(key, content)]`, best first."""
        spec = self._spec(label)
        return [tuple(hit) for hit in await _call(spec.provider.search, query)]

    # -- prompt ----------------------------------------------------------------------------
    async def system_prompt(self) -> str | None:
        """The system prompt rendered from the blocks, or None when there are none (then
        `get_system_prompt()` is used). Frozen/cached per the settings above."""
        if not self.has_blocks:
            return None
        key = self.store.messages.key
        if self._freeze and key in self._frozen:
            return self._frozen[key]
        if self._cached:
            stored = self.store.blocks.get(f"{PROMPT_KEY}:{key}")
            if stored:
                self._frozen[key] = stored
                return stored
        from think_nb.session.blocks import render_prompt

        prompt = render_prompt(await self.ablocks())
        if self._freeze:
            self._frozen[key] = prompt
        if self._cached:
            self.store.blocks.set(f"{PROMPT_KEY}:{key}", prompt)
        return prompt

    def refresh_system_prompt(self) -> None:
        """Drop the frozen (and cached) prompt; the next turn renders it again."""
        key = self.store.messages.key
        self._frozen.pop(key, None)
        if self._cached:
            self.store.blocks.delete(f"{PROMPT_KEY}:{key}")

    # -- tools -----------------------------------------------------------------------------
    async def tools(self) -> dict[str, Tool]:
        """The memory tools for the current blocks, then the skill tools, then `session_search`
        (Think's `session.tools()`, in Think's order): the built-in families of slot "memory"
        (`think_nb.tools.builtin`)."""
        from think_nb.tools import builtin

        return await builtin.offered(builtin.BuiltinContext(self.host, self), "memory")

    @property
    def searchable_history(self) -> bool:
        """True once `with_searchable_history()` was called (the model gets `session_search`)."""
        return self._history_search

    @property
    def skill_state(self) -> dict:
        """Per-conversation skill state: `active` (the last activated skill), `activated`, `loaded`."""
        return self._skill_state

    # -- history and compaction ----------------------------------------------------------
    @property
    def compacts(self) -> bool:
        """True when `compact_after` set a threshold (history is then checked before each turn)."""
        return self._threshold is not None

    def overlays(self) -> list[compaction.Overlay]:
        """The current session's compaction overlays, oldest first."""
        return compaction.load_overlays(self.store.compactions())

    def history(self, messages: list[dict] | None = None) -> list[dict]:
        """`messages` (default: the agent's branch) as the model reads them: overlays applied,
        echoed synthetic messages dropped."""
        if messages is None:
            self._rewrite_unloaded()
        return compaction.apply_overlays(self.host.messages if messages is None else messages, self.overlays())

    async def prepare_history(self, system: str | None = None) -> list[dict]:
        """The history for the next turn; compacts first when `compact_after` is exceeded."""
        history = self.history()
        if self._threshold is not None:
            await tokens.aready(self.model_name())  # counting needs a tokenizer: never block the loop
            estimate = self.token_estimate(history, system)
            if estimate > self._threshold:
                try:
                    shortened = bool(await self.compact(tokens_before=estimate))
                    turn = events.current()
                    events.emit("chat:context:compacted", {"reason": "proactive", "shortened": shortened,
                                                           "request_id": turn[1] if turn else None})
                    if shortened:
                        history = self.history()
                except Exception as exc:  # noqa: BLE001 - a failed compaction must not fail the turn
                    log.warning("automatic compaction failed: %s", exc)
                    self.phase = "idle"
                    self.emit_status(error=str(exc))
                    if self._compaction_error is not None:
                        with user_code(_name(self._compaction_error), subject="on_compaction_error"):
                            await _call(self._compaction_error, exc)
        return history

    def token_estimate(self, history: list[dict] | None = None, system: str | None = None) -> int:
        """Tokens of (system prompt +) history as the model would receive it."""
        history = self.history() if history is None else history
        if self._counter is not None:
            with user_code(_name(self._counter), subject="compact_after(token_counter=)"):
                return sum(self._counter(message_text(m)) + 4 for m in history) + self._counter(system or "")
        return count_history_tokens(history, self.model_name(), system)

    async def compact(self, leaf_id: str | None = None, *, tokens_before: int | None = None,
                      tail_token_budget: int | None = None) -> dict | None:
        """Summarise the middle of the current branch into an overlay (Think's `session.compact()`).
        `tail_token_budget`: the verbatim tail (tokens) the built-in summariser keeps, when no
        `on_compaction` function is set (default: 20,000, or half the `compact_after` threshold).

        Returns `{"overlay_id", "summary", "from_message_id", "to_message_id", "tokens_before",
        "tokens_after"}`, or None when the function found nothing to compact. The messages
        themselves are not changed. Raises `UserError` when the function returns ids that are
        not on the branch.
        """
        raw = self.store.messages.branch(leaf_id=leaf_id) if leaf_id else self.host.messages
        overlays = self.overlays()
        history = compaction.apply_overlays(raw, overlays)
        previous = compaction.active_overlay(raw, overlays)
        model = await self._model_config()
        await tokens.aready(self.model_name())  # counting needs a tokenizer: never load it on the loop
        ctx = compaction.CompactionContext(
            model.model, self._counter or compaction.count_with(model.model),
            lambda prompt: compaction.summarize_with_model(model, prompt), previous.summary if previous else None)
        self.phase = "compacting"
        self.emit_status()
        try:
            tokens_before = tokens_before if tokens_before is not None else self.token_estimate(history)
            budget = min(20_000, self._threshold // 2) if self._threshold else 20_000
            fn = self._compact_fn or compaction.create_compact_function(
                tail_token_budget=min(budget, tail_token_budget) if tail_token_budget else budget)
            result = await _call(fn, history, ctx)
            if not result:
                return None
            ids = [m["id"] for m in raw]
            start, end = result["from_message_id"], result["to_message_id"]
            if start not in ids or end not in ids or ids.index(start) > ids.index(end):
                raise UserError(f"Compaction returned range {start!r}..{end!r}, which is not on the branch.")
            if previous is not None and ids.index(previous.from_id) < ids.index(start):
                start = previous.from_id
            overlay = compaction.store_overlay(self.store.compactions(), result["summary"], start, end,
                                               tokens_before)
            self.refresh_system_prompt()
            after = self.token_estimate()
            self._last_compaction = {"overlay_id": overlay.id, "summary": overlay.summary, "from_message_id": start,
                                     "to_message_id": end, "tokens_before": tokens_before, "tokens_after": after}
            return dict(self._last_compaction)
        finally:
            self.phase = "idle"
            self.emit_status()

    # -- search ----------------------------------------------------------------------------
    def search(self, query: str, limit: int = 20, *, all_sessions: bool = False, all_words: bool = False) -> list[dict]:
        """Full-text search of this session's messages (SQLite FTS5, Think's `session.search`).

        Args:
            query: matched as one phrase; with `all_words`, every word anywhere in a message.
            limit: at most this many results.
            all_sessions: search every session of the agent.

        Returns:
            `[{"id", "role", "session", "created_at", "snippet", "rank", "text", "on_branch"}]`, best
            first; `on_branch` is False for a message of the active session that is not on its
            current branch (another version of a reply), None for other sessions' messages;
            [] for a query with no words or one FTS5 cannot parse.
        """
        from think_nb.session.sessions import conversation_keys

        store = self.store
        keys = conversation_keys(store) if all_sessions else {store.messages.key: store.session_id}
        from think_nb.session.search import search_messages

        hits = search_messages(store.db, list(keys), query, limit, all_words)
        active = store.messages.key
        on_branch = store.messages.on_branch([h["id"] for h in hits if h["conversation_key"] == active])
        for hit in hits:
            mine = hit["conversation_key"] == active
            hit["session"] = keys[hit.pop("conversation_key")]
            hit["on_branch"] = hit["id"] in on_branch if mine else None
        return hits

    # -- status (the panel's context tab) ------------------------------------------------------
    def _status_estimate(self) -> int:
        """`token_estimate()`, or Think's heuristic while the model's tokenizer is not loaded yet
        (loading it is ~0.3 s of CPU: never on the loop for a status line); the tokenizer is then
        loaded on a thread and the status sent again."""
        if self._counter is not None or tokens.is_ready(self.model_name()):
            return self.token_estimate()
        if not getattr(self, "_warming", False):
            with contextlib.suppress(RuntimeError):  # no running loop: the heuristic will do
                asyncio.get_running_loop().create_task(self._ready_then_status())
                self._warming = True
        history = self.history()
        return sum(tokens.estimate_tokens(message_text(m)) + 4 for m in history)

    async def _ready_then_status(self) -> None:
        try:
            await tokens.aready(self.model_name())
            self.emit_status()
        except Exception:  # no tokenizer: the status keeps the heuristic
            log.debug("tokenizer for %s not loaded", self.model_name(), exc_info=True)
        finally:
            self._warming = False

    def status(self, error: str | None = None) -> dict:
        """`{phase, tokenEstimate, tokenThreshold, blocks, compacted?, error?}` (Think's
        `cf_agent_session` payload plus the blocks)."""
        state = {"phase": self.phase, "tokenEstimate": self._status_estimate(), "tokenThreshold": self._threshold,
                 "session": self.store.session_id, "blocks": [b.as_dict() for b in self.blocks()]}
        if self._last_compaction:
            state["compacted"] = {"tokensBefore": self._last_compaction["tokens_before"],
                                  "tokensAfter": self._last_compaction["tokens_after"]}
        if error:
            state["error"] = error
        return state

    def emit_status(self, error: str | None = None) -> None:
        """Send `status()` to every listener of the agent that has `on_session(state)` (panels)."""
        if self._engine.listeners.wants("on_session"):
            self._engine.notify("on_session", self.status(error))

    # -- internals -------------------------------------------------------------------------
    def model_name(self) -> str | None:
        """The agent's litellm model string (for token counts); for an async `get_model`, the model
        of the last turn (None before the first)."""
        from think_nb.models.resolve import model_config_of

        with user_code("get_model", self.host.agent):
            value = self.host.agent.get_model()
        if inspect.isawaitable(value):  # cannot run here: the model of the last turn, if any
            _close(value)
            return self._engine.resolved_model
        try:
            return model_config_of(value).model
        except UserError:
            return None  # the turn says what is wrong with it

    async def _model_config(self) -> Any:
        from think_nb.models.resolve import resolve_model

        with user_code("get_model", self.host.agent):
            value = await _call(self.host.agent.get_model)
        return resolve_model(value)

    def _block(self, spec: _Spec, content: str) -> ContextBlock:
        from think_nb.session.blocks import ContextBlock
        from think_nb.session.providers import provider_kind

        kind = provider_kind(spec.provider)
        writable = callable(getattr(spec.provider, "set", None))
        return ContextBlock(spec.label, spec.description, kind, content, count_tokens(content, self.model_name()),
                            spec.max_tokens, writable)

    def _spec(self, label: str) -> _Spec:
        if label not in self._specs:
            raise UserError(f"No context block {label!r}; blocks: {', '.join(self._specs) or '(none)'}.")
        return self._specs[label]

    def _writable(self, label: str) -> _Spec:
        from think_nb.session.providers import provider_kind

        spec = self._spec(label)
        if provider_kind(spec.provider) != "writable":
            raise UserError(f"Block {label!r} is read-only ({provider_kind(spec.provider)}); it cannot be written.")
        return spec

    def skill_registry(self) -> dict[str, skills_mod.Skill]:
        """`{name: Skill}` of `agent.get_skills()`, collected on first use."""
        if self._skills is None:
            getter = getattr(self.host.agent, "get_skills", None)
            with user_code("get_skills", self.host.agent):
                sources = getter() if callable(getter) else []
            self._skills = skills_mod.collect(sources)
            if self._skills and self.host.overrides("get_system_prompt"):
                skills_mod.warn_prompt_is_fallback(type(self.host.agent).__name__)
        return self._skills

    def _skill_blocks(self) -> list[ContextBlock]:
        registry = self.skill_registry()
        if not registry:
            return []
        from think_nb.session.blocks import ContextBlock

        text = skills_mod.catalog(registry)
        return [ContextBlock(skills_mod.CATALOG_LABEL, "Skills you can activate", "readonly", text,
                             count_tokens(text, self.model_name()), None, False)]

    def reset(self) -> None:
        """Forget per-conversation state after a clear or a session switch (prompt refreshed)."""
        self.refresh_system_prompt()
        self._skill_state.clear()
        self._last_compaction = None


async def _await(value: Any) -> Any:
    return await value


def _name(fn: Any) -> str:
    """A callable's name for an error message (`count_tokens`, `<lambda>`)."""
    return getattr(fn, "__name__", None) or type(fn).__name__


__all__ = ["SYNTHETIC_PREFIX", "Session"]


def _unloaded(part: dict, unloaded: set[str]) -> dict:
    """`part` with its output replaced by the unload marker when its call was unloaded (a copy), else `part`."""
    if part.get("toolCallId") not in unloaded or part.get("state") != "output-available":
        return part
    marker = f"[skill unloaded: {(part.get('input') or {}).get('key')}]"
    return part if part.get("output") == marker else {**part, "output": marker}
