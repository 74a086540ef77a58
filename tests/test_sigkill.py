"""SIGKILL at many points of a turn (issue 12): a fork server (`tests/durable_child.py`) runs an
agent turn in a child process, the test kills it with SIGKILL when a condition holds (the n-th
chunk broadcast, a tool running, a tool settled, the turn persisted, ...), then reopens the agent
here and checks, for every kill point:

- broadcast: every chunk the child's listener heard is in SQLite (the stream rows and the
  recovered reply);
- settled tools: the next turn sends the model no tool call without a result, and no tool runs
  again;
- turn log: no row is left `running`;
- next turn: a new turn on the reopened agent completes;
- integrity: `PRAGMA integrity_check` is ok.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from agents import eventually
from test_durable import expanded
from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.testing import ScriptedModel as S

CHILD = Path(__file__).with_name("durable_child.py")


def side_chunks(side: Path) -> list[tuple[str, dict]]:
    if not side.exists():
        return []
    out = []
    for line in side.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut by the kill
            continue
        out.append((row["rid"], row["chunk"]))
    return out


def db_count(db: Path, sql: str) -> int:
    try:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            return conn.execute(sql).fetchone()[0]
    except sqlite3.Error:
        return 0


def lines(n: int) -> Callable[[Path, Path], bool]:
    return lambda db, side: len(side_chunks(side)) >= n


def chunk(kind: str, count: int = 1) -> Callable[[Path, Path], bool]:
    return lambda db, side: sum(c["type"] == kind for _, c in side_chunks(side)) >= count


def text(fragment: str) -> Callable[[Path, Path], bool]:
    return lambda db, side: fragment in "".join(c.get("delta", "") for _, c in side_chunks(side))


def marker(n: int) -> Callable[[Path, Path], bool]:
    return lambda db, side: Path(f"{side}.tool{n}").exists()


def segments(n: int) -> Callable[[Path, Path], bool]:
    return lambda db, side: db_count(db, "SELECT count(*) FROM think_stream_chunks") >= n


def assistant_rows(n: int) -> Callable[[Path, Path], bool]:
    return lambda db, side: db_count(db, "SELECT count(*) FROM think_messages WHERE role = 'assistant'") >= n


def finished(db: Path, side: Path) -> bool:
    return Path(f"{side}.done").exists()


def stream_closed(db: Path, side: Path) -> bool:
    return db_count(db, "SELECT count(*) FROM think_stream_metadata WHERE status != 'streaming'") >= 1


# (name, with a panel-like listener, kill when)
KILL_POINTS: list[tuple[str, bool, Callable[[Path, Path], bool]]] = [
    ("first chunk", True, lines(1)),
    ("3 chunks", True, lines(3)),
    ("8 chunks", True, lines(8)),
    ("15 chunks", True, lines(15)),
    ("25 chunks", True, lines(25)),
    ("tool input streaming", True, chunk("tool-input-start")),
    ("tool input available", True, chunk("tool-input-available")),
    ("in tool 1", True, marker(1)),
    ("after tool 1", True, chunk("tool-output-available")),
    ("step 2 streaming", True, text("First result")),
    ("step 2, 3 sentences", True, text("First result in. " * 3)),
    ("in tool 2", True, marker(2)),
    ("after tool 2", True, chunk("tool-output-available", 2)),
    ("step 3 streaming", True, text("All done")),
    ("step 3, 2 sentences", True, text("All done: the answer is 42. " * 2)),
    ("finish broadcast", True, chunk("finish")),
    ("turn finished", True, finished),
    ("no listener: first segment", False, segments(1)),
    ("no listener: 4 segments", False, segments(4)),
    ("no listener: step 1 persisted", False, assistant_rows(1)),
    ("no listener: in tool 1", False, marker(1)),
    ("no listener: in tool 2", False, marker(2)),
    ("no listener: stream closed", False, stream_closed),
    ("no listener: turn finished", False, finished),
]
PROPERTIES = ("broadcast", "settled tools", "turn log", "next turn", "integrity")


class ForkServer:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def start_turn(self, db: Path, side: Path, listener: bool, **extra: object) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        cmd = {"db": str(db), "side": str(side), "listener": listener, **extra}
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        await self.proc.stdin.drain()
        return int((await self.proc.stdout.readline()).decode())


@contextlib.asynccontextmanager
async def fork_server() -> AsyncIterator[ForkServer]:
    """The durable child, ready to fork one turn per `start_turn`; killed at the end."""
    proc = await asyncio.create_subprocess_exec(sys.executable, str(CHILD), stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    try:
        assert (await asyncio.wait_for(proc.stdout.readline(), 120)).strip() == b"ready"
        yield ForkServer(proc)
    finally:
        proc.kill()
        await proc.wait()


async def kill(pid: int) -> None:
    """SIGKILL a forked turn and wait until it is gone."""
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: gone(pid), timeout=30, what=f"child {pid} gone")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def check(db: Path, side: Path, listener: bool) -> dict[str, bool]:
    runs: list = []

    @tool
    def work(n: int) -> int:
        """Do some work."""
        runs.append(n)
        return n * 10

    script = S([[S.text("Next answer.")]])

    class Durable(Think):
        def get_model(self) -> str:
            return script.model

        def get_tools(self) -> list:
            return [work]

    agent = Durable("d", db=db)
    ok: dict[str, bool] = {}
    heard = side_chunks(side)
    broadcast_ok = True
    for rid in {r for r, _ in heard}:
        mine = [c for r, c in heard if r == rid]
        stored = [c for segment in runtime_of(agent).store.streams.segments(rid) for c in segment]
        broadcast_ok &= expanded(stored)[:len(expanded(mine))] == expanded(mine)
        start = next(c for c in mine if c["type"] == "start")
        reply = runtime_of(agent).store.messages.get(start["messageId"])
        said = "".join(c.get("delta", "") for c in mine if c["type"] == "text-delta")
        if said:
            broadcast_ok &= reply is not None and "".join(
                p.get("text", "") for p in reply["parts"] if p["type"] == "text").startswith(said)
        for c in mine:
            if c["type"] == "tool-output-available":
                broadcast_ok &= reply is not None and any(
                    p.get("toolCallId") == c["toolCallId"] and p.get("state") == "output-available"
                    for p in reply["parts"])
    if listener and not heard:
        broadcast_ok = False  # a listener kill point always has something heard
    ok["broadcast"] = broadcast_ok
    ok["turn log"] = all(t["status"] != "running" for t in agent.turns())
    result = await agent.send("next")
    ok["next turn"] = result.status == "completed"
    sent = script.requests[0]["messages"] if script.requests else []
    called = {c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls") or []}
    answered = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    ok["settled tools"] = bool(sent) and called <= answered and runs == []
    with contextlib.closing(sqlite3.connect(db)) as conn:
        ok["integrity"] = conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    return ok


async def test_sigkill_at_24_points_loses_nothing_broadcast(tmp_path: Path) -> None:
    async with fork_server() as server:
        outcomes: dict[str, dict[str, bool]] = {}
        for n, (name, listener, when) in enumerate(KILL_POINTS):
            db, side = tmp_path / f"kill{n}.sqlite", tmp_path / f"kill{n}.jsonl"
            pid = await server.start_turn(db, side, listener)
            await eventually(lambda db=db, side=side, when=when: when(db, side), timeout=120,
                             what=f"kill point {name!r}")
            await kill(pid)
            outcomes[name] = await check(db, side, listener)
    table = {prop: sum(o[prop] for o in outcomes.values()) for prop in PROPERTIES}
    print(f"\nSIGKILL points: {len(outcomes)}")
    for prop in PROPERTIES:
        print(f"  {prop:14s} {table[prop]}/{len(outcomes)}")
    failed = {name: [p for p, good in o.items() if not good] for name, o in outcomes.items() if not all(o.values())}
    assert failed == {}
    assert len(outcomes) >= 20


async def test_sigkill_between_flushes_loses_only_what_no_view_heard(tmp_path: Path) -> None:
    """Deltas are recorded and broadcast in batches (`Turn.emit`, `StreamRecorder`). A fast stream (no
    delay) is stopped mid-way by an `on_chunk` hook at its N-th delta, between two writes of the
    recorder, and killed there: what was written is exactly what the listeners heard, per chunk
    and per batch (a panel's hub), and the recovered reply is exactly what was written."""
    from durable_child import FAST_DELTAS
    from think_nb.jsonsafe import loads_stored
    from think_nb.turns.recorder import SEGMENT_DELTAS

    async with fork_server() as server:
        for stop_at in (SEGMENT_DELTAS + 300, FAST_DELTAS - 100):  # after a write (at SEGMENT_DELTAS at the latest)
            db, side = tmp_path / f"fast{stop_at}.sqlite", tmp_path / f"fast{stop_at}.jsonl"
            pid = await server.start_turn(db, side, True, fast=True, stop_at=stop_at)
            await eventually(lambda side=side: Path(f"{side}.stopped").exists(), timeout=120,
                             what=f"the child stopped at delta {stop_at}")
            await kill(pid)
            heard, batches = side_chunks(side), side_chunks(Path(f"{side}.batches"))
            (rid,) = {r for r, _ in heard}
            with contextlib.closing(sqlite3.connect(db)) as conn:
                stored = [c for (segment,) in conn.execute(
                    "SELECT chunks FROM think_stream_chunks WHERE request_id = ? ORDER BY seq", (rid,))
                    for c in loads_stored(segment)]
            written = "".join(c.get("delta", "") for c in stored if c["type"] == "text-delta")
            assert text_heard(heard) and text_heard(heard) == text_heard(batches)  # both listeners heard it
            assert expanded(stored)[:len(expanded([c for _, c in heard]))] == expanded([c for _, c in heard])
            assert written == text_heard(heard)  # between two writes: nothing written unheard, nothing heard unwritten
            assert len(written) <= stop_at
            outcome = await check(db, side, True)
            assert outcome == dict.fromkeys(PROPERTIES, True)
            message_id = next(c["messageId"] for _, c in heard if c["type"] == "start")
            with contextlib.closing(sqlite3.connect(db)) as conn:
                (row,) = conn.execute("SELECT content FROM think_messages WHERE id = ?", (message_id,)).fetchone()
            recovered = "".join(p.get("text", "") for p in loads_stored(row)["parts"] if p["type"] == "text")
            assert recovered == written


async def test_sigkill_while_deltas_are_held_loses_nothing_heard(tmp_path: Path) -> None:
    """With no `on_chunk` hook the engine holds deltas and publishes them in runs (`Turn.release`):
    a fast stream killed at any moment after its listeners heard 500 characters (several runs in)
    has every chunk they heard, per chunk and per batch, in SQLite, and the recovered reply holds it."""
    async with fork_server() as server:
        for n, heard_chars in enumerate((500, 1500, 3000)):
            db, side = tmp_path / f"held{n}.sqlite", tmp_path / f"held{n}.jsonl"
            pid = await server.start_turn(db, side, True, fast=True)
            await eventually(lambda side=side, k=heard_chars: len(text_heard(side_chunks(side))) >= k, timeout=120,
                             what=f"{heard_chars} characters heard")
            await kill(pid)
            heard, batches = side_chunks(side), side_chunks(Path(f"{side}.batches"))
            assert text_heard(heard).startswith(text_heard(batches)) or text_heard(batches).startswith(
                text_heard(heard))  # the kill may fall between the two listeners of one batch
            assert await check(db, side, True) == dict.fromkeys(PROPERTIES, True)
            assert await check_heard(db, Path(f"{side}.batches"))


def text_heard(chunks: list[tuple[str, dict]]) -> str:
    return "".join(c.get("delta", "") for _, c in chunks if c["type"] == "text-delta")


async def check_heard(db: Path, side: Path) -> bool:
    """Every chunk in `side` (what a listener heard) is in `db`'s stream rows, in order."""
    from think_nb.jsonsafe import loads_stored

    heard = side_chunks(side)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        for rid in {r for r, _ in heard}:
            stored = [c for (segment,) in conn.execute(
                "SELECT chunks FROM think_stream_chunks WHERE request_id = ? ORDER BY seq", (rid,))
                for c in loads_stored(segment)]
            mine = expanded([c for r, c in heard if r == rid])
            if expanded(stored)[:len(mine)] != mine:
                return False
    return bool(heard)
