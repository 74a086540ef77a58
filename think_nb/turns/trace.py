"""The hook trace and the recording of a turn.

Every turn records (1) one row per hook call, per model call (what it is sent: `3 of 9 messages,
tools: add (1 of 4)`, `think_nb.models.sent`), per group of consecutive same-type chunks and per
wait before the model could answer ("loading litellm…", "loading the local model…",
"thinking — choosing a tool…", `think_nb.models.progress`), and per
context-overflow compaction (`think_nb.turns.overflow`), `{t_ms, kind: "hook" | "model" |
"chunks" | "wait" | "compaction", hook, step, tool, summary, duration_ms}` (a hook row's summary names the
context's tools, never their schemas), and (2) every
UIMessageChunk with its time offset, so the turn can be replayed offline (`replay.py`). Both are
stored with the turn in SQLite (table `think_turn_traces`) and bounded: at most `MAX_ROWS` rows and
`MAX_CHUNKS` chunks per turn, and the latest `store.traces.KEEP_TURNS` turns per agent.

The recording is kept and stored as entries `[t_ms, chunk]`, and `[t_ms, chunk, [text, ...]]` for a
run of deltas of one part published together (`Turn.release`): the chunk, then one chunk like it
per text, its text replaced (`expand` gives every chunk back; a delta costs its text, not a dict
and a time, when the trace is stored).
"""

from __future__ import annotations

import time
from typing import Any

from think_nb import jsonsafe
from think_nb.panel.batcher import MERGEABLE, runs
from think_nb.redact import redact, scrub
from think_nb.store.traces import TraceStore

MAX_ROWS = 2_000
MAX_CHUNKS = 50_000
SUMMARY_CHARS = 160


def summarize(value: Any) -> str:
    """A short one-line text for a trace cell."""
    if value is None:
        return ""
    if hasattr(value, "__dataclass_fields__"):
        fields = value.__dataclass_fields__
        shown = {k: getattr(value, k) for k in fields if k not in ("messages", "tools")}
        if "tools" in fields and isinstance(value.tools, dict):  # names only; schemas: the step view
            shown = {"tools": list(value.tools), **shown}
        value = shown
    value = redact(value)  # credentials (api_key, *_token, ...) never reach a trace row
    try:
        text = value if isinstance(value, str) else jsonsafe.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


