"""Comparing two replies side by side (issue 32 §4): a fork and its original, two regenerates.

`agent.compare(a, b)` takes two replies (message ids, request ids, `TurnResult`s or fork steppers)
and returns a `Comparison`: `.frame`, a pandas DataFrame with one row per aspect (`model`, `fork`,
`text`, each tool call's name / arguments / result, `prompt_tokens`, `completion_tokens`,
`total_tokens`, `cost_usd`, `duration_ms`) and columns `aspect`, `a`, `b`, `same`; `.word_diff`,
the text's word diff as `[(op, words)]` (op `=`, `-`, `+`); in a notebook it shows as an HTML view
(the word diff, deletions struck through and insertions underlined, then the table).
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from think_nb import jsonsafe
from think_nb.errors import UserError
from think_nb.messages.accumulator import is_tool_part, tool_name_of

if TYPE_CHECKING:
    import pandas as pd

USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")


@dataclass
class Reply:
    """One side of a comparison: the reply and the turn that made it."""

    message: dict[str, Any]
    request_id: str | None
    duration_ms: float | None

    @property
    def text(self) -> str:
        return "".join(p.get("text", "") for p in self.message.get("parts", []) if p.get("type") == "text")

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [p for p in self.message.get("parts", []) if is_tool_part(p)]


class Comparison:
    """Two replies side by side (see the module docstring)."""

    def __init__(self, a: Reply, b: Reply) -> None:
        self.a, self.b = a, b
        self.word_diff = word_diff(a.text, b.text)
        self.rows = _rows(a, b)

    @property
    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["aspect", "a", "b", "same"])

    @property
    def same(self) -> bool:
        """True when every aspect but the fork label, model and duration is the same."""
        return all(r["same"] for r in self.rows if r["aspect"] not in ("fork", "duration_ms"))

    def diff_html(self) -> str:
        """The text's word diff as HTML: `<del>` for words only in a, `<ins>` for words only in b."""
        out = []
        for op, words in self.word_diff:
            text = html.escape(words)
            out.append(text if op == "=" else f"<del>{text}</del>" if op == "-" else f"<ins>{text}</ins>")
        return "".join(out)

    def _repr_html_(self) -> str:
        table = "".join(
            f"<tr class='{'same' if r['same'] else 'differs'}'><th>{html.escape(str(r['aspect']))}</th>"
            f"<td>{html.escape(display(r['a']))}</td><td>{html.escape(display(r['b']))}</td>"
            f"<td>{'=' if r['same'] else '≠'}</td></tr>" for r in self.rows)
        return ("<div class='think-nb-compare'><style>.think-nb-compare del{background:#fdd;}"
                ".think-nb-compare ins{background:#dfd;text-decoration:underline;}"
                ".think-nb-compare tr.differs td{font-weight:bold;}</style>"
                f"<p><b>a</b> {html.escape(str(self.a.message.get('id')))} · <b>b</b> "
                f"{html.escape(str(self.b.message.get('id')))}</p>"
                f"<p class='diff'>{self.diff_html()}</p>"
                "<table><tr><th>aspect</th><th>a</th><th>b</th><th></th></tr>" + table + "</table></div>")

    def __repr__(self) -> str:
        return f"<Comparison: {sum(not r['same'] for r in self.rows)} of {len(self.rows)} aspects differ>"


MAX_DIFF_PIECES = 2000
"""Most words (then lines) a side may have where the two texts differ for `word_diff` to diff them
piece by piece: difflib's matcher is quadratic, and the panel diffs a forked reply on the kernel's
loop (20,000 words of a small vocabulary took 3.6 s; 2,000 words take ~30 ms)."""


