"""Benchmark: time travel (issue 32): fork + resume of a 10-step turn, and a turn record's size.

A scripted agent runs a 10-step turn (steps 0-8 each say a line and call `add`, step 9 answers).
Then, each run (medians over `--runs`):
- the same turn run afresh on the scripted model (the baseline: what the fork is compared with);
- `agent.fork(turn, at=<its last hook site>, model="recorded").run()`: all 10 steps played back from
  the record, every call's result recorded, paused and resumed at `on_chat_response`;
- the same from `before_turn` with `model="recorded", tools="recorded"` (everything after the fork
  point replayed from the record too).
Sizes (SQLite bytes, the sum of a row's column lengths): the record of a one-step text turn and of
the 10-step turn, beside the same turn's trace row (hook rows + chunk recording) and reply row.

    python bench/bench_time_travel.py [--runs 7] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.testing import ScriptedModel as S
from think_nb.turns.fork import sites

STEPS = 10


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def ten_steps() -> list[list]:
    steps = [[S.text(f"Step {n}: adding {n} and 1 to the running total."), S.tool_call("add", {"a": n, "b": 1}),
              S.usage(100 + n, 20)] for n in range(STEPS - 1)]
    return [*steps, [S.text("The total is 45, after nine additions."), S.usage(200, 12)]]


class Bench(Think):
    include_workspace_tools = False
    script: S = S([])

    def get_model(self) -> str:
        return type(self).script.model

    def get_tools(self) -> list:
        return [add]


def ms(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return (time.perf_counter() - started) * 1000


def row_bytes(agent: Think, table: str, where: str, params: tuple) -> int:
    db = runtime_of(agent).store.db
    columns = [r[1] for r in db.read(f"PRAGMA table_info({table})")]
    total = " + ".join(f"coalesce(length({c}), 0)" for c in columns)
    found = db.read(f"SELECT {total} FROM {table} WHERE {where}", params)
    return int(found[0][0]) if found else 0


def main(runs: int) -> None:
    folder = tempfile.mkdtemp()
    db = str(Path(folder) / "bench.sqlite")
    Bench.script = S([[S.text("Hello! How can I help you today?"), S.usage(30, 9)]])
    agent = Bench("bench", db=db)
    text_turn = agent.run("Hi")
    Bench.script = S(ten_steps())
    original = agent.run("Add up 0 to 8, one more each time.")
    assert original.status == "completed", original.error
    record = runtime_of(agent).store.records.load(original.request_id)
    assert record is not None
    last = sites(record.record)[-1]
    fresh, last_site, from_start = [], [], []
    for n in range(runs):
        Bench.script = S(ten_steps())
        other = Bench(f"fresh{n}", db=db)
        fresh.append(ms(lambda: other.run("Add up 0 to 8, one more each time.")))  # noqa: B023
        last_site.append(ms(lambda: agent.fork(original.request_id, at=last, model="recorded").run()))
        from_start.append(ms(lambda: agent.fork(original.request_id, at="before_turn", model="recorded",
                                                tools="recorded").run()))
    base = statistics.median(fresh)
    records = runtime_of(agent).store.records
    print(f"runs {runs}, {STEPS}-step turn ({STEPS - 1} tool calls)")
    print(f"{'the turn run afresh (scripted model), ms':58} {base:9.1f}")
    print(f"{'fork + resume from its last hook site (' + last + '), ms':58} {statistics.median(last_site):9.1f}"
          f"   ratio {statistics.median(last_site) / base:.2f}x")
    print(f"{'fork + resume from before_turn, all recorded, ms':58} {statistics.median(from_start):9.1f}"
          f"   ratio {statistics.median(from_start) / base:.2f}x")
    print(f"{'record size per turn, 1-step text turn, bytes':58} {records.size(text_turn.request_id):9d}")
    print(f"{'record size per turn, 10-step tool turn, bytes':58} {records.size(original.request_id):9d}")
    print(f"{'  its trace row (hook rows + chunk recording), bytes':58} "
          f"{row_bytes(agent, 'think_turn_traces', 'request_id = ?', (original.request_id,)):9d}")
    print(f"{'  its reply message row, bytes':58} "
          f"{row_bytes(agent, 'think_messages', 'id = ?', (original.message['id'],)):9d}")
    print(f"{'shared system prompt (stored once), bytes':58} "
          f"{row_bytes(agent, 'think_record_texts', '1 = ?', (1,)):9d}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2 runs (CI: it must run and print)")
    args = parser.parse_args()
    main(2 if args.quick else args.runs)
