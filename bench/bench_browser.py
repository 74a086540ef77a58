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

    .venv/bin/python bench/bench_browser.py [--deltas 10000] [--runs 3]
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
agent.subscribe(Timing())
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 deltas, 1 run: checks the benchmark runs (CI)")
    args = parser.parse_args()
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
