"""What the model reads of a kernel tool's output: bounded text, never the panel's whole payload.

    model_text(output)   # for outputs of type kernel-run / kernel-variables / kernel-history / kernel-describe

A `kernel-run` becomes: whether the user edited the code (and then the code that ran), the
duration, stdout and stderr (the first `STREAM_CHARS` each, with how much was printed in all),
the last expression's text, each rich output as a line (a table's markdown; an image is a note:
"[image/png, 640×480, shown to the user]"; HTML never: its text/plain instead), the names changed,
and the notes. The whole is cut to `MODEL_TOKENS` tokens.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

STREAM_CHARS = 4_000
MODEL_TOKENS = 4_000


def _png_size(data: str) -> str:
    try:
        head = base64.b64decode(data[:44])
        width, height = struct.unpack(">II", head[16:24])
        return f"{width}×{height}"
    except Exception:  # noqa: BLE001 - not a PNG header
        return "?"


def _stream(label: str, text: str, total: int) -> str:
    if not total:
        return ""
    shown = text[:STREAM_CHARS]
    more = f" (first {len(shown):,} of {total:,} characters)" if total > len(shown) else ""
    return f"{label}{more}:\n{shown}"


def _output_line(output: dict) -> str:
    mime, data = output.get("mime"), output.get("data")
    if mime == "image/png" and isinstance(data, str):
        return f"[image/png, {_png_size(data)}, shown to the user]"
    if mime == "table" and isinstance(data, dict):
        return str(data.get("markdown", ""))
    if mime == "text/html":
        return f"[HTML output shown to the user; its text:]\n{output.get('text') or ''}".rstrip()
    return str(data)[:STREAM_CHARS]


def run_text(output: dict) -> str:
    lines = []
    if output.get("edited"):
        lines.append("The user edited your code before approving it. This is the code that ran:\n"
                     f"```python\n{output.get('code', '')}\n```")
    lines.append(f"Ran in {output.get('duration_ms', 0):.0f} ms.")
    for label, key in (("stdout", "stdout"), ("stderr", "stderr")):
        text = _stream(label, str(output.get(key) or ""), int(output.get(f"{key}_chars") or 0))
        if text:
            lines.append(text)
    tabled = any(isinstance(o, dict) and o.get("mime") == "table" for o in output.get("outputs") or [])
    if output.get("result") is not None and not tabled:  # a frame's value: its table below says it
        lines.append(f"Result:\n{output['result']}")
    lines.extend(_output_line(rich) for rich in output.get("outputs") or [] if isinstance(rich, dict))
    changes = output.get("changes") or {}
    said = [f"{what}: {', '.join(changes[what])}" for what in ("bound", "rebound", "deleted") if changes.get(what)]
    if changes.get("mutated"):
        said.append(f"changed in place: {', '.join(changes['mutated'])}")
    if said:
        lines.append("Names: " + "; ".join(said))
    lines.extend(f"Note: {note}" for note in output.get("notes") or [])
    if output.get("undone"):
        lines.append(f"The user undid this run afterwards ({output.get('undo_note') or 'bindings put back'}).")
    return "\n".join(lines)


def trace_summary(output: dict) -> str:
    """One line for the trace: `edited · 12 ms · bound x; rebound df; mutated df · code: df = …`."""
    changes = output.get("changes") or {}
    names = "; ".join(f"{what} {', '.join(changes[what])}" for what in ("bound", "rebound", "deleted", "mutated")
                      if changes.get(what)) or "no names changed"
    code = " ".join(str(output.get("code") or "").split())
    head = ("edited · " if output.get("edited") else "") + f"{float(output.get('duration_ms') or 0):.0f} ms"
    return f"{head} · {names} · code: {code[:160]}" + ("…" if len(code) > 160 else "")


def model_text(output: Any) -> str:
    """The bounded text the model reads for a kernel tool's stored output (see the module docstring)."""
    from think_nb.data_context import _cut
    from think_nb.session.tokens import count_tokens

    if not isinstance(output, dict):
        return str(output)
    text = run_text(output) if output.get("type") == "kernel-run" else str(output.get("text") or
                                                                              output.get("markdown") or "")
    if count_tokens(text) > MODEL_TOKENS:
        text = _cut(text, MODEL_TOKENS)
    return text
