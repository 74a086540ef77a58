"""The terminal view of an agent: a listener that prints a turn's chunks to a text stream.

Text deltas are written as they arrive; each tool call is shown as `→ name(input)` and its
result as `← output` (or `✗ error`). Used by `think-nb chat` and by `%%think` outside a kernel.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from think_nb.jsonsafe import to_json_value


class TerminalView:
    """Prints chunks to `out` (default stdout). Subscribe it with `runtime_of(agent).subscribe(TerminalView())`."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._names: dict[str, str] = {}
        self._at_line_start = True

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self._at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._write(("" if self._at_line_start else "\n") + text + "\n")

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        kind = chunk.get("type")
        if kind == "text-delta":
            self._write(chunk["delta"])
        elif kind == "tool-input-start":
            self._names[chunk["toolCallId"]] = chunk["toolName"]
        elif kind == "tool-input-available":
            self._line(f"→ {chunk['toolName']}({_json(chunk.get('input'))})")
        elif kind == "tool-output-available":
            self._line(f"← {_show(chunk.get('output'))}")
        elif kind in ("tool-output-error", "tool-input-error"):
            self._line(f"✗ {self._names.get(chunk['toolCallId'], 'tool')}: {chunk.get('errorText')}")
        elif kind == "tool-approval-request":
            self._line(f"? {self._names.get(chunk['toolCallId'], 'tool')} needs approval")
        elif kind == "error":
            self._line(f"Error: {chunk.get('errorText')}")

    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        if not self._at_line_start:
            self._write("\n")
        if status == "aborted":
            self._line("[stopped]")

    def on_messages(self, messages: list[dict]) -> None:
        pass


def _show(value: object) -> str:
    return value if isinstance(value, str) else _json(value)


def _json(value: object) -> str:
    """Readable JSON (`, ` and `: `) of any value, mapped to strict JSON first (think_nb.jsonsafe)."""
    return json.dumps(to_json_value(value), ensure_ascii=False, allow_nan=False)
