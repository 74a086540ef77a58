"""A turn's record: enough to stand at any of its hook sites again (issue 32, time travel).

Kept per stored turn (`think_nb.store.records`, table `think_turn_records`), compactly: the history
is the path to `parent_id` (the message the turn answered), never a copy; each step's model output
is kept as the lengths of its streamed deltas into the reply's own text and reasoning parts (the
reply is stored anyway), with raw strings only where the reply does not hold them; a tool call's
input is its raw argument pieces and its result is read from the reply's tool part. The record:

    {"v": 1, "trigger", "continuation", "model", "system" (what before_turn saw), "system_sent"?
     (the system prompt after it, when it differs: a hook's config, an edit in step mode), "tools" (names
     offered), "options" (the TurnConfig's litellm options and max_steps), "compactions" (overlays
     of the conversation when it started), "sites" (the hook sites it fired, in order),
     "steps": [{"out": [item...], "usage": {...} | None, "finish": "tool_calls", "calls": [id...]}],
     "emitted"?: {call id: [chunk...]} (what a call emitted while it ran besides its result: a
     sub-agent's progress, a streaming tool's preliminary outputs), "flags": [...], "fork"?: {...}}

An output item is `["t", [len...]]` (a text block, cut from the reply's next text part), `["T",
[delta...]]` (a text block the reply does not hold as is), `["r", ...]` / `["R", ...]` (reasoning),
`["c", call id, tool name, [argument piece...]]` (a tool call). Flags say why a record cannot be
forked faithfully: `approved` (the turn ran calls approved in an earlier turn), `compacted` (a
context-overflow compaction ran inside it), `truncated`.

Hook sites are named `before_turn`, `before_step:<n>`, `before_tool_call:<call id>`,
`after_tool_call:<call id>`, `on_step_finish:<n>`, `on_chat_response`.
"""

from __future__ import annotations

import hashlib
import inspect
import weakref
from typing import Any

from think_nb.messages.accumulator import is_tool_part

VERSION = 1
FLAG_TEXT = {
    "approved": "it ran tool calls approved in an earlier turn (fork that earlier turn instead)",
    "compacted": "a context-overflow compaction ran inside it",
    "truncated": "its stream was longer than a record keeps",
}
"""Why a flagged record cannot be forked, as the refusal says it."""


def site_name(hook: str, step: int | None, ctx: Any) -> str | None:
    """The site a hook fires at (see the module docstring); None for what is not a fork point
    (`on_chunk`, `on_chat_error`, a call a tool makes from inside its run)."""
    if hook in ("before_tool_call", "after_tool_call"):
        if getattr(ctx, "parent_tool_call_id", None):
            return None
        return f"{hook}:{getattr(ctx, 'tool_call_id', '')}"
    if hook in ("before_step", "on_step_finish"):
        return f"{hook}:{step}"
    if hook in ("before_turn", "on_chat_response"):
        return hook
    return None


class Capture:
    """Collects a running turn's record (`think_nb.turns.runner.Turn` feeds it)."""

    def __init__(self, trigger: str, continuation: bool) -> None:
        self.data: dict[str, Any] = {"v": VERSION, "trigger": trigger, "continuation": continuation,
                                     "sites": [], "steps": [], "flags": []}
        self.chunks: list[dict] | None = None  # the model's chunks while a step streams

    def flag(self, name: str) -> None:
        if name not in self.data["flags"]:
            self.data["flags"].append(name)

    def emitted(self, call_id: str | None, chunk: dict) -> None:
        """A chunk tool call `call_id` emitted while it ran, besides its result (a sub-agent's
        progress, a streaming tool's preliminary output): a fork replays it with the recorded result."""
        if call_id:
            self.data.setdefault("emitted", {}).setdefault(call_id, []).append(chunk)

    def fired(self, hook: str, step: int | None, ctx: Any) -> None:
        site = site_name(hook, step, ctx)
        if site is not None:
            self.data["sites"].append(site)

    def turn(self, model: str, tools: dict, config: Any, max_steps: int, compactions: int) -> None:
        """What the turn was set up with (after `before_turn`; the system prompt `before_turn` saw
        is set before it fires)."""
        from think_nb import jsonsafe
        from think_nb.redact import redact

        try:  # credentials (api_key, *_token, ...) never reach a record
            options = jsonsafe.stored_value(redact(config.litellm_options()))
        except (TypeError, ValueError):
            options = {}
        self.data.update(model=model, tools=sorted(tools), options=options, max_steps=max_steps,
                         compactions=compactions)

    def step(self, chunks: list[dict], usage: dict | None, finish: str | None) -> None:
        """A step's model output, from the chunks its stream emitted."""
        out: list[list] = []
        block: list | None = None
        for chunk in chunks:
            kind = chunk.get("type")
            if kind == "text-delta" and block is not None:  # most chunks: the branch below, first
                block[1].append(chunk.get("delta") or "")
            elif kind in ("text-start", "reasoning-start"):
                block = ["T" if kind == "text-start" else "R", []]
                out.append(block)
            elif kind in ("text-delta", "reasoning-delta") and block is not None:
                block[1].append(chunk.get("delta") or "")
            elif kind == "tool-input-start":
                out.append(["c", chunk["toolCallId"], chunk.get("toolName"), []])
            elif kind == "tool-input-delta":
                call = next((i for i in reversed(out) if i[0] == "c" and i[1] == chunk.get("toolCallId")), None)
                if call is not None:
                    call[3].append(chunk.get("inputTextDelta") or "")
        self.data["steps"].append({"out": out, "usage": usage, "finish": finish,
                                   "calls": [i[1] for i in out if i[0] == "c"]})

    def finish(self, reply: dict | None) -> dict[str, Any]:
        """The record, its text blocks shortened to lengths where `reply` holds their text."""
        texts = {"T": _parts(reply, "text"), "R": _parts(reply, "reasoning")}
        for step in self.data["steps"]:
            for item in step["out"]:
                if item[0] in texts:  # one reply part per streamed block, in order
                    whole = texts[item[0]].pop(0) if texts[item[0]] else None
                    if whole == "".join(item[1]):  # else the reply does not hold it as is: keep the strings
                        item[0], item[1] = item[0].lower(), [len(d) for d in item[1]]
        return self.data


