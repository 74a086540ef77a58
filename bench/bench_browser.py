"""Benchmark: a scripted 10,000-delta reply streamed into the chat panel in a real browser.

A real JupyterLab on 127.0.0.1 and Debian chromium (the e2e harness, tests/e2e/jlab.py). In
the kernel, a `Think` agent on a `ScriptedModel` streams N one-character text deltas through
litellm and the panel; a listener records when the kernel emitted each delta (time.time()).
In the page, a MutationObserver records when the panel's text grew (Date.now(), same clock).

Prints:
- deltas/s rendered: N / (DOM showing all N characters - kernel emitting the first delta);
- median (and p95) delay from the kernel emitting delta i to the DOM first showing it;
- frames the panel received (use_chat_response frames per second, target <= ~30/s).
Targets (issue 4): >= 5,000 deltas/s rendered, median delay <= 100 ms.

Long replies (issue 16, `--long-reply`): the built panel (think_nb/static/widget.js) in chromium on a
blank page, driven by an in-page model (the anywidget model interface: traits, `msg:custom`) that
streams a Markdown reply (paragraphs, lists, code) of 10 KB, 100 KB and 1 MB in `--frames`
`use_chat_response` frames. The panel renders synchronously on each frame; the time from handing
it a frame to the end of a forced layout is "time per frame". Prints the median of the last 20
frames per size; with equal frames a frame of a bigger reply carries more new text (5 KB per frame
for 1 MB in 200 frames), so these grow with the size even when only new text costs anything. Then
the reply gets 20 more frames of 100 characters each ("then ... ms/frame of 100 chars"): the same
new text at every size, so that column is flat when a frame costs its new text and the open tail
block only (js/src/markdown.ts StreamingMarkdown), and grows with the length when a frame costs
the whole message (issue 16: main before the fix, 10 KB / 100 KB / 1 MB: 2.2 / 2.8 / 34.7 ms; after: ~1.2 ms each).

Opening a long session (issue 29 §2, `--open-session`): the built panel in chromium on a blank page, as
above, given the widget state the kernel sends when a panel opens on a session of 10,000 stored messages
(a real `Think` agent and `ChatPanel` in this process: the newest window and `{rev, more}`), against the
bundle and state of `--baseline` (its `messages` trait: the whole branch in memory, 2,000 messages at the
default hydration limit; its bundle built with esbuild from `git archive`). Prints the time from
`initialize` to the end of the first layout, and to the next animation frame (the first screen painted),
median of 5 runs after one warm-up. Target: <= 150 ms.

    .venv/bin/python bench/bench_browser.py [--deltas 10000] [--runs 3]
    .venv/bin/python bench/bench_browser.py --long-reply [--frames 200] [--bundle path/to/widget.js]
    .venv/bin/python bench/bench_browser.py --open-session [--messages 10000] [--baseline REV]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "e2e")]

from jlab import CHROMIUM, CHROMIUM_ARGS, JupyterServer, open_notebook, run_all  # noqa: E402

AGENT_CELL = '''
import json, os, time
from think_nb import Think
from think_nb.testing import ScriptedModel as S
from think_nb.models.litellm_env import get_litellm
from think_nb.binding import runtime_of
get_litellm()

TEXT = "".join(chr(97 + i % 26) for i in range({n}))

class Timing:
    """Records when the kernel emitted each text delta (one character each)."""
    def __init__(self):
        self.times = []
    def on_chunk(self, request_id, chunk, continuation):
        if chunk["type"] == "text-delta":
            self.times.extend([time.time()] * len(chunk["delta"]))
    def on_turn_end(self, request_id, status, error):
        with open("emit_{run}.json.tmp", "w") as f:  # written whole, then renamed: never read half-written
            f.write(json.dumps(self.times))
        os.replace("emit_{run}.json.tmp", "emit_{run}.json")
    def on_messages(self, messages):
        pass

script = S([[S.text(TEXT, chunk_size=1)]])
class Bench(Think):
    def get_model(self):
        return script.model
agent = Bench("bench-{run}")
runtime_of(agent).subscribe(Timing())
agent.panel()
'''

OBSERVE = """(n) => {
  window.__samples = []; window.__frames = 0;
  const panel = document.querySelector('.think-panel');
  const text = () => { const t = panel.querySelectorAll('.think-message[data-role=assistant] .think-text');
                       return t.length ? t[t.length - 1].textContent.trim().length : 0; };
  new MutationObserver(() => window.__samples.push([Date.now(), text()]))
    .observe(panel, {subtree: true, childList: true, characterData: true});
}"""


def one_run(page, server: JupyterServer, n: int, run: int) -> dict:
    path = server.write_notebook(f"bench_{run}", ["%load_ext think_nb", AGENT_CELL.format(n=n, run=run)])
    open_notebook(page, server, path)
    run_all(page)
    panel = page.locator(".think-panel").first
    panel.wait_for(timeout=90_000)
    page.wait_for_function("() => document.querySelector('.think-panel')?.dataset.status === 'ready'", timeout=90_000)
    page.evaluate(OBSERVE, n)
    # count use_chat_response frames: wrap the panel model's message dispatch via the console-free way
    box = panel.locator("textarea.think-input")
    box.fill("go")
    box.press("Enter")
    page.wait_for_function(f"() => window.__samples.length && window.__samples.at(-1)[1] >= {n}", timeout=120_000)
    emit_file = server.root / f"emit_{run}.json"
    deadline = time.monotonic() + 30
    while not emit_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    emit = json.loads(emit_file.read_text())
    samples = page.evaluate("() => window.__samples")
    server.delete_sessions()
    return measure(emit, samples, n)


def measure(emit: list[float], samples: list[list[float]], n: int) -> dict:
    """Delays (ms) from emitting delta i to the first DOM sample showing >= i+1 characters."""
    assert len(emit) == n, f"kernel emitted {len(emit)} deltas, expected {n}"
    delays, j = [], 0
    samples = sorted(samples)
    for i, t_emit in enumerate(emit):
        while j < len(samples) and samples[j][1] < i + 1:
            j += 1
        if j == len(samples):
            raise AssertionError(f"delta {i} never reached the DOM")
        delays.append(samples[j][0] - t_emit * 1000)
    done = next(t for t, length in samples if length >= n)
    span_s = (done - emit[0] * 1000) / 1000
    updates = sum(1 for k in range(1, len(samples)) if samples[k][1] != samples[k - 1][1])
    return {
        "deltas": n,
        "deltas_per_s_rendered": round(n / span_s),
        "kernel_emit_span_s": round(emit[-1] - emit[0], 3),
        "median_delay_ms": round(statistics.median(delays), 1),
        "p95_delay_ms": round(statistics.quantiles(delays, n=20)[-1], 1),
        "dom_text_updates": updates,
        "dom_updates_per_s": round(updates / span_s, 1),
    }


LONG_REPLY = r"""async ({bundle, sizes, frames, delta}) => {
  class Model {
    constructor(traits) { this.traits = traits; this.handlers = new Map(); }
    get(k) { return this.traits[k]; }
    set(k, v) { this.traits[k] = v; this.emit(`change:${k}`); }
    on(e, cb) { if (!this.handlers.has(e)) this.handlers.set(e, new Set()); this.handlers.get(e).add(cb); }
    off(e, cb) { if (e && cb) this.handlers.get(e)?.delete(cb); }
    send(msg) {  // the kernel's answer to the view's resume probe: nothing to resume
      if (msg?.type === "stream_resume_request") queueMicrotask(() => this.emit("msg:custom",
        {type: "stream_resume_none", probeId: msg.probeId}, []));
    }
    save_changes() {}
    emit(e, ...args) { for (const cb of this.handlers.get(e) ?? []) cb(...args); }
  }
  const mod = (await import(URL.createObjectURL(new Blob([bundle], {type: "text/javascript"})))).default;
  const words = "the model streams a long reply with words of varied length and some `code` and **bold**".split(" ");
  function reply(size) {  // Markdown: paragraphs, a list, a code block, repeated
    let out = "", i = 0;
    while (out.length < size) {
      const k = i++ % 8;
      if (k === 5) out += "- item one\n- item two with more words\n- item three\n\n";
      else if (k === 7) out += "```python\nfor i in range(10):\n    print(i * i)\n```\n\n";
      else out += Array.from({length: 40}, (_, j) => words[(i * 7 + j) % words.length]).join(" ") + ".\n\n";
    }
    return out.slice(0, size);
  }
  const results = {};
  for (const size of sizes) {
    const el = document.createElement("div");
    document.body.replaceChildren(el);
    const model = new Model({uid: `bench-${size}`, messages: [], status: "ready", error: "", client_tools: [],
      client_tool_runner: "", session_state: {}, annotations: {}, agent_info: {}, agent_name: "bench", db_path: "",
      paused_at: ""});
    const cleanup = mod.initialize({model});
    mod.render({model, el});
    await new Promise((r) => setTimeout(r, 0));  // the resume probe's answer
    const text = reply(size), per = Math.ceil(size / frames), id = `req-${size}`;
    const frame = (chunks, done = false) => ({type: "use_chat_response", id, chunks, done});
    model.emit("msg:custom", frame([{type: "start", messageId: `m-${size}`}, {type: "start-step"},
                                    {type: "text-start", id: "t"}]), []);
    const times = [], scripts = [];
    for (let at = 0; at < size; at += per) {
      const t0 = performance.now();
      model.emit("msg:custom", frame([{type: "text-delta", id: "t", delta: text.slice(at, at + per)}]), []);
      scripts.push(performance.now() - t0);
      void el.offsetHeight;  // force the layout of what was rendered
      times.push(performance.now() - t0);
    }
    const shown = el.querySelector(".think-message[data-role=assistant] .think-text")?.textContent.length ?? 0;
    // then 20 frames of `delta` characters each (what a model streams per frame): the same work per
    // frame at every size, so any growth is the panel doing work in proportion to the message
    const small = [];
    for (let k = 0; k < 20; k++) {
      const t0 = performance.now();
      const piece = text.slice(k * delta, (k + 1) * delta);
      model.emit("msg:custom", frame([{type: "text-delta", id: "t", delta: piece}]), []);
      void el.offsetHeight;
      small.push(performance.now() - t0);
    }
    const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    results[size] = {frames: times.length, median_last20_ms: median(times.slice(-20)),
                     script_median_last20_ms: median(scripts.slice(-20)), delta_median_ms: median(small),
                     max_ms: Math.max(...times), total_ms: times.reduce((a, b) => a + b, 0), shown_chars: shown};
    if (typeof cleanup === "function") cleanup();
  }
  return results;
}"""


def long_reply(sizes: list[int], frames: int, bundle: Path, delta: int = 100) -> dict:
    """Time per frame (ms) of the panel rendering a streamed reply of each size (see the module docstring)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_content("<!DOCTYPE html><html><body></body></html>")
        results = page.evaluate(LONG_REPLY, {"bundle": bundle.read_text(encoding="utf-8"), "sizes": sizes,
                                             "frames": frames, "delta": delta})
        browser.close()
    for size, r in results.items():
        assert r["shown_chars"] > 0.9 * int(size) * 0.9, f"the panel shows {r['shown_chars']} of {size} characters"
    return results


