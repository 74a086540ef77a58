"""Media eviction of the stored transcript and windowed hydration's event (Think's
hydration-budget.test.ts and media-eviction.test.ts, cloudflare/agents#1710): each test's docstring
names the Think case it ports.

Real SQLite files and real turns on scripted models; the pass is `think_nb.session.media_eviction`
(Think's `_evictAgedMediaBestEffort`, which Think's tests call as `runEvictionForTest`), the rewrite
of one message `think_nb.messages.eviction` (Think's `evictLargeMediaFromMessage`).
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agents import scripted_agent
from think_nb import Think, events
from think_nb.binding import runtime_of
from think_nb.messages import media
from think_nb.messages.eviction import MAX_WALK_DEPTH, Blob, evict_message
from think_nb.session.media_eviction import MediaEvictor
from think_nb.testing import ScriptedModel as S

THRESHOLD = 1_000
PNG_B64 = "A" * 12_000  # decodes (base64 "AAAA" = three zero bytes) to 9,000 zero bytes
BIG_STRING = "B" * 12_000


def path_for(n: int, extension: str) -> str:
    return f"/evicted/blob-{n}.{extension}"


def big_data_url(chars: int = THRESHOLD) -> str:
    return f"data:image/png;base64,{'A' * chars}"


def seeded(name: str, db: Path, prefix: str = "m", **settings: Any) -> Think:
    """Think's `seedMediaHistoryForTest`: six messages; m0 a user screenshot (a data: URL file
    part), m1 a tool result with a large string, m2-m5 small."""
    cls = type("Media", (Think,), {"get_model": lambda self: "think-scripted/none", **settings})
    agent = cls(name, db=db)
    runtime_of(agent).engine.conversation.attach([
        {"id": f"{prefix}0", "role": "user", "parts": [
            {"type": "text", "text": "look at this screenshot"},
            {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG_B64}"}]},
        {"id": f"{prefix}1", "role": "assistant", "parts": [
            {"type": "tool-screenshot", "toolCallId": "c1", "state": "output-available", "input": {},
             "output": {"mediaType": "image/png", "data": BIG_STRING, "note": "small structured field"}}]},
        {"id": f"{prefix}2", "role": "user", "parts": [{"type": "text", "text": "thanks"}]},
        {"id": f"{prefix}3", "role": "assistant", "parts": [{"type": "text", "text": "recent answer"}]},
        {"id": f"{prefix}4", "role": "user", "parts": [{"type": "text", "text": "more"}]},
        {"id": f"{prefix}5", "role": "assistant", "parts": [{"type": "text", "text": "ok"}]},
    ], None)
    return agent


def evictor(agent: Think) -> MediaEvictor:
    return runtime_of(agent).media_evictor


def stored(agent: Think, message_id: str) -> dict:
    message = runtime_of(agent).store.messages.get(message_id)
    assert message is not None
    return message


# -- the pass over stored messages (hydration-budget.test.ts, "mediaEviction") ---------------------
async def test_aged_file_parts_and_tool_strings_leave_the_stored_transcript(tmp_path: Path) -> None:
    """hydration-budget.test.ts: media eviction of data-URL files and tool strings. The file part
    becomes a text marker naming its workspace file (the PNG's own bytes); the tool part keeps its
    shape, only the large string is a marker; recent messages, ids, order and parents are untouched."""
    agent = seeded("evict", tmp_path / "a.sqlite", media_eviction={"keep_recent_messages": 2,
                                                                    "min_part_bytes": 10_000})
    before = copy.deepcopy(agent.messages)
    tree = runtime_of(agent).store.messages.tree_rows()
    totals = await evictor(agent).run_pass()
    assert totals is not None
    assert totals.payload() == {"messages": 2, "parts": 2, "bytes": len(PNG_B64) + 22 + len(BIG_STRING),
                                "externalized_bytes": len(PNG_B64) + 22 + len(BIG_STRING)}
    marker = f"[evicted image/png, {len(base64.b64decode(PNG_B64))} bytes; preserved at /attachments/evicted/m0-0.png]"
    tool_marker = f"[evicted {len(BIG_STRING)} bytes; preserved at /attachments/evicted/m1-0.txt]"
    expected = copy.deepcopy(before)
    expected[0]["parts"][1] = {"type": "text", "text": marker}
    expected[1]["parts"][0]["output"]["data"] = tool_marker
    assert [stored(agent, m["id"]) for m in before] == expected  # the whole stored branch
    assert agent.messages == expected  # memory holds what is stored
    assert runtime_of(agent).store.messages.tree_rows() == {k: (p, c) for k, (p, c) in tree.items()}
    assert agent.workspace.cat_file("/attachments/evicted/m0-0.png") == base64.b64decode(PNG_B64)
    assert agent.workspace.cat_file("/attachments/evicted/m1-0.txt") == BIG_STRING.encode()
    fresh = type(agent)("evict", db=tmp_path / "a.sqlite")  # a new process reads the rewritten rows
    assert fresh.messages == expected


async def test_a_pass_is_silent_and_reports_once(tmp_path: Path) -> None:
    """hydration-budget.test.ts: silent rewrite + event. No view is told per rewritten row (Think:
    no status broadcast); one `chat:media:evicted` per pass, with its totals."""
    agent = seeded("silent", tmp_path / "a.sqlite", media_eviction={"keep_recent_messages": 2,
                                                                     "min_part_bytes": 10_000})

    class Listener:
        def __init__(self) -> None:
            self.heard: list[str] = []

        def __getattr__(self, name: str) -> Any:
            return lambda *args: self.heard.append(name)

    listener = Listener()
    runtime_of(agent).subscribe(listener)
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="chat:media:*"):
        await evictor(agent).run_pass()
        await evictor(agent).run_pass()  # nothing left: no second event
    assert listener.heard == []
    assert [(e.name, e.payload) for e in seen] == [("chat:media:evicted", {
        "messages": 2, "parts": 2, "bytes": len(PNG_B64) + 22 + len(BIG_STRING),
        "externalized_bytes": len(PNG_B64) + 22 + len(BIG_STRING)})]


async def test_keep_recent_messages_is_clamped_to_four(tmp_path: Path) -> None:
    """hydration-budget.test.ts: keepRecent clamp. `keep_recent_messages=0` would age all six; the
    last four (what each request sends at full fidelity) are never rewritten."""
    big = "C" * 12_000
    agent = seeded("clamp", tmp_path / "a.sqlite", media_eviction={"keep_recent_messages": 0,
                                                                    "min_part_bytes": 10_000})
    conversation = runtime_of(agent).engine.conversation
    for n in (2, 3, 4, 5):  # give the recent four large strings too
        message = conversation.held(f"m{n}")
        assert message is not None
        conversation.replace({**message, "parts": [
            {"type": "tool-dump", "toolCallId": f"d{n}", "state": "output-available", "input": {},
             "output": {"blob": big}}], "role": "assistant"})
    recent = [stored(agent, f"m{n}") for n in (2, 3, 4, 5)]
    totals = await evictor(agent).run_pass()
    assert totals is not None and totals.messages == 2
    assert [stored(agent, f"m{n}") for n in (2, 3, 4, 5)] == recent
    assert "[evicted" in stored(agent, "m0")["parts"][1]["text"]


async def test_passes_chain_until_the_backlog_is_drained(tmp_path: Path) -> None:
    """hydration-budget.test.ts: chained passes. With `max_rows_per_pass=1` the first pass rewrites
    one row and starts the next pass itself; no new turn is needed."""
    agent = seeded("chain", tmp_path / "a.sqlite", media_eviction={"keep_recent_messages": 2,
                                                                    "min_part_bytes": 10_000,
                                                                    "max_rows_per_pass": 1})
    first = await evictor(agent).run_pass()
    assert first is not None and (first.messages, first.backlog) == (1, True)
    assert stored(agent, "m0")["parts"][1]["type"] == "text"
    assert stored(agent, "m1")["parts"][0]["output"]["data"] == BIG_STRING
    assert evictor(agent).task is not None
    await evictor(agent).settled()
    assert stored(agent, "m1")["parts"][0]["output"]["data"].startswith("[evicted 12000 bytes")


async def test_a_second_pass_is_one_index_query(tmp_path: Path) -> None:
    """hydration-budget.test.ts: cheap second pass. It evicts nothing and reads one statement (the
    size index, m025), no message; a message found to hold nothing evictable (a long text) is not
    read again either."""
    agent = seeded("cheap", tmp_path / "a.sqlite", media_eviction={"keep_recent_messages": 2,
                                                                    "min_part_bytes": 10_000})
    await agent.add_messages([{"id": "long", "role": "user", "parts": [{"type": "text", "text": "T" * 20_000}]}])
    for n in range(4):
        await agent.add_messages([{"id": f"later{n}", "role": "user", "parts": [{"type": "text", "text": "x"}]}])
    await evictor(agent).settled()  # add_messages started passes: m0, m1 rewritten, "long" read once
    assert stored(agent, "m1")["parts"][0]["output"]["data"].startswith("[evicted")
    db = runtime_of(agent).store.db
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)
    try:
        second = await evictor(agent).run_pass()
    finally:
        db._conn.set_trace_callback(None)
    assert second is not None and second.payload() == {"messages": 0, "parts": 0, "bytes": 0, "externalized_bytes": 0}
    assert len(statements) == 1 and "length(content) >=" in statements[0]
    plan = db.read(f"EXPLAIN QUERY PLAN {statements[0]}")
    assert "USING INDEX think_messages_size" in plan[0][3]
    program = db.read(f"EXPLAIN {statements[0]}")  # every column comes from the index: no row is read
    index = {op[2] for op in program if op[1] == "OpenRead" and str(op[5]).startswith("k(")}
    assert index and {op[2] for op in program if op[1] == "Column"} <= index


async def test_a_message_written_during_the_pass_is_not_overwritten(tmp_path: Path, monkeypatch) -> None:
    """Safe against a concurrent turn: a message rewritten between the pass's read and its write
    keeps the newer version, in SQLite and in memory (the row is replaced only while it is what the
    pass read); the next pass evicts the newer version."""
    from think_nb.session import media_eviction as module

    agent = seeded("race", tmp_path / "a.sqlite", media_eviction={"keep_recent_messages": 2,
                                                                   "min_part_bytes": 10_000,
                                                                   "max_rows_per_pass": 1})
    conversation = runtime_of(agent).engine.conversation
    m0 = conversation.held("m0")
    assert m0 is not None
    newer = {**m0, "parts": [*m0["parts"], {"type": "text", "text": "edited meanwhile"}]}
    real = module.evict_message

    def racing(message: dict, *args: Any) -> Any:
        result = real(message, *args)
        if message["id"] == "m0" and conversation.held("m0") is m0:
            conversation.replace(newer)  # the loop waits for this thread: as if a turn wrote it now
        return result

    monkeypatch.setattr(module, "evict_message", racing)
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="chat:media:evicted"):
        first = await evictor(agent).run_pass()
    assert first is not None and first.messages == 0 and seen == []
    assert stored(agent, "m0") == newer and conversation.held("m0") == newer
    await evictor(agent).settled()  # the backlog's pass (m1), then m0 again: its newer version
    await evictor(agent).run_pass()
    assert stored(agent, "m0")["parts"][1]["text"].startswith("[evicted image/png")
    assert stored(agent, "m0")["parts"][2] == {"type": "text", "text": "edited meanwhile"}
    assert conversation.held("m0") == stored(agent, "m0")


async def test_drop_mode_keeps_no_bytes(tmp_path: Path) -> None:
    """hydration-budget.test.ts: externalize off. The marker gives the size only and nothing is
    written to the workspace."""
    agent = seeded("drop", tmp_path / "a.sqlite", prefix="d", media_eviction={
        "keep_recent_messages": 2, "min_part_bytes": 10_000, "externalize_to_workspace": False})
    totals = await evictor(agent).run_pass()
    assert totals is not None and (totals.messages, totals.externalized_bytes) == (2, 0)
    marker = f"[evicted image/png, {len(base64.b64decode(PNG_B64))} bytes]"
    assert stored(agent, "d0")["parts"][1] == {"type": "text", "text": marker}
    assert not agent.workspace.exists("/attachments/evicted")


async def test_disabled_eviction_leaves_the_store_alone(tmp_path: Path) -> None:
    """hydration-budget.test.ts: disabled. `media_eviction=False`: no pass, no task after a change."""
    agent = seeded("off", tmp_path / "a.sqlite", media_eviction=False)
    before = copy.deepcopy(agent.messages)
    assert await evictor(agent).run_pass() is None
    await agent.add_messages([{"id": "more", "role": "user", "parts": [{"type": "text", "text": "x"}]}])
    assert evictor(agent).task is None
    assert [stored(agent, m["id"]) for m in before] == before
    assert stored(agent, "m0")["parts"][1]["url"].startswith("data:image/png;base64,")


async def test_turns_evict_aged_media_in_the_background(tmp_path: Path) -> None:
    """hydration-budget.test.ts: growth-triggered pass. A figure a tool returned and an image the
    user attached are evicted from storage once later turns age them, without any call; the next
    request gets the marker, and the model can read the file back from the workspace."""
    figure = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(40_000)).decode()
    script = S([[S.tool_call("plot", {})], [S.text("a plot")], *([[S.text(f"ok {n}")] for n in range(4)])])

    from think_nb import tool

    @tool
    def plot() -> dict:
        """A plot."""
        return {"type": "content", "value": [{"type": "text", "text": "the chart"},
                                             {"type": "image-data", "data": figure, "mediaType": "image/png"}]}

    agent = scripted_agent(script, tools=[plot], name="grow", media_eviction={"keep_recent_messages": 4})
    seen: list[events.Event] = []
    with events.subscribe(seen.append, agent=agent, names="chat:media:evicted"):
        shot = {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{figure}",
                "filename": "shot.png"}
        assert (await agent.save_messages([{"id": "u0", "role": "user", "parts": [
            {"type": "text", "text": "plot this"}, shot]}])).status == "completed"
        reply = agent.messages[1]["id"]
        for n in range(2):
            assert (await agent.send(f"turn {n}")).status == "completed"
            await evictor(agent).settled()
    marker = f"[evicted image/png, {len(base64.b64decode(figure))} bytes; preserved at /attachments/evicted/u0-0.png]"
    assert stored(agent, "u0")["parts"] == [{"type": "text", "text": "plot this"}, {"type": "text", "text": marker}]
    [part] = [p for p in stored(agent, reply)["parts"] if p["type"] == "tool-plot"]
    safe = reply.replace("/", "_")
    assert part["output"] == {"type": "content", "value": [
        {"type": "text", "text": "the chart"},
        {"type": "text", "text": f"[evicted image/png, {len(base64.b64decode(figure))} bytes; "
                                 f"preserved at /attachments/evicted/{safe}-0.png]"}]}
    assert agent.workspace.cat_file("/attachments/evicted/u0-0.png") == base64.b64decode(figure)
    assert agent.workspace.cat_file(f"/attachments/evicted/{safe}-0.png") == base64.b64decode(figure)
    assert [e.payload["messages"] for e in seen] == [2]
    assert (await agent.send("again")).status == "completed"
    sent = json.dumps(script.requests[-1])
    assert figure[:200] not in sent and marker in sent


# -- the rewrite of one message (media-eviction.test.ts) ---------------------------------------------
def test_small_and_non_data_urls_and_text_are_left_alone() -> None:
    """media-eviction.test.ts: small/non-data untouched. The same message object comes back."""
    message = {"id": "m", "role": "user", "parts": [
        {"type": "file", "mediaType": "image/png", "url": "data:image/png;,tiny"},
        {"type": "file", "mediaType": "image/png", "url": f"https://example.com/{'x' * THRESHOLD * 2}"},
        {"type": "text", "text": "T" * THRESHOLD * 2}]}
    result = evict_message(message, THRESHOLD, True, path_for)
    assert (result.changed, result.parts, result.blobs) == (False, 0, [])
    assert result.message is message


def test_large_strings_nested_in_tool_output_become_markers_in_place() -> None:
    """media-eviction.test.ts: nested tool-output strings. Objects and arrays keep their shape,
    blobs are numbered per message, a data: URL keeps its type (and is kept decoded)."""
    big1, big2 = "B" * THRESHOLD, big_data_url(THRESHOLD * 2)
    message = {"id": "m", "role": "assistant", "parts": [
        {"type": "tool-screenshot", "toolCallId": "c1", "state": "output-available", "input": {"page": 1},
         "output": {"note": "small", "data": big1, "frames": [{"image": big2}, {"image": "small"}]}}]}
    snapshot = copy.deepcopy(message)
    result = evict_message(message, THRESHOLD, True, path_for)
    assert message == snapshot  # no mutation
    assert (result.changed, result.parts, result.bytes) == (True, 2, len(big1) + len(big2))
    assert result.blobs == [Blob("/evicted/blob-0.txt", big1.encode(), None),
                            Blob("/evicted/blob-1.png", bytes(THRESHOLD * 2 * 3 // 4), "image/png")]
    assert result.message == {"id": "m", "role": "assistant", "parts": [
        {"type": "tool-screenshot", "toolCallId": "c1", "state": "output-available", "input": {"page": 1},
         "output": {"note": "small", "data": f"[evicted {len(big1)} bytes; preserved at /evicted/blob-0.txt]",
                    "frames": [{"image": f"[evicted image/png, {THRESHOLD * 2 * 3 // 4} bytes; "
                                         "preserved at /evicted/blob-1.png]"},
                               {"image": "small"}]}}]}


def test_dynamic_tool_parts_are_evicted_too() -> None:
    """media-eviction.test.ts: dynamic-tool parts."""
    message = {"id": "m", "role": "assistant", "parts": [
        {"type": "dynamic-tool", "toolName": "browser", "toolCallId": "c1", "state": "output-available",
         "input": {}, "output": {"blob": "C" * THRESHOLD}}]}
    result = evict_message(message, THRESHOLD, True, path_for)
    assert (result.changed, result.parts) == (True, 1)
    assert result.message["parts"][0]["output"] == {
        "blob": f"[evicted {THRESHOLD} bytes; preserved at /evicted/blob-0.txt]"}


def test_the_walk_stops_at_the_depth_limit() -> None:
    """media-eviction.test.ts: depth limit. A string deeper than `MAX_WALK_DEPTH` (8) containers
    is left alone; nesting never costs a deep recursion."""
    deep: dict = {"blob": "D" * THRESHOLD}
    for _ in range(10):
        deep = {"nested": deep}
    message: dict[str, Any] = {"id": "m", "role": "assistant", "parts": [
        {"type": "tool-deep", "toolCallId": "c1", "state": "output-available", "input": {}, "output": deep}]}
    result = evict_message(message, THRESHOLD, True, path_for)
    assert (result.changed, result.message is message) == (False, True)
    shallow: dict = {"blob": "D" * THRESHOLD}
    for _ in range(MAX_WALK_DEPTH - 1):
        shallow = {"nested": shallow}
    message["parts"][0]["output"] = shallow
    assert evict_message(message, THRESHOLD, True, path_for).parts == 1


def test_drop_mode_records_the_size_only() -> None:
    """media-eviction.test.ts: drop mode."""
    big = "E" * THRESHOLD
    message = {"id": "m", "role": "assistant", "parts": [
        {"type": "tool-dump", "toolCallId": "c1", "state": "output-available", "input": {}, "output": {"blob": big}}]}
    result = evict_message(message, THRESHOLD, False, path_for)
    assert (result.changed, result.blobs) == (True, [])
    assert result.message["parts"][0]["output"]["blob"] == f"[evicted {len(big)} bytes]"


def test_media_eviction_fields_resolve_as_thinks() -> None:
    """media-eviction.test.ts: config resolution, with the two fields Think's config adds."""
    assert media.MediaEviction.coerce({"min_part_bytes": 1, "max_rows_per_pass": 2}) == media.MediaEviction(
        keep_recent_messages=8, min_part_bytes=1, externalize_to_workspace=True, max_rows_per_pass=2)
    from think_nb.errors import UserError

    with pytest.raises(UserError, match="max_rows_per_pass=0; use a whole number >= 1"):
        media.MediaEviction.coerce({"max_rows_per_pass": 0})
    with pytest.raises(UserError, match="externalize_to_workspace='no'"):
        media.MediaEviction.coerce({"externalize_to_workspace": "no"})


# -- windowed hydration (hydration-budget.test.ts) -----------------------------------------------
def test_a_windowed_branch_is_reported_once_per_change(tmp_path: Path) -> None:
    """hydration-budget.test.ts: change-only events. Loading a window of a longer branch emits
    `chat:hydration:windowed` once; reading the same window again does not; a new window does."""
    db = tmp_path / "w.sqlite"
    writer = Think("long", db=db)
    runtime_of(writer).engine.conversation.attach(
        [{"id": f"seed-{n}", "role": "user" if n % 2 == 0 else "assistant", "parts": [{"type": "text", "text": str(n)}]}
         for n in range(10)], None)
    seen: list[events.Event] = []
    with events.subscribe(seen.append, names="chat:hydration:*"):
        agent = type("Windowed", (Think,), {"hydration_limit": 4})("long", db=db, key="Think:long")
        assert [m["id"] for m in agent.messages] == [f"seed-{n}" for n in range(6, 10)]  # read on first use
        conversation = runtime_of(agent).conversation
        conversation.reload()
        conversation.reload()
        assert [(e.name, e.agent, e.payload) for e in seen] == [
            ("chat:hydration:windowed", "Think:long", {"total_messages": 10, "budget_messages": 4,
                                                       "hydrated_messages": 4})]
        conversation.append({"id": "seed-10", "role": "user", "parts": [{"type": "text", "text": "10"}]})
        conversation.reload()
        assert [e.payload["total_messages"] for e in seen] == [10, 11]
        short = Think("short", db=db)
        runtime_of(short).engine.conversation.attach(
            [{"id": "s0", "role": "user", "parts": [{"type": "text", "text": "hi"}]}], None)
        assert len(Think("short", db=db).messages) == 1  # a branch the window holds whole: no event
        assert len(seen) == 2


def test_only_the_size_query_reads_the_size_index(tmp_path: Path) -> None:
    """The size index (m025, partial since m026) is not the planner's pick for other queries on a
    conversation's ids and depths: the branch flag of search hits (`MessageStore.on_branch`) and
    `ages` look ids up by the primary key, never scanning the conversation's rows through it."""
    from think_nb.store import open_database

    db = open_database(tmp_path / "plan.sqlite")
    depths = ("SELECT id, depth FROM think_messages WHERE agent_key = :agent AND id IN "
              "(SELECT value FROM json_each(:ids))")
    plan = " / ".join(row[3] for row in db.read("EXPLAIN QUERY PLAN " + depths, {"agent": "A:a", "ids": "[]"}))
    assert "think_messages_size" not in plan and "(agent_key=? AND id=?)" in plan, plan
    large = ("SELECT id, length(content), depth FROM think_messages WHERE agent_key = ? "
             "AND length(content) >= ? AND length(content) >= 1024")  # what MessageStore.large_rows asks
    plan = " / ".join(row[3] for row in db.read("EXPLAIN QUERY PLAN " + large, ("A:a", 32768)))
    assert "USING INDEX think_messages_size" in plan, plan