def _parts(message: dict | None, kind: str) -> list[str]:
    return [str(p.get("text", "")) for p in (message or {}).get("parts", []) if p.get("type") == kind]


def script_steps(record: dict, reply: dict | None) -> list[list]:
    """The record's model outputs as `ScriptedModel` steps (exact deltas, tool calls with their
    argument pieces and ids, usage, finish reason), one per recorded step."""
    from think_nb.testing import ScriptedModel

    texts = {"t": _parts(reply, "text"), "r": _parts(reply, "reasoning")}
    steps = []
    for step in record["steps"]:
        items: list = []
        for item in step["out"]:
            tag = item[0]
            if tag in ("t", "T", "r", "R"):
                pool = texts[tag.lower()]
                whole = pool.pop(0) if pool else ""
                deltas = _cut(whole, item[1]) if tag in texts else list(item[1])
            if tag in ("t", "T"):
                items.append(ScriptedModel.deltas(deltas))
            elif tag in ("r", "R"):
                items.append(ScriptedModel.reasoning_deltas(deltas))
            elif tag == "c":
                call = ScriptedModel.tool_call(item[2] or "", "".join(item[3]), id=item[1])
                call.value["pieces"] = list(item[3]) or [""]
                items.append(call)
        usage = step.get("usage")
        if usage:
            items.append(ScriptedModel.usage(usage.get("prompt_tokens"), usage.get("completion_tokens")))
        if step.get("finish"):
            items.append(ScriptedModel.finish(step["finish"]))
        steps.append(items)
    return steps


def _cut(text: str, lengths: list[int]) -> list[str]:
    out, at = [], 0
    for n in lengths:
        out.append(text[at:at + n])
        at += n
    return out


def tool_results(reply: dict | None) -> dict[str, tuple[bool, Any, str | None]]:
    """`{call id: (success, output, error)}` of the calls the reply holds a result of."""
    out: dict[str, tuple[bool, Any, str | None]] = {}
    for part in (reply or {}).get("parts", []):
        if not is_tool_part(part):
            continue
        if part.get("state") == "output-available":
            out[part["toolCallId"]] = (True, part.get("output"), None)
        elif part.get("state") == "output-error":
            out[part["toolCallId"]] = (False, None, part.get("errorText"))
    return out


_VERSIONS: weakref.WeakKeyDictionary[type, str] = weakref.WeakKeyDictionary()


def class_version(cls: type) -> str:
    """A short hash of the code a class defines (its own and its user-defined bases', not think_nb's):
    the same class run again in a new cell hashes the same; a changed method does not."""
    known = _VERSIONS.get(cls)
    if known is not None:
        return known
    digest = hashlib.sha256()
    for base in cls.__mro__:
        if base is object or base.__module__.startswith("think_nb"):
            continue
        digest.update(base.__qualname__.encode())
        for name, value in sorted(vars(base).items()):
            func = getattr(value, "__func__", value)
            code = getattr(func, "__code__", None)
            if code is not None:
                digest.update(name.encode() + _code_bytes(code))
            elif not name.startswith("__") and isinstance(value, (str, int, float, bool, type(None))):
                digest.update(f"{name}={value!r}".encode())
    version = digest.hexdigest()[:16]
    _VERSIONS[cls] = version
    return version


def _code_bytes(code: Any) -> bytes:
    consts = b"".join(_code_bytes(c) if inspect.iscode(c) else repr(c).encode() for c in code.co_consts)
    return code.co_code + consts + " ".join(code.co_names).encode()