class Tracer:
    """Collects one turn's trace rows and chunk recording; `save()` writes them."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.started = time.perf_counter()
        self.rows: list[dict] = []
        self.recorded: list[tuple] = []  # the recording's entries (see the module docstring)
        self.recorded_chunks = 0  # how many chunks they hold
        self.truncated = False
        self._tool_names: dict[str, str] = {}
        self.secrets: set[str] = set()  # the turn's credential values, scrubbed from every summary

    def now_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)

    def hook(self, hook: str, step: int | None, tool: str | None, summary: str, started_ms: float) -> None:
        summary = scrub(summary, self.secrets) if self.secrets else summary
        self._add({"t_ms": started_ms, "kind": "hook", "hook": hook, "step": step, "tool": tool,
                   "summary": summary, "duration_ms": round(self.now_ms() - started_ms, 3)})

    def wait(self, what: str, step: int | None, started_ms: float) -> None:
        """A wait the model path reported (`think_nb.models.progress`) ended: one `wait` row."""
        self._add({"t_ms": started_ms, "kind": "wait", "hook": what, "step": step, "tool": None,
                   "summary": what, "duration_ms": round(self.now_ms() - started_ms, 3)})

    def compaction(self, reason: str, step: int | None, summary: str, started_ms: float) -> None:
        """A context-overflow compaction ended (`think_nb.turns.overflow`): one `compaction` row,
        `hook` its reason ("reactive" | "proactive")."""
        self._add({"t_ms": started_ms, "kind": "compaction", "hook": reason, "step": step, "tool": None,
                   "summary": summary, "duration_ms": round(self.now_ms() - started_ms, 3)})

    def model_call(self, model: str, step: int | None, summary: str) -> None:
        """A model call starts: one `model` row saying what it is sent (`think_nb.models.sent`:
        how many of the turn's messages, which tools)."""
        self._add({"t_ms": self.now_ms(), "kind": "model", "hook": model, "step": step, "tool": None,
                   "summary": summary, "duration_ms": 0.0})

    def observed(self, started_ms: float) -> None:
        """`on_chunk` ran for the latest chunk: count it on that chunk group's row."""
        last = self.rows[-1] if self.rows else None
        if last is None or last["kind"] != "chunks":
            return
        last["observed"] = last.get("observed", 0) + 1
        last["observed_ms"] = round(last.get("observed_ms", 0.0) + self.now_ms() - started_ms, 3)

    @property
    def chunks(self) -> list[tuple[float, dict]]:
        """The recording so far, `[(t_ms, chunk)]` (`expand`)."""
        return expand(self.recorded)

    def chunk(self, chunk: dict, step: int | None) -> None:
        t = self.now_ms()
        if self.recorded_chunks < MAX_CHUNKS:
            self.recorded.append((t, chunk))
            self.recorded_chunks += 1
        else:
            self.truncated = True
        self._row(chunk, step, t)

    def _row(self, chunk: dict, step: int | None, t: float) -> None:
        """Count `chunk` (recorded at `t`) on its group's row, or open one."""
        kind = chunk.get("type", "")
        last = self.rows[-1] if self.rows else None
        text = chunk.get("delta") or chunk.get("inputTextDelta") or ""
        call = chunk.get("toolCallId")
        if call and chunk.get("toolName"):
            self._tool_names[call] = chunk["toolName"]
        if last and last["kind"] == "chunks" and last["hook"] == kind and last.get("call") == call:
            last["count"] += 1  # the group's summary is written by rows_out (a delta costs no string work)
            if text and len(last["text"]) < SUMMARY_CHARS:
                last["text"] = (last["text"] + text)[:SUMMARY_CHARS]
            last["end_ms"] = t  # its duration is worked out once, by rows_out (no rounding per delta)
            return
        tool = self._tool_names.get(call, call) if call else None
        output = chunk.get("output")
        if isinstance(output, dict) and output.get("type") == "kernel-run":  # run_code: code, ms, names, edited
            from think_nb.kernel.report import trace_summary

            self._add({"t_ms": t, "kind": "chunks", "hook": kind, "step": step, "tool": "run_code", "call": call,
                       "count": 1, "text": "", "summary": f"{kind} {trace_summary(output)}"[:SUMMARY_CHARS * 2],
                       "duration_ms": float(output.get("duration_ms") or 0.0)})
            return
        self._add({"t_ms": t, "kind": "chunks", "hook": kind, "step": step, "tool": tool, "call": call,
                   "count": 1, "text": text,
                   "summary": kind + (f": {text}" if text else "") + (f" {summarize(chunk.get('output'))}"
                                                                      if "output" in chunk else ""),
                   "duration_ms": 0.0})

    def deltas(self, chunks: list[dict], step: int | None) -> None:
        """`chunk` for delta chunks published together (`Turn.release`), with one clock reading:
        each run of deltas of one part is one entry of the recording, and adds to its group's row
        at once (its count, its text up to `SUMMARY_CHARS`)."""
        if not chunks:
            return
        t = self.now_ms()
        for first, _, pieces in runs(chunks):
            if not pieces:  # a delta no other joins (no part id, no text): a run of its own
                pieces = [first.get("delta") or first.get("inputTextDelta") or ""]
            count = len(pieces)
            self._record_run(t, first, pieces[1:])
            last = self.rows[-1] if self.rows else None
            if not (last and last["kind"] == "chunks" and last["hook"] == first.get("type", "")
                    and last.get("call") == first.get("toolCallId")):
                rows = len(self.rows)
                self._row(first, step, t)  # opens the group's row
                if len(self.rows) == rows:  # it could not be added (`MAX_ROWS`)
                    continue
                last, count, pieces = self.rows[-1], count - 1, pieces[1:]
            if count:
                last["count"] += count
                if len(last["text"]) < SUMMARY_CHARS:
                    last["text"] = (last["text"] + "".join(pieces))[:SUMMARY_CHARS]
                last["end_ms"] = t

    def _record_run(self, t: float, first: dict, rest: list[str]) -> None:
        """Record `first` and one chunk like it per text of `rest`, within `MAX_CHUNKS`."""
        room = MAX_CHUNKS - self.recorded_chunks
        if room <= 0:
            self.truncated = True
            return
        if len(rest) >= room:
            rest, self.truncated = rest[:room - 1], True
        self.recorded.append((t, first, rest) if rest else (t, first))
        self.recorded_chunks += 1 + len(rest)

    def _add(self, row: dict) -> None:
        if len(self.rows) < MAX_ROWS:
            self.rows.append(row)
        else:
            self.truncated = True

    def rows_out(self) -> list[dict]:
        """The trace rows as stored and shown (bookkeeping keys dropped; a chunk group's summary
        says how many chunks, their text so far and how often `on_chunk` saw them)."""
        return [{k: v for k, v in r.items() if k not in ("count", "text", "call", "observed", "observed_ms", "end_ms")}
                | ({"summary": _group_summary(r)} if r["kind"] == "chunks" else {})
                | ({"duration_ms": round(r["end_ms"] - r["t_ms"], 3)} if "end_ms" in r else {}) for r in self.rows]

    def save(self, traces: TraceStore) -> None:
        """Store the rows and the recording (`think_nb.store.traces`)."""
        traces.save(self.request_id, self.rows_out(), self.recorded)


def expand(entries: list) -> list[tuple[float, dict]]:
    """A stored or kept recording (see the module docstring) as `[(t_ms, chunk)]`, every chunk
    of every run in order."""
    out: list[tuple[float, dict]] = []
    for entry in entries:
        t, chunk = entry[0], entry[1]
        out.append((t, chunk))
        if len(entry) > 2:
            text = MERGEABLE[chunk["type"]][1]
            out.extend((t, {**chunk, text: piece}) for piece in entry[2])
    return out


def _group_summary(row: dict) -> str:
    summary = row["summary"]
    if row["count"] > 1:
        summary = f"{row['hook']} ×{row['count']}" + (f": {row['text']}" if row["text"] else "")
    if row.get("observed"):
        summary += f" · on_chunk ×{row['observed']} ({row['observed_ms']} ms)"
    return summary
