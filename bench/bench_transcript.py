"""Benchmark: IOPub bytes the chat panel costs per turn, and to open, over a real kernel (issue 29 §2).

A real ipykernel (tests/kernel/harness.py) holds a `Think` agent on a `ScriptedModel` whose reply is 50
characters, with 0 / 2,000 / 10,000 messages already stored (user ~90 characters, assistant ~260 with
usage metadata: ~240 bytes of JSON a message). The panel is displayed (`display(agent.panel())`, as
`%think` does), then this script, playing the front end, sends turns from the panel and counts the JSON
bytes of every IOPub message the kernel sent meanwhile, by kind:

- transcript: `messages` trait syncs (before) or `transcript_patch` / `message_updated` frames (after);
- chunks: the streamed reply (`use_chat_response` frames);
- other traits: status, annotations, ... (`update` messages without the transcript);
- static transcript: the saved-notebook fallback output rewritten as the transcript changes
  (`update_display_data`, once a turn: the newest 20 messages, at most 12,000 characters of markdown,
  plus its HTML; before issue 29 §2's last step, the newest 60,000 characters);
- open: the widget's `comm_open` state without its ESM bundle (the 280 KB `_esm` trait, the same
  before and after; mostly the `messages` trait: the whole branch in memory before, the newest window
  after), and the static transcript output apart.

Before vs after: the same run on the think_nb of another commit (`--baseline`, default the commit this
work started from), extracted with `git archive` and put first on the kernel's PYTHONPATH.

    .venv/bin/python bench/bench_transcript.py [--sizes 0 2000 10000] [--turns 3] [--baseline REV]
    .venv/bin/python bench/bench_transcript.py --quick     # sizes 0 and 500, 2 turns (CI)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "kernel"), str(ROOT / "tests")]

from harness import FakeFrontend, start_frontend, stop_frontend  # noqa: E402

BASELINE = "2704490"
"""main when the transcript went by message id (the `messages` trait replaced on every change)."""

SETUP = textwrap.dedent('''
    import json
    from think_nb import Think
    from think_nb.binding import runtime_of
    from think_nb.testing import ScriptedModel as S
    import think_nb

    REPLY = "The answer is 42, as the tool said; nothing else."  # 50 characters
    script = S([[S.text(REPLY)] for _ in range(50)])

    class Bench(Think):
        def get_model(self):
            return script.model

    agent = Bench("bench-{n}")
    rows = []
    for i in range({n} // 2):
        rows.append({{"id": f"u{{i}}", "role": "user", "parts": [{{"type": "text",
                     "text": f"Question {{i}}: what does the notebook's dataframe hold in column x?"}}]}})
        rows.append({{"id": f"a{{i}}", "role": "assistant", "parts": [{{"type": "step-start"}}, {{"type": "text",
                     "state": "done", "text": "Column x holds the sampled values; " * 6}}],
                     "metadata": {{"usage": {{"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876,
                                  "source": "reported"}}, "cost_usd": 0.00012, "finishReason": "stop"}}}})
    if rows:
        runtime_of(agent).conversation.attach(rows, None)
    print(think_nb.__file__, len(agent.messages))
''')


def size(msg: dict) -> int:
    """Bytes of one IOPub message's content as JSON (what the kernel serialises and the browser parses)."""
    return len(json.dumps(msg["content"], separators=(",", ":")))


def kind(msg: dict, comm: str) -> str | None:
    """What an IOPub message carries (see the module docstring), or None if not the panel's."""
    content = msg["content"]
    if msg["msg_type"] == "update_display_data":
        return "static transcript"
    if msg["msg_type"] != "comm_msg" or content.get("comm_id") != comm:
        return None
    data = content["data"]
    if data.get("method") == "update":
        return "transcript" if "messages" in data["state"] else "other traits"
    frame = data.get("content") or {}
    if frame.get("type") in ("transcript_patch", "message_updated", "transcript_page"):
        return "transcript"
    return "chunks" if frame.get("type") == "use_chat_response" else "other frames"


KINDS = ("transcript", "chunks", "other traits", "other frames", "static transcript")


