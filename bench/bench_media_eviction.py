"""What media eviction costs a turn's end, and how long a pass holds the event loop.

After every turn `MediaEvictor.schedule()` asks SQLite which rows of the conversation are large enough
to hold evictable media (`think_nb.session.media_eviction`). That question is answered from the size
index (m025) alone; the baseline is the same question without it (`NOT INDEXED`: every row read,
as a pass would without m025). Then a pass evicts `K` aged 40 KB images; its rows are read and
rewritten in a worker thread, so the loop's longest hold during the pass is printed too (a ticker
task records the gaps between its ticks).

    python bench/bench_media_eviction.py           # 2,000 and 10,000 messages, 64 images
    python bench/bench_media_eviction.py --quick   # 200 messages, 4 images (CI: it must run and print)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SQL = "SELECT id, length(content), depth FROM think_messages {how} WHERE agent_key = ? AND length(content) >= ?"


def build(n: int, images: int, db: Path) -> object:
    from think_nb import Think
    from think_nb.binding import runtime_of

    image = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(40_000)).decode()
    messages = []
    for i in range(n):
        parts: list[dict] = [{"type": "text", "text": f"message {i} " + "words " * 20}]
        if i < images * 2 and i % 2 == 0:  # the oldest user messages carry a screenshot
            parts.append({"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{image}"})
        messages.append({"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "parts": parts})
    agent = Think("bench", db=db)
    runtime_of(agent).engine.conversation.attach(messages, None)
    return agent


def per_call(fn, repeat: int) -> float:
    """Median seconds of one `fn()` call."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def pass_with_ticker(evictor) -> tuple[float, float, object]:
    """(pass seconds, longest gap between loop ticks, totals) of one pass."""
    gaps = [0.0]
    stop = False

    async def tick() -> None:
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    totals = await evictor.run_pass()
    took = time.perf_counter() - started
    stop = True
    await ticker
    return took, max(gaps), totals


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes, images = ([200], 4) if args.quick else ([2_000, 10_000], 64)
    repeat = 20 if args.quick else 200
    from think_nb.binding import runtime_of

    print("media eviction: the check at each turn's end, and one pass")
    print(f"{'messages':>10} {'no-op check, us':>16} {'without index, us':>18} {'ratio scan/index':>17}")
    for n in sizes:
        folder = Path(tempfile.mkdtemp(prefix="bench-eviction-"))
        agent = build(n, images, folder / "e.sqlite")
        runtime = runtime_of(agent)
        evictor = runtime.media_evictor
        asyncio.run(evictor.run_pass())  # evict the images once: what is left is nothing to do
        db, key = runtime.store.db, runtime.store.messages.key
        indexed = per_call(evictor.schedule, repeat)
        assert evictor.task is None  # nothing to do: no task was made
        scan = per_call(lambda db=db, key=key: db.read(SQL.format(how="NOT INDEXED"), (key, 32 * 1024)), repeat)
        print(f"{n:>10,} {indexed * 1e6:>16.1f} {scan * 1e6:>18.1f} {scan / indexed:>17.1f}")
    folder = Path(tempfile.mkdtemp(prefix="bench-eviction-"))
    agent = build(sizes[0], images, folder / "p.sqlite")
    evictor = runtime_of(agent).media_evictor
    took, gap, totals = asyncio.run(pass_with_ticker(evictor))
    print(f"one pass, {totals.messages} images of 40 KB evicted: {took * 1000:.1f} ms, "
          f"{took * 1000 / max(1, totals.messages):.2f} ms per message")
    print(f"longest loop hold during the pass: {gap * 1000:.2f} ms")


if __name__ == "__main__":
    main()