OPEN_SESSION = r"""async ({bundle, state, runs}) => {
  class Model {
    constructor(traits) { this.traits = traits; this.handlers = new Map(); }
    get(k) { return this.traits[k]; }
    set(k, v) { this.traits[k] = v; this.emit(`change:${k}`); }
    on(e, cb) { if (!this.handlers.has(e)) this.handlers.set(e, new Set()); this.handlers.get(e).add(cb); }
    off(e, cb) { if (e && cb) this.handlers.get(e)?.delete(cb); }
    send(msg) {
      if (msg?.type === "stream_resume_request") queueMicrotask(() => this.emit("msg:custom",
        {type: "stream_resume_none", probeId: msg.probeId}, []));
    }
    save_changes() {}
    emit(e, ...args) { for (const cb of this.handlers.get(e) ?? []) cb(...args); }
  }
  const mod = (await import(URL.createObjectURL(new Blob([bundle], {type: "text/javascript"})))).default;
  const frame = () => new Promise((r) => requestAnimationFrame(() => r(performance.now())));
  const out = [];
  for (let run = 0; run <= runs; run++) {
    const el = document.createElement("div");
    el.style.height = "800px";
    document.body.replaceChildren(el);
    await frame();
    const model = new Model({...JSON.parse(state), uid: `open-${run}`});  // parsed as the comm's JSON would be
    const t0 = performance.now();
    const cleanup = mod.initialize({model});
    mod.render({model, el});
    void el.offsetHeight;  // the first layout
    const laid = performance.now();
    const painted = await frame();
    const shown = el.querySelectorAll(".think-message").length;
    if (run > 0) out.push({layout_ms: laid - t0, frame_ms: painted - t0, shown});  // run 0 warms up
    if (typeof cleanup === "function") cleanup();
  }
  return out;
}"""