def one_size(fe: FakeFrontend, n: int, turns: int) -> dict[str, Any]:
    fe.execute(SETUP.format(n=n)).check()
    start = len(fe.log)
    fe.execute("display(agent.panel())").check()
    opened = [m for m in fe.log[start:] if m["msg_type"] == "comm_open"
              and m["content"]["data"]["state"].get("_model_module") == "anywidget"][-1]
    comm = opened["content"]["comm_id"]
    fe.send_custom(comm, {"type": "stream_resume_request", "probeId": "bench-view"})  # a view attaches
    state = opened["content"]["data"]["state"]
    state_bytes = len(json.dumps({k: v for k, v in state.items() if k != "_esm"}, separators=(",", ":")))
    static = sum(size(m) for m in fe.log[start:] if m["msg_type"] == "display_data"
                 and "text/html" in m["content"]["data"])
    per_turn: list[dict[str, int]] = []
    for t in range(turns):
        mark = len(fe.log)
        message = {"id": f"t{n}-{t}", "role": "user", "parts": [{"type": "text", "text": "And the next one?"}]}
        fe.send_custom(comm, {"type": "use_chat_request", "id": f"r{n}-{t}", "trigger": "submit-message",
                              "messages": [message]})
        fe.wait_for(lambda m: m["msg_type"] == "comm_msg" and m["content"].get("comm_id") == comm
                    and m["content"]["data"].get("method") == "update"
                    and m["content"]["data"]["state"].get("status") == "ready", timeout=120, since=mark)
        fe.execute("pass").check()  # everything the turn's end sends is on IOPub before this cell's idle
        fe.drain(0.3)
        counts = dict.fromkeys(KINDS, 0)
        for m in fe.log[mark:]:
            k = kind(m, comm)
            if k is not None:
                counts[k] += size(m)
        per_turn.append(counts)
    median = {k: int(statistics.median(c[k] for c in per_turn)) for k in KINDS}
    panel = sum(v for k, v in median.items() if k != "static transcript")
    return {"n": n, "open_state": state_bytes, "open_static": static, "turn": median, "turn_panel": panel}


def run(sizes: list[int], turns: int, pythonpath: Path | None, workdir: Path) -> list[dict[str, Any]]:
    env = {"PYTHONPATH": str(pythonpath)} if pythonpath else {}
    fe = start_frontend(workdir, **env)
    try:
        fe.execute("%load_ext think_nb").check()
        return [one_size(fe, n, turns) for n in sizes]
    finally:
        stop_frontend(fe)


def baseline_tree(rev: str, into: Path) -> Path:
    """`think_nb` of commit `rev` in `into` (with this checkout's built panel bundle, which ChatPanel needs)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "think_nb"], capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    (into / "think_nb" / "static").mkdir(exist_ok=True)
    shutil.copy(ROOT / "think_nb" / "static" / "widget.js", into / "think_nb" / "static" / "widget.js")
    return into


def kb(b: int) -> str:
    return f"{b / 1000:>9.1f} KB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 2_000, 10_000])
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE, help="commit whose think_nb is measured as 'before'")
    parser.add_argument("--quick", action="store_true", help="sizes 0 and 500, 2 turns (CI)")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.turns = [0, 500], 2
    tmp = Path(tempfile.mkdtemp(prefix="think-bench-transcript-"))
    try:
        before = run(args.sizes, args.turns, baseline_tree(args.baseline, tmp / "base"), tmp / "k-before")
        after = run(args.sizes, args.turns, None, tmp / "k-after")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nIOPub bytes per turn (a 50-character reply; median of {args.turns} turns), before = {args.baseline}:")
    print(f"  {'stored messages':>16} {'before':>12} {'after':>12} {'ratio':>8}   after: "
          + ", ".join(KINDS))
    for b, a in zip(before, after, strict=True):
        ratio = b["turn_panel"] / max(1, a["turn_panel"])
        detail = " / ".join(f"{a['turn'][k]}" for k in KINDS)
        print(f"  {a['n']:>16,} {kb(b['turn_panel'])} {kb(a['turn_panel'])} {ratio:>7.1f}x   {detail} B")
    print("  (panel bytes: transcript + chunks + traits + frames; the static transcript output is apart:)")
    for b, a in zip(before, after, strict=True):
        print(f"  {a['n']:>16,} static transcript per turn  before {kb(b['turn']['static transcript'])}"
              f"   after {kb(a['turn']['static transcript'])}")
    print("\nopening the panel (comm_open state without the ESM bundle; the static transcript output apart):")
    for b, a in zip(before, after, strict=True):
        print(f"  {a['n']:>16,} {kb(b['open_state'])} {kb(a['open_state'])} {b['open_state'] / a['open_state']:>7.1f}x"
              f"   static {kb(b['open_static'])} -> {kb(a['open_static'])}")


if __name__ == "__main__":
    main()
