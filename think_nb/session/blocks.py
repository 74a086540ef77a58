"""Context blocks and the system prompt rendered from them.

A block is a labelled piece of the system prompt (`ContextBlock`). The prompt is rendered as in
Think (`session/context.ts`): blocks in registration order, each as

    ══════════════════════════════════════════════        (46 "═")
    MEMORY (Important facts.) [12% — 240/2000 tokens] [writable]
    ══════════════════════════════════════════════
    <content>

Empty read-only blocks are skipped; empty writable, skill and search blocks are still rendered,
so the model knows they exist. Blocks are separated by a blank line.
"""

from __future__ import annotations

from dataclasses import dataclass

RULE = "═" * 46
TAGS = {"readonly": "readonly", "writable": "writable", "skill": "loadable", "search": "searchable"}


@dataclass
class ContextBlock:
    """One block as it is now.

    Attributes:
        label: the block's name (the model uses it in `set_context` and friends).
        description: what the block is for, shown in its header ("" if none).
        kind: `readonly` | `writable` | `skill` | `search` (from the provider's methods).
        content: the text rendered into the prompt.
        tokens: tokens of `content` for the agent's model (litellm's counter).
        max_tokens: the limit `set_context` enforces, or None.
        writable: True when the model may write it with `set_context` (writable blocks, and
            skill/search blocks whose provider has `set`).
    """

    label: str
    description: str
    kind: str
    content: str
    tokens: int
    max_tokens: int | None
    writable: bool

    @property
    def percent_used(self) -> float | None:
        """tokens / max_tokens × 100, rounded to 0.1; None without a limit."""
        return round(100 * self.tokens / self.max_tokens, 1) if self.max_tokens else None

    def header(self) -> str:
        """`LABEL (description) [pct% — tokens/max tokens] [kind tag]`."""
        text = self.label.upper()
        if self.description:
            text += f" ({self.description})"
        if self.max_tokens:
            text += f" [{round(100 * self.tokens / self.max_tokens)}% — {self.tokens}/{self.max_tokens} tokens]"
        return f"{text} [{TAGS[self.kind]}]"

    def as_dict(self) -> dict:
        """The block as plain data (a DataFrame row, a `session` frame entry)."""
        return {"label": self.label, "description": self.description, "kind": self.kind,
                "writable": self.writable, "tokens": self.tokens, "max_tokens": self.max_tokens,
                "percent_used": self.percent_used, "content": self.content}


def render_prompt(blocks: list[ContextBlock]) -> str:
    """The system prompt made of `blocks` (see the module docstring)."""
    sections = []
    for block in blocks:
        if block.kind == "readonly" and not block.content.strip():
            continue
        sections.append(f"{RULE}\n{block.header()}\n{RULE}\n{block.content}")
    return "\n\n".join(sections)