def word_diff(a: str, b: str) -> list[tuple[str, str]]:
    """`[(op, text)]` turning `a` into `b` word by word (whitespace kept with its word): op `=`
    (in both), `-` (only in a), `+` (only in b). Long texts: their common start and end are kept,
    and what differs between them is diffed by words when each side has at most `MAX_DIFF_PIECES`
    words, else by lines when each has at most that many lines, else replaced whole."""
    left, right = re.findall(r"\S+\s*|\s+", a), re.findall(r"\S+\s*|\s+", b)
    if max(len(left), len(right)) <= MAX_DIFF_PIECES:
        return _diff(left, right)
    start = 0
    while start < min(len(left), len(right)) and left[start] == right[start]:
        start += 1
    end = 0
    while end < min(len(left), len(right)) - start and left[-1 - end] == right[-1 - end]:
        end += 1
    middle = (left[start:len(left) - end], right[start:len(right) - end])
    if max(map(len, middle)) > MAX_DIFF_PIECES:
        middle = tuple("".join(side).splitlines(keepends=True) for side in middle)  # type: ignore[assignment]
        if max(map(len, middle)) > MAX_DIFF_PIECES:
            middle = (["".join(middle[0])], ["".join(middle[1])])
    out = [("=", "".join(left[:start])), *_diff(*middle), ("=", "".join(left[len(left) - end:]))]
    merged: list[tuple[str, str]] = []
    for op, text in out:
        if text and merged and merged[-1][0] == op:
            merged[-1] = (op, merged[-1][1] + text)
        elif text:
            merged.append((op, text))
    return merged


def _diff(left: list[str], right: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(("=", "".join(left[i1:i2])))
            continue
        if i2 > i1:
            out.append(("-", "".join(left[i1:i2])))
        if j2 > j1:
            out.append(("+", "".join(right[j1:j2])))
    return out


def compare(runtime: Any, a: Any, b: Any) -> Comparison:
    """`agent.compare(a, b)` (see the module docstring). Raises `UserError` for what is no reply."""
    return Comparison(reply_of(runtime, a), reply_of(runtime, b))


def reply_of(runtime: Any, ref: Any) -> Reply:
    """The reply `ref` names: a message id, a request id, a `TurnResult` or a stepper of its turn."""
    message = getattr(ref, "message", None) if not isinstance(ref, (str, dict)) else None
    if message is None and hasattr(ref, "request_id") and not isinstance(ref, str):
        ref = ref.request_id
    if isinstance(ref, dict):
        message = ref
    if message is None and isinstance(ref, str):
        message = runtime.conversation.get(ref)
        if message is None:
            try:
                found = runtime.store.records.load(ref)
            except ValueError:  # a damaged record (not JSON): no reply found through it
                found = None
            message = runtime.conversation.get(found.message_id) if found and found.message_id else None
    if not isinstance(message, dict) or message.get("role") != "assistant":
        raise UserError(f"compare(): {ref!r} is no reply of this conversation; pass an assistant message id, a "
                        "request id (agent.turns()), a TurnResult or a fork's stepper.")
    message = runtime.conversation.get(message.get("id")) or message  # as stored (the fork label included)
    request_id = (message.get("metadata") or {}).get("requestId")
    row = runtime.store.turn_log.get(request_id) if request_id else None
    return Reply(message, request_id, row.get("duration_ms") if row else None)


def _rows(a: Reply, b: Reply) -> list[dict[str, Any]]:
    meta_a, meta_b = a.message.get("metadata") or {}, b.message.get("metadata") or {}
    rows = [_row("model", meta_a.get("model"), meta_b.get("model")),
            _row("fork", (meta_a.get("fork") or {}).get("label"), (meta_b.get("fork") or {}).get("label")),
            _row("text", a.text, b.text)]
    calls_a, calls_b = a.calls, b.calls
    for n in range(max(len(calls_a), len(calls_b))):
        one = calls_a[n] if n < len(calls_a) else {}
        two = calls_b[n] if n < len(calls_b) else {}
        for aspect, get in (("tool", tool_name_of), ("arguments", lambda p: p.get("input")), ("result", _result)):
            rows.append(_row(f"call {n + 1} {aspect}", get(one) if one else None, get(two) if two else None))
    usage_a, usage_b = meta_a.get("usage") or {}, meta_b.get("usage") or {}
    rows += [_row(key, usage_a.get(key), usage_b.get(key)) for key in USAGE]
    rows.append(_row("cost_usd", meta_a.get("cost_usd"), meta_b.get("cost_usd")))
    rows.append(_row("duration_ms", a.duration_ms, b.duration_ms))
    return rows


def _result(part: dict) -> Any:
    state = part.get("state")
    if state == "output-available":
        return part.get("output")
    if state == "output-error":
        return f"error: {part.get('errorText')}"
    return state


def _row(aspect: str, a: Any, b: Any) -> dict[str, Any]:
    return {"aspect": aspect, "a": a, "b": b, "same": _key(a) == _key(b)}


def _key(value: Any) -> str:
    try:
        return jsonsafe.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def display(value: Any) -> str:
    """A comparison cell as text (`""` for None, JSON for a non-string)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _key(value)