def session_states(n: int) -> tuple[dict, dict]:
    """`(before, after)`: the widget state a panel opening on a session of `n` stored messages gets (the
    `messages` trait the whole branch in memory before; the newest window and `{rev, more}` after)."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["THINK_NB_DIR"] = tempfile.mkdtemp(prefix="think-bench-open-")
    from think_nb import Think
    from think_nb.binding import runtime_of
    from think_nb.panel.widget import ChatPanel

    class Long(Think):
        def get_model(self) -> str:
            return "think-scripted/bench"

    agent = Long("long")
    rows = []
    for i in range(n // 2):
        rows.append({"id": f"u{i}", "role": "user", "parts": [{"type": "text", "text": f"Question {i}: what does "
                     "the notebook's dataframe hold in column x?"}]})
        rows.append({"id": f"a{i}", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "text", "state": "done", "text": "Column x holds the sampled values; " * 6}],
            "metadata": {"usage": {"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876,
                                   "source": "reported"}, "cost_usd": 0.00012, "finishReason": "stop"}})
    runtime_of(agent).conversation.attach(rows, None)
    after = {k: v for k, v in ChatPanel(agent).get_state().items() if not k.startswith("_")}
    before = {k: v for k, v in after.items() if k != "transcript"} | {"messages": agent.messages}
    return before, after


def baseline_bundle(rev: str, into: Path) -> Path:
    """The panel bundle of commit `rev`, built with this checkout's esbuild and node_modules."""
    import subprocess
    import tarfile
    from io import BytesIO

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "js/src", "think_nb/panel/protocol_spec.json"],
                             capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    (into / "js" / "node_modules").symlink_to(ROOT / "js" / "node_modules")
    out = into / "widget-before.js"
    subprocess.run([str(ROOT / "js" / "node_modules" / ".bin" / "esbuild"), str(into / "js" / "src" / "widget.ts"),
                    "--bundle", "--format=esm", "--minify", f"--outfile={out}", "--log-level=error"], check=True)
    return out


