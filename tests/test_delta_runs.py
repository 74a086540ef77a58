"""Deltas handled in runs (issue 29 §5): the engine holds streamed deltas and publishes them
together (`Turn.release`), the recorder joins them once (`batcher.coalesce`), the trace records a
run as one entry (`trace.expand`), the accumulator joins an open part's text when it is read.
Each shortcut must give what the chunk-by-chunk path gives."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agents import scripted_agent
from think_nb.binding import runtime_of
from think_nb.messages import MessageAccumulator
from think_nb.panel.batcher import coalesce, merge_chunk
from think_nb.testing import ScriptedModel as S
from think_nb.turns.trace import Tracer, expand

DELTAS = [
    {"type": "text-delta", "id": "a", "delta": "x"},
    {"type": "text-delta", "id": "a", "delta": "yz"},
    {"type": "text-delta", "id": "b", "delta": "q"},
    {"type": "reasoning-delta", "id": "a", "delta": "r"},
    {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "{"},
    {"type": "tool-input-delta", "toolCallId": "d", "inputTextDelta": "}"},
    {"type": "text-delta", "id": "a", "delta": "m", "providerMetadata": {"k": 1}},
    {"type": "text-delta", "id": "a", "delta": "n", "providerMetadata": {"k": 2}},
    {"type": "text-delta", "delta": "no id"},
    {"type": "text-delta", "id": "a"},
    {"type": "text-delta", "id": "a", "delta": "", "extra": None},
    {"type": "text-delta", "delta": "w", "extra": None},  # 3 keys, no id: never continues a run (runs' fast path)
]
OTHERS = [
    {"type": "start"}, {"type": "start-step"}, {"type": "finish-step"},
    {"type": "text-start", "id": "a"}, {"type": "text-end", "id": "a"}, {"type": "text-start", "id": "b"},
    {"type": "text-end", "id": "b"}, {"type": "reasoning-start", "id": "a"}, {"type": "reasoning-end", "id": "a"},
    {"type": "tool-input-start", "toolCallId": "c", "toolName": "add"},
]
streams = st.lists(st.sampled_from(DELTAS + OTHERS), max_size=40).map(copy.deepcopy)
delta_runs = st.lists(st.sampled_from(DELTAS), max_size=40).map(copy.deepcopy)


def merged(chunks: list[dict]) -> list[dict]:
    out: list[dict] = []
    for chunk in chunks:
        merge_chunk(out, chunk)
    return out


@settings(max_examples=300, deadline=None)
@given(streams)
def test_coalesce_is_merge_chunk_applied_one_by_one(chunks: list[dict]) -> None:
    before = copy.deepcopy(chunks)
    assert coalesce(chunks) == merged(chunks)
    assert chunks == before  # never mutated


@settings(max_examples=300, deadline=None)
@given(streams)
def test_the_accumulator_reads_the_same_whenever_it_is_read(chunks: list[dict]) -> None:
    read_often = MessageAccumulator("m")
    snapshots = []
    for chunk in chunks:
        read_often.apply(chunk)
        snapshots.append(copy.deepcopy(read_often.message))
    for n, snapshot in enumerate(snapshots):  # the same prefix, read once at its end
        once = MessageAccumulator("m")
        for chunk in chunks[:n + 1]:
            once.apply(chunk)
        assert once.message == snapshot


def test_an_open_parts_text_is_whole_when_read_mid_stream() -> None:
    acc = MessageAccumulator("m")
    acc.apply({"type": "text-start", "id": "t"})
    for piece in ("Hel", "lo", " there"):
        acc.apply({"type": "text-delta", "id": "t", "delta": piece})
    assert acc.message["parts"] == [{"type": "text", "text": "Hello there", "state": "streaming"}]
    acc.apply({"type": "text-delta", "id": "t", "delta": "!"})
    assert acc.parts[0]["text"] == "Hello there!"


@settings(max_examples=200, deadline=None)
@given(st.lists(delta_runs, max_size=6))
def test_the_trace_of_runs_is_the_trace_of_each_chunk(batches: list[list[dict]]) -> None:
    one_by_one, in_runs = Tracer("r"), Tracer("r")
    for batch in batches:
        for chunk in batch:
            one_by_one.chunk(chunk, 0)
        in_runs.deltas(batch, 0)
    assert [c for _, c in in_runs.chunks] == [c for _, c in one_by_one.chunks]
    assert [c for _, c in expand(in_runs.recorded)] == [c for batch in batches for c in batch]
    strip = ("t_ms", "duration_ms")
    assert [{k: v for k, v in r.items() if k not in strip} for r in in_runs.rows_out()] == \
        [{k: v for k, v in r.items() if k not in strip} for r in one_by_one.rows_out()]


async def test_listeners_hear_every_delta_or_the_joined_batches() -> None:
    """A per-chunk listener hears every delta the model streamed, in order; a batch listener hears
    the same chunks joined; both end with the stored reply's text."""
    pieces = [f"{n % 10}" for n in range(3000)]
    agent = scripted_agent(S([[S.deltas(pieces)]]))
    each: list[dict] = []
    batches: list[list[dict]] = []

    class Each:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            each.append(chunk)

    class Batches:
        def on_chunks(self, request_id: str, chunks: list[dict], continuation: bool) -> None:
            batches.append(chunks)

        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            raise AssertionError("a listener with on_chunks is handed batches")

    runtime_of(agent).subscribe(Each())
    runtime_of(agent).subscribe(Batches())
    result = await agent.send("go")
    assert result.status == "completed"
    assert [c["delta"] for c in each if c["type"] == "text-delta"] == pieces
    joined = [c for batch in batches for c in batch]
    assert merged(joined) == merged(each)
    assert len(joined) < len(each) / 10  # deltas were joined
    text: Any = [p["text"] for p in agent.messages[-1]["parts"] if p["type"] == "text"]
    assert text == ["".join(pieces)]
    recording = agent.recording(result.request_id)
    assert recording is not None
    assert [c for _, c in recording.chunks] == each  # the trace recorded every chunk
