"""Replaying a recorded turn, offline and deterministically (for demos in front of a class).

Every turn's chunks are recorded with their time offsets (`trace.py`). From a `Recording`:
- `await agent.replay(request_id=None, speed=1.0)` plays the chunks into every view of the agent
  (panels, terminal) with the recorded timing divided by `speed` (`speed=0`: no waiting), text
  never faster than a reader's pace (`pacing`: a scripted turn recorded in milliseconds is seen
  streaming). The stored transcript does not change.
- `recording.to_scripted_model()` rebuilds the model's responses (exact text deltas, tool calls
  with their argument pieces, usage) as a `ScriptedModel`, so the turn can run again through the
  whole engine (tools and hooks included) with no network or API key.
- `recording.save(path)` / `Recording.load(path)` keep a recording in a JSON file.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from think_nb import jsonsafe


@dataclass
class Recording:
    """A recorded turn: `chunks` is `[(t_ms, UIMessageChunk), ...]` in emission order."""

    request_id: str
    chunks: list[tuple[float, dict]]

    def save(self, path: str | Path) -> Path:
        """Write the recording as JSON; returns the path."""
        path = Path(path)
        path.write_text(jsonsafe.dumps({"request_id": self.request_id, "chunks": self.chunks}))
        return path

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        data = json.loads(Path(path).read_text())
        return cls(data["request_id"], [(t, c) for t, c in data["chunks"]])

    def to_scripted_model(self, delay: float = 0.0) -> Any:
        """A `ScriptedModel` that streams exactly the recorded model output, one step per model call."""
        from think_nb.testing import ScriptedModel

        steps: list[list] = []
        usage = None
        for _, chunk in self.chunks:
            kind = chunk["type"]
            if kind == "start-step":
                steps.append([])
            elif kind == "text-delta" and steps:
                _append_delta(steps[-1], chunk["delta"])
            elif kind == "tool-input-start" and steps:
                steps[-1].append(ScriptedModel.tool_call(chunk["toolName"], "", id=chunk["toolCallId"]))
                steps[-1][-1].value["pieces"] = []
            elif kind == "tool-input-delta" and steps:
                call = next(i for i in reversed(steps[-1]) if i.kind == "tool_call"
                            and i.value["id"] == chunk["toolCallId"])
                call.value["pieces"].append(chunk["inputTextDelta"])
                call.value["arguments"] += chunk["inputTextDelta"]
            elif kind == "finish":
                usage = ((chunk.get("messageMetadata") or {}).get("usage"))
        if steps and usage:  # the recording has the turn's total: earlier steps report zero
            for step in steps[:-1]:
                step.append(ScriptedModel.usage(0, 0))
            steps[-1].append(ScriptedModel.usage(usage["prompt_tokens"], usage["completion_tokens"]))
        return ScriptedModel(steps, delay=delay)


def _append_delta(step: list, delta: str) -> None:
    from think_nb.testing import ScriptedModel

    if step and step[-1].kind == "deltas":
        step[-1].value.append(delta)
    else:
        step.append(ScriptedModel.deltas([delta]))


READING_MS_PER_CHAR = 20.0
"""The slowest a replay shows text at `speed=1`: a text, reasoning or tool-input delta of N characters
takes at least N × 20 ms (50 characters a second, a typing pace), even when it was recorded faster
(a scripted or cached turn streams a reply in a few milliseconds; a class would see it appear at once)."""


def pacing(recording: Recording, speed: float = 1.0) -> list[float]:
    """Seconds to wait before each chunk of `recording` at `speed`: the recorded gap, at least the
    reading pace of the chunk's text (`READING_MS_PER_CHAR`), divided by `speed` (`0`: no waiting)."""
    if speed <= 0:
        return [0.0] * len(recording.chunks)
    waits, previous = [], 0.0
    for t_ms, chunk in recording.chunks:
        shown = chunk.get("delta") if chunk.get("type") in ("text-delta", "reasoning-delta") else \
            chunk.get("inputTextDelta") if chunk.get("type") == "tool-input-delta" else ""
        gap = max(t_ms - previous, len(shown or "") * READING_MS_PER_CHAR)
        previous = max(previous, t_ms)
        waits.append(gap / 1000 / speed)
    return waits


async def play(engine: Any, recording: Recording, speed: float = 1.0) -> list[dict]:
    """Emit the recorded chunks to an agent's listeners (its `TurnEngine`'s) at the pace `pacing`
    gives (the recorded timing, never faster than a reader's, / `speed`); nothing is recorded or stored."""
    from think_nb.messages import new_id

    request_id = new_id("replay")
    for wait, (_, chunk) in zip(pacing(recording, speed), recording.chunks, strict=True):
        if wait > 0:
            await asyncio.sleep(wait)
        engine.notify("on_chunk", request_id, chunk, False)
    engine.messages_changed()
    engine.notify("on_turn_end", request_id, "completed", None)
    return [chunk for _, chunk in recording.chunks]