def open_session(n: int, baseline: str, bundle: Path, runs: int = 5) -> dict[str, dict]:
    """Median times (ms) to the first layout and the first frame of a panel opening on `n` messages."""
    from playwright.sync_api import sync_playwright

    before_state, after_state = session_states(n)
    cases = {"before": (baseline_bundle(baseline, Path(tempfile.mkdtemp(prefix="think-bundle-"))), before_state),
             "after": (bundle, after_state)}
    results = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_content("<!DOCTYPE html><html><body></body></html>")
        for name, (path, state) in cases.items():
            out = page.evaluate(OPEN_SESSION, {"bundle": path.read_text(encoding="utf-8"), "state": json.dumps(state),
                                               "runs": runs})
            results[name] = {"layout_ms": statistics.median(r["layout_ms"] for r in out),
                             "frame_ms": statistics.median(r["frame_ms"] for r in out),
                             "shown": out[-1]["shown"], "state_kb": len(json.dumps(state)) / 1000}
        browser.close()
    return results


def print_open(n: int, results: dict[str, dict]) -> None:
    print(f"\nopen a {n:,}-message session (the first screen; median of 5 runs):")
    for name, r in results.items():
        print(f"  {name:<7} messages drawn {r['shown']:>6}   state {r['state_kb']:>8.1f} KB   first layout "
              f"{r['layout_ms']:>7.1f} ms   first frame {r['frame_ms']:>7.1f} ms")
    ratio = results["before"]["frame_ms"] / max(results["after"]["frame_ms"], 0.01)
    print(f"  ratio before/after (first frame) {ratio:>6.1f}x   (target: after <= 150 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 deltas, 1 run: checks the benchmark runs (CI)")
    parser.add_argument("--long-reply", action="store_true", help="time per frame vs reply length (10 KB-1 MB)")
    parser.add_argument("--frames", type=int, default=200, help="--long-reply: frames per reply")
    parser.add_argument("--bundle", type=Path, default=ROOT / "think_nb" / "static" / "widget.js",
                        help="--long-reply: the panel bundle to measure (compare builds)")
    parser.add_argument("--open-session", action="store_true", help="first screen of a long session, before/after")
    parser.add_argument("--messages", type=int, default=10_000, help="--open-session: stored messages")
    parser.add_argument("--baseline", default="2704490", help="--open-session: the commit measured as 'before'")
    args = parser.parse_args()
    if args.quick or args.open_session:
        print_open(args.messages, open_session(args.messages, args.baseline, args.bundle))
        if args.open_session:
            return
    if args.quick or args.long_reply:
        sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
        frames = 40 if args.quick else args.frames
        results = long_reply(sizes, frames, args.bundle)
        print(f"\nlong reply in {frames} frames ({args.bundle.name}): time per frame, median of the last 20")
        for size, r in results.items():
            print(f"  {int(size) // 1000:>6} KB   {r['median_last20_ms']:>8.2f} ms/frame "
                  f"(render {r['script_median_last20_ms']:>7.2f} ms + layout)   max {r['max_ms']:>8.2f} ms   "
                  f"total {r['total_ms']:>9.1f} ms   then {r['delta_median_ms']:>6.2f} ms/frame of 100 chars")
        if args.long_reply:
            return
    if args.quick:
        args.deltas, args.runs = 500, 1
    from playwright.sync_api import sync_playwright

    server = JupyterServer("lab", Path(tempfile.mkdtemp(prefix="think-bench-"))).start()
    results = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for run in range(args.runs):
                results.append(one_run(page, server, args.deltas, run))
                print(json.dumps(results[-1]))
            browser.close()
    finally:
        server.stop()
    rate = statistics.median(r["deltas_per_s_rendered"] for r in results)
    delay = statistics.median(r["median_delay_ms"] for r in results)
    print(f"\n{args.deltas} deltas x {args.runs} runs (median of runs):")
    print(f"  deltas/s rendered        {rate:>8.0f}   (target >= 5000)")
    print(f"  median emit->DOM delay   {delay:>8.1f} ms (target <= 100)")
    print(f"  DOM text updates/s       {statistics.median(r['dom_updates_per_s'] for r in results):>8.1f}"
          "   (one per frame; frames <= ~25/s per panel)")


if __name__ == "__main__":
    main()
