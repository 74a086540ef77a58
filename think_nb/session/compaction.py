"""Non-destructive compaction: a summary overlay replaces a range of the history when it is read.

Mirrors Think (`session/session.ts compact`, `utils/compaction-helpers.ts`):

- The original messages stay in SQLite. An overlay row `(summary, from_id, to_id)` in
  `compactions` says "when reading this conversation, show one synthetic assistant message
  `{id: "compaction_<overlay id>", role: "assistant", parts: [{type: "text", text: summary}]}`
  instead of the branch range from_id..to_id". An overlay applies only when both ends lie on
  the branch being read. A later compaction on the same branch starts at the earliest existing
  `from_id`, so it supersedes (and, through the iterative summary prompt, extends) the earlier one.
- The synthetic message is never stored as a real message (`MessageStore.append` refuses ids
  starting with `compaction_`, Think's open bug cloudflare/agents#1984), and is filtered out of
  anything read back before overlays are applied.
- `create_compact_function(...)` is the reference compaction function: keep a head of
  `protect_head` messages and a tail within `tail_token_budget` tokens (at least
  `min_tail_messages`), and summarise the middle with a model. A compaction function takes
  `(messages, ctx: CompactionContext)` and returns `{"summary", "from_message_id",
  "to_message_id"}` or None (nothing to compact). UIMessages keep a tool call and its result in
  the same message, so unlike Think no tool-group alignment is needed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter
from typing import Any

from think_nb import jsonsafe
from think_nb.messages.media import is_content
from think_nb.session.history import message_text
from think_nb.session.tokens import count_tokens
from think_nb.store.compactions import CompactionRows
from think_nb.store.messages import SYNTHETIC_PREFIX

SUMMARY_SYSTEM = ("You summarise conversations between a user and an AI assistant so the assistant can "
                  "continue them. Be factual and concise; keep names, numbers, decisions and open questions.")
SUMMARY_SECTIONS = "## Topic\n## Key Points\n## Current State\n## Open Items"
TOOL_TEXT_LIMIT = 500


@dataclass
class Overlay:
    """One stored compaction: `summary` stands for the branch range `from_id`..`to_id`."""

    id: int
    summary: str
    from_id: str
    to_id: str
    tokens_before: int | None
    created_at: float

    @cached_property
    def message(self) -> dict:
        """The synthetic UIMessage shown in place of the covered range (the same dict every time:
        a request built from a compacted history reuses its converted prefix; do not mutate it)."""
        return {"id": f"{SYNTHETIC_PREFIX}{self.id}", "role": "assistant",
                "parts": [{"type": "text", "text": self.summary}]}


@dataclass
class CompactionContext:
    """What a compaction function receives besides the messages.

    Attributes:
        model: the agent's litellm model string.
        token_counter: `fn(text) -> int`, litellm's counter for that model.
        summarize: `async fn(prompt) -> str`, the built-in summariser (the agent's model).
        previous_summary: the summary of the overlay this compaction extends, or None.
    """

    model: str | None
    token_counter: Callable[[str], int]
    summarize: Callable[[str], Awaitable[str]]
    previous_summary: str | None = None


_LOADED: dict[tuple, Overlay] = {}
LOADED = 256
"""Overlays remembered by their stored row, so each turn's history holds the same synthetic message."""


def load_overlays(rows: CompactionRows) -> list[Overlay]:
    """Every overlay of a conversation, oldest first (an unchanged row gives the same `Overlay`)."""
    out = []
    for row in rows.load():
        overlay = _LOADED.get(tuple(row))
        if overlay is None:
            overlay = _LOADED[tuple(row)] = Overlay(*row)
            if len(_LOADED) > LOADED:
                del _LOADED[next(iter(_LOADED))]
        out.append(overlay)
    return out


def store_overlay(rows: CompactionRows, summary: str, from_id: str, to_id: str,
                  tokens_before: int | None) -> Overlay:
    """Insert an overlay row and return it."""
    return Overlay(*rows.insert(summary, from_id, to_id, tokens_before))


def apply_overlays(messages: list[dict], overlays: list[Overlay]) -> list[dict]:
    """`messages` (a branch, oldest first) with each applicable overlay's range replaced by its
    synthetic message; newest overlay first, an overlay applies only when both ends are present.
    Synthetic messages already in `messages` (echoed back) are dropped first."""
    out = _without_synthetic(messages)
    for overlay in reversed(overlays):
        index = {m["id"]: n for n, m in enumerate(out)}
        start, end = index.get(overlay.from_id), index.get(overlay.to_id)
        if start is None or end is None or start > end:
            continue
        out[start:end + 1] = [overlay.message]
    return out


def _without_synthetic(messages: list[dict]) -> list[dict]:
    """`messages` without synthetic compaction messages (a new list). The usual case, none, is
    checked in C over the joined ids (no Python call per message): a turn's cost stays flat as the
    history grows."""
    try:
        if "\n" + SYNTHETIC_PREFIX not in "\n" + "\n".join(map(itemgetter("id"), messages)):
            return list(messages)
    except (KeyError, TypeError):  # a message without a str id: checked one by one
        pass
    return [m for m in messages if not str(m.get("id", "")).startswith(SYNTHETIC_PREFIX)]


def active_overlay(messages: list[dict], overlays: list[Overlay]) -> Overlay | None:
    """The newest overlay that applies to the branch `messages`."""
    ids = {m["id"] for m in messages}
    for overlay in reversed(overlays):
        if overlay.from_id in ids and overlay.to_id in ids:
            return overlay
    return None


def create_compact_function(summarize: Callable[[str], Awaitable[str]] | None = None, *, protect_head: int = 3,
                            tail_token_budget: int = 20_000, min_tail_messages: int = 2,
                            token_counter: Callable[[str], int] | None = None) -> Callable[..., Awaitable[Any]]:
    """The reference compaction function (Think's `createCompactFunction`, same defaults).

    Args:
        summarize: `async fn(prompt) -> str`; default: the agent's model (`ctx.summarize`).
        protect_head: messages at the start that are never summarised.
        tail_token_budget: tokens of recent messages kept verbatim (at least `min_tail_messages`).
        token_counter: `fn(text) -> int`; default: litellm's counter for the agent's model.

    Returns:
        `async fn(messages, ctx) -> {"summary", "from_message_id", "to_message_id"} | None`;
        None when the history has no more than head + tail messages or the summary is empty.
    """
    async def compact(messages: list[dict], ctx: CompactionContext) -> dict | None:
        count = token_counter or ctx.token_counter
        if len(messages) <= protect_head + min_tail_messages:
            return None
        tail_start, budget = len(messages), tail_token_budget
        while tail_start > protect_head:
            cost = count(message_text(messages[tail_start - 1])) + 4
            kept = len(messages) - tail_start
            if kept >= min_tail_messages and cost > budget:
                break
            budget -= cost
            tail_start -= 1
        tail_start = min(tail_start, len(messages) - min_tail_messages)
        # The summary is an assistant message: cover whole exchanges so roles still alternate
        # (head ... user | summary | user ... tail) and a question is never split from its answer.
        while tail_start > protect_head and messages[tail_start]["role"] != "user":
            tail_start -= 1
        head_end = protect_head
        while head_end < tail_start and messages[head_end]["role"] != "assistant":
            head_end += 1
        middle = [m for m in messages[head_end:tail_start] if not m["id"].startswith(SYNTHETIC_PREFIX)]
        if not middle:
            return None
        transcript = "\n\n".join(_transcript_entry(m) for m in middle)
        target = max(100, count(transcript) // 5)
        summary = (await (summarize or ctx.summarize)(summary_prompt(transcript, target, ctx.previous_summary))).strip()
        if not summary:
            return None
        return {"summary": summary, "from_message_id": middle[0]["id"], "to_message_id": middle[-1]["id"]}

    return compact


def summary_prompt(transcript: str, target_tokens: int, previous: str | None) -> str:
    """The summariser's instruction (Think's structured prompt; iterative when `previous` exists)."""
    head = (f"Update the previous summary with the new conversation below.\n\nPREVIOUS SUMMARY:\n{previous}\n\n"
            if previous else "Summarise the conversation below.\n\n")
    return (f"{head}CONVERSATION:\n{transcript}\n\nWrite about {target_tokens} tokens in these sections:\n"
            f"{SUMMARY_SECTIONS}")


def _transcript_entry(message: dict) -> str:
    lines = []
    for part in message.get("parts", []):
        kind = part.get("type", "")
        if kind == "text":
            lines.append(part.get("text", ""))
        elif kind == "file":  # an image or file: named, never its bytes
            lines.append(f"[attached {part.get('filename') or 'file'} ({part.get('mediaType', '')})]")
        elif kind.startswith("tool-") or kind == "dynamic-tool":
            name = part.get("toolName") or kind.removeprefix("tool-")
            out = part.get("output", part.get("errorText", ""))
            if is_content(out):  # a tool's images: their types, never their bytes
                out = " ".join(i.get("text", "") if i.get("type") == "text" else f"[{i.get('mediaType')}]"
                               for i in out["value"] if isinstance(i, dict))
            lines.append(f"[tool {name}] input: {_clip(part.get('input'))} output: {_clip(out)}")
    return f"{message['role'].upper()}: " + "\n".join(lines)


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else jsonsafe.dumps(value)
    return text if len(text) <= TOOL_TEXT_LIMIT else text[:TOOL_TEXT_LIMIT] + "…"


async def summarize_with_model(model: Any, prompt: str) -> str:
    """One call to `model` (a `ModelConfig`) for a summary; returns its text.

    Through the model seam (`think_nb.models.stream.client_for`), as every turn's call: in-process
    models (scripted, the embedded one) are called directly, hosted ones through litellm. So a
    compaction with an in-process model never imports litellm on the kernel's loop (issue 29 §6:
    it froze the kernel 6-24 s). Raises what the model's client raises."""
    from think_nb.models.client import as_deltas
    from think_nb.models.stream import client_for

    messages = [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": prompt}]
    pieces = [delta.content async for item in client_for(model).stream(model, messages, [], dict(model.options))
              for delta in as_deltas(item) if delta.content]
    return "".join(pieces)


def count_with(model: str | None) -> Callable[[str], int]:
    """litellm's counter for `model` as `fn(text) -> int`."""
    return lambda text: count_tokens(text, model)
