"""Benchmark: the first turn in a fresh process: loop stalls while litellm imports (issue 18 §3), first token
against the peers in instructions (issue 29 §3).

The agents here take a hosted model's path (a `ScriptedModel` with `via_litellm=True`); an
in-process model never imports litellm (`bench/bench_peers.py` measures that path).

Four measures, each in fresh processes (litellm is imported once per process):

1. **Event-loop stall.** An agent is created (which starts importing litellm on its thread) and its
   first turn is sent at once, as a `%%think` cell right after `%load_ext` does; a monitor task
   sleeps 5 ms at a time and records how late it wakes. Reported: the longest stall during turn 1
   and turn 2, and how long turn 1 took. Before issue 18 the turn imported litellm on the loop
   (a ~6 s stall); now it awaits the import thread (the stall is what one import step holds the
   GIL for).
1b. **First hosted turn over HTTP.** The same, with a hosted model's real path: litellm's `openai/`
   provider over HTTP to a provider-shaped server on 127.0.0.1 (tests/providers/server.py, in its
   own process so its work does not share this one's GIL). A callback on the loop every 1 ms records
   how late it runs and every thread's CPU clock. Reported: the longest stall (wall ms) split into
   the loop's own CPU, other threads' CPU (while the loop waits for the GIL they hold) and the rest
   (no thread of the process ran: it waited for a core, the machine's load); the most CPU other
   threads spent in one gap where the loop ran < 2 ms (a bound on one GIL hold off the loop); the
   loop's most CPU in one gap; the longest garbage collection on another thread (`gc.callbacks`: a
   collection holds the GIL from start to end). The stalls are those of the turn: the agent's
   creation before it (the cell's own synchronous call: a new file migrated, litellm's import thread
   started) is reported on its own line. Same run, main dfa5d3b against this (load 10):
   longest stall 692 ms (loop 1.6 ms CPU, other threads 212 ms: a full collection, 684 ms wall, on
   litellm's executor thread; 2.4 s of collecting off the loop in all) against 374 ms (loop 26 ms,
   other threads 0, the rest waiting for a core; collections off the loop 1 ms in all); GIL-hold
   bound 212 against 27 ms. At load 3-7 main's stalls were 200-340 ms, each a full collection of
   litellm's growing heap (think_nb/gc_pause.py says why and what was done). Later (load 1): the
   turn's longest stall was the first reply's cost, which loads tiktoken's cl100k_base on the loop
   or waits there for the warm-model thread loading it (loop CPU 36-52 ms, 150-170 ms wall); it is
   now imported with litellm (`FIRST_CALL_MODULES`).
2. **Kernel cells.** In a real ipykernel (tests/kernel/harness.py drives it over ZMQ): `%load_ext`,
   a class, then two `%%think` cells back to back and a trivial cell: how long each takes to
   return. Before issue 18 the second waited for the import (the loop was blocked).
3. **First token in instructions, side by side** (valgrind's cachegrind: deterministic, where the wall
   time on a shared machine is not): a fresh process, from start to the first token of a text turn,
   for think_nb, pydantic-ai and agno: `python -c "import first_token_worker as w; w.main()" FRAMEWORK
   FOLDER` (bench/first_token_worker.py: the same scripted reply, no tool of the user's on any side;
   think_nb offers its workspace tools as by default). The worker is a module, imported with its
   bytecode cached, that imports asyncio and the framework and nothing of a harness (no argparse, json,
   statistics; no script compiled as `__main__` on every run), and ends the process with `os._exit` at
   the first text delta: the figure is the framework's work to its first token (asyncio and its ssl
   included: any async agent pays them; the `asyncio` column is that floor alone: the loop started
   and a token at once, no framework), less the floor `python -c "import os; os._exit(0)"` (the bare
   interpreter's start, ended the same way). Before, the worker was `bench_peers.py --worker FRAMEWORK
   first` run as a script to the end of the process, less `python -c pass`: ~262 M of think_nb's 541 M
   was that harness, paid by every side alike, so figures from before are not comparable with these.
   Then `import think_nb` and `from think_nb import Think, tool` the same way (less `python -c pass`),
   and their wall time (median of fresh processes). The "bytecode" row runs with bytecode (think_nb's
   sources compiled first, as `--compile-bytecode` does). The "no bytecode" row (issue 29 asks for
   first token with and without bytecode) runs the same workers as the first process after a `uv pip
   install` without `--compile-bytecode`: `PYTHONPYCACHEPREFIX` points at a fresh tree, so no
   `__pycache__` is read anywhere, and the tree holds only the stdlib's `.pyc` (copied from the
   interpreter's install, which an install of packages leaves alone) and the worker's (harness);
   `PYTHONDONTWRITEBYTECODE=1` so no process leaves bytecode for the next. think_nb and every
   site-packages module a worker imports is compiled from source; the frozen stdlib modules (os, site,
   io, codecs, abc, ...) come from the interpreter either way. Its floor is `EXIT_FLOOR` run the same
   way (site's `.pth` files then compile `_distutils_hack` and the editable finder from source too).
   Both rows print ratios think_nb/agno and think_nb/pydantic-ai, then the wall seconds from spawn to
   exit of each worker (median of 3 fresh processes, each no-bytecode one with a fresh prefix).
   Bytecode row measured on main 986c637 (2 cores, load 8-18):
   asyncio 185-196 M, think_nb 464-500 M, agno 1,888-1,946 M, pydantic-ai 3,790-3,864 M; think_nb at
   52ed265 (main when issue 29 was filed) 1,375-1,413 M, at 444a0ef (this measure added) 718-744 M.
   On main 88e654c (load 7-11): bytecode think_nb 500 M, agno 2,037 M, pydantic-ai 3,945 M; no
   bytecode think_nb 1,295 M, agno 5,553 M, pydantic-ai 12,899 M (asyncio 203 M both: the stdlib
   keeps its bytecode); wall to exit 0.12 / 0.37 / 0.81 s with, 0.24 / 0.86 / 2.01 s without.
   Counts move by a few % with the machine's load (how often a loop polls while a thread works, and
   under valgrind a thread's work is slow): compare figures of one run, or ranges.
4. **CPU-bound cell slowdown.** A pure-Python loop (fixed work) is timed before the import starts,
   repeatedly while the import thread runs, and after it: what a cell computing something pays
   while litellm imports beside it (both threads share the GIL).

    python bench/bench_first_turn.py [--runs 3] [--quick] [--think-nb PATH]
    (--quick counts think_nb's side only, with bytecode only: the peers' runs and the no-bytecode row
    under valgrind take minutes; it prints no wall-seconds table)

`--think-nb PATH` runs the children against another checkout (e.g. the commit before the change).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cachegrind

ROOT = Path(__file__).resolve().parent.parent

STALL_CHILD = r'''
import asyncio, json, os, tempfile, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from think_nb import ModelConfig, Think
from think_nb.testing import ScriptedModel as S

async def main():
    script = S([[S.text("Hello there, this is the first turn.")], [S.text("And the second one.")]])
    class Bench(Think):  # a hosted model's path: the script through litellm
        default_model = ModelConfig(script.model, via_litellm=True)
    agent = Bench("bench", db=os.path.join(tempfile.mkdtemp(), "bench.sqlite"))
    loop = asyncio.get_running_loop()
    ticks = []  # (when the monitor's sleep started, how late it woke)
    running = True
    async def monitor():
        while running:
            t = loop.time()
            await asyncio.sleep(0.005)
            ticks.append((t, loop.time() - t - 0.005))
    task = loop.create_task(monitor())
    await asyncio.sleep(0)
    out = {}
    for turn in (1, 2):
        start = loop.time()
        t = time.perf_counter()
        result = await agent.send("hi")
        assert result.status == "completed", result.error
        out[f"turn{turn}_s"] = time.perf_counter() - t
        end = loop.time()
        while not ticks or ticks[-1][0] < end:  # the monitor has seen the whole turn (a stall may end it)
            await asyncio.sleep(0.005)
        out[f"turn{turn}_max_stall_s"] = max(late for started, late in ticks if start - 0.01 <= started <= end)
    running = False
    await task
    import think_nb
    out["think_nb"] = think_nb.__file__
    print(json.dumps(out))

asyncio.run(main())
'''

SERVER_CHILD = r'''
import asyncio, sys
from providers.server import FakeProvider, Reply

async def main():
    async with FakeProvider("openai") as server:
        server.replies += [Reply(text="Hello there, this is the first turn.") for _ in range(10)]
        print(server.api_base, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the bench closes stdin

asyncio.run(main())
'''
"""A provider-shaped HTTP server (litellm's `openai/` wire format) in its own process; prints its base URL."""

HOSTED_STALL_CHILD = r'''
import asyncio, gc, json, os, sys, tempfile, threading, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["THINK_NB_ALLOW_MODEL_REQUESTS"] = "1"  # the one request goes to SERVER_CHILD on 127.0.0.1
from think_nb import ModelConfig, Think

collections = []  # (thread, start, seconds) of every collection off the loop thread
started = {}
def on_gc(phase, info):
    me = threading.get_ident()
    if phase == "start":
        started[me] = time.perf_counter()
    elif me in started:
        begun = started.pop(me)
        collections.append((threading.current_thread().name, begun, time.perf_counter() - begun))
gc.callbacks.append(on_gc)

async def main():
    class Bench(Think):  # a hosted model: litellm's openai provider over HTTP
        default_model = ModelConfig("openai/gpt-fake", {"api_base": sys.argv[1], "api_key": "sk-test-key"})
    loop = asyncio.get_running_loop()
    me = threading.get_ident()
    def cpu_times():  # {thread id: its CPU seconds} of every Python thread
        out = {}
        for thread in threading.enumerate():
            try:
                out[thread.ident] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except (OSError, TypeError):  # ended, or not started yet
                pass
        return out
    beats = []  # (wall, {thread: CPU}) at each beat
    running = True
    def beat():
        beats.append((time.perf_counter(), cpu_times()))
        if running:
            loop.call_later(0.001, beat)
    beat()
    await asyncio.sleep(0.02)
    begin = time.perf_counter()
    created_cpu = time.thread_time()
    agent = Bench("bench", db=os.path.join(tempfile.mkdtemp(), "bench.sqlite"))  # the cell's own call
    created, created_cpu = time.perf_counter(), time.thread_time() - created_cpu
    result = await agent.send("hi")
    end = time.perf_counter()
    assert result.status == "completed", result.error
    await asyncio.sleep(0.01)
    running = False
    gaps = []  # (wall, the loop's CPU, the other threads' CPU) between two beats of the turn
    for (w0, c0), (w1, c1) in zip(beats, beats[1:]):
        if created <= w1 and w0 <= end and not w0 < created < w1:  # the gap holding the creation is its own
            others = sum(c1[t] - c0.get(t, 0.0) for t in c1 if t != me)  # a thread new in the gap: all its CPU
            gaps.append((w1 - w0, c1[me] - c0[me], others))
    wall, cpu, others = max(gaps)
    held = [seconds for name, at, seconds in collections
            if name != threading.main_thread().name and begin <= at <= end]
    print(json.dumps({"turn_s": end - created, "stall_s": wall, "stall_cpu_s": cpu, "stall_others_s": others,
                      "loop_cpu_s": max(g[1] for g in gaps), "others_cpu_s": max(g[2] for g in gaps if g[1] < 0.002),
                      "gc_off_loop_s": max(held, default=0.0), "gc_off_loop_total_s": sum(held),
                      "create_s": created - begin, "create_cpu_s": created_cpu}))

asyncio.run(main())
'''
"""The first turn of an agent on a hosted model in a fresh process; argv: the server's base URL."""

CPU_CHILD = r'''
import json, os, statistics, threading, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from think_nb.models.litellm_env import get_litellm

def work():
    t = time.perf_counter()
    total = 0
    for i in range(400_000):
        total += i * i % 7
    return time.perf_counter() - t

before = min(work() for _ in range(3))
done = threading.Event()
started = time.perf_counter()
def importer():
    get_litellm()
    done.set()
threading.Thread(target=importer, daemon=True).start()
during = []
while not done.is_set():
    d = work()
    if not done.is_set():
        during.append(d)
import_s = time.perf_counter() - started
after = min(work() for _ in range(3))
print(json.dumps({"before_s": before, "during_s": statistics.median(during) if during else None,
                  "after_s": after, "import_s": import_s, "samples": len(during)}))
'''


def kernel_cells(think_nb: Path) -> dict:
    """Seconds each cell takes to return in a fresh kernel (see the module docstring)."""
    sys.path[:0] = [str(ROOT / "tests" / "kernel"), str(ROOT / "tests")]
    from harness import start_frontend, stop_frontend

    fe = start_frontend(Path(tempfile.mkdtemp()), PYTHONPATH=str(think_nb.resolve()))
    try:
        fe.execute("%load_ext think_nb").check()
        fe.execute("from think_nb import ModelConfig, Think\nfrom think_nb.testing import ScriptedModel as S\n"
                   "script = S([[S.text('One.')], [S.text('Two.')]])\n"
                   "class Helper(Think):  # a hosted model's path: the script through litellm\n"
                   "    default_model = ModelConfig(script.model, via_litellm=True)").check()
        out = {}
        for name, code in [("think1", "%%think Helper\nHello"), ("think2", "%%think Helper\nAgain"),
                           ("trivial", "1 + 1")]:
            started = time.perf_counter()
            fe.execute(code, timeout=600).check()
            out[name] = time.perf_counter() - started
        return out
    finally:
        stop_frontend(fe)


def hosted_stall(think_nb: Path) -> dict:
    """One `HOSTED_STALL_CHILD` run against a fresh `SERVER_CHILD` (see the module docstring)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
    server = subprocess.Popen([sys.executable, "-c", SERVER_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=env, cwd=tempfile.gettempdir())
    try:
        assert server.stdout is not None
        api_base = server.stdout.readline().strip()
        if not api_base:
            raise SystemExit("the provider server did not start")
        return child(HOSTED_STALL_CHILD, think_nb, [api_base])
    finally:
        server.kill()
        server.wait()


def child(code: str, think_nb: Path, argv: list[str] | None = None) -> dict:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(think_nb.resolve())}
    done = subprocess.run([sys.executable, "-c", code, *(argv or [])], capture_output=True, text=True, env=env,
                          timeout=600, check=False, cwd=tempfile.gettempdir())  # not the repo: `-c` puts the cwd first
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def instructions(argv: list[str], think_nb: Path, extra_env: dict[str, str] | None = None) -> int:
    """CPU instructions one fresh process runs (valgrind's cachegrind), with `think_nb` importable;
    `extra_env`: e.g. `no_bytecode_env(...)`."""
    env = {"PYTHONPATH": os.pathsep.join([str(think_nb.resolve()), str(WORKER.parent)]), **(extra_env or {})}
    return cachegrind.instructions(argv, str(argv), env, cwd=tempfile.gettempdir())


IMPORTS = {"import think_nb": "import think_nb", "from think_nb import Think, tool": "from think_nb import Think, tool"}
PEERS = ("think_nb", "pydantic_ai", "agno")
WORKER = ROOT / "bench" / "first_token_worker.py"
FIRST_TOKEN = "import first_token_worker as w; w.main()"
"""A fresh process to its first token: imports the worker (bytecode cached), which imports asyncio and one
framework (see bench/first_token_worker.py); argv: FRAMEWORK FOLDER."""
EXIT_FLOOR = "import os; os._exit(0)"
"""The first-token worker's floor: the bare interpreter's start, ended as the worker ends (no shutdown)."""


def no_bytecode_env(prefix: Path) -> dict[str, str]:
    """The environment of a process that finds no cached bytecode for think_nb, its dependencies
    (site-packages) or the worker's `-c` code, and writes none: as the first process after a `uv pip
    install` without `--compile-bytecode`. `PYTHONPYCACHEPREFIX` makes Python look for every `.pyc`
    under `prefix` only (no `__pycache__` is read, the stdlib's included); `prefix` holds the stdlib's
    and the worker's bytecode (`seed_stdlib_bytecode`), which an install leaves in place, and nothing
    else. `PYTHONDONTWRITEBYTECODE`: no process leaves bytecode for the next."""
    return {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}


def seed_stdlib_bytecode() -> Path:
    """A fresh `PYTHONPYCACHEPREFIX` tree holding the stdlib's bytecode (as the interpreter's install
    ships it) and the worker's (harness, not framework), each where Python looks under a prefix:
    PREFIX/<the source's directory>/<name>.cpython-311.pyc. The frozen modules (os, site, io, codecs,
    abc, ...: `_imp._frozen_module_names()`) are in the interpreter and need no `.pyc` either way."""
    prefix = Path(tempfile.mkdtemp(prefix="pycache-prefix-"))
    tag = sys.implementation.cache_tag
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    caches = [c for c in stdlib.rglob("__pycache__") if "site-packages" not in c.parts]
    compileall.compile_file(str(WORKER), quiet=1)
    for cache in [*caches, WORKER.parent / "__pycache__"]:
        pycs = list(cache.glob(f"*.{tag}.pyc"))
        if cache.parent == WORKER.parent:
            pycs = [f for f in pycs if f.name.startswith(WORKER.stem + ".")]
        if not pycs:
            continue
        target = prefix / str(cache.parent.resolve()).lstrip(os.sep)
        target.mkdir(parents=True, exist_ok=True)
        for pyc in pycs:
            shutil.copy2(pyc, target / pyc.name)
    return prefix


def counted_start(think_nb: Path, frameworks: tuple[str, ...], no_bytecode: bool = False) -> dict[str, int]:
    """Instructions above the bare interpreter: each framework's first token (less `EXIT_FLOOR`), and
    think_nb's imports (less `python -c pass`); with `no_bytecode`, also each first token with no
    bytecode but the stdlib's (`no_bytecode_env`), as `nobc:FRAMEWORK`, less `EXIT_FLOOR` run the same way."""
    compileall.compile_dir(str(think_nb / "think_nb"), quiet=1)  # with bytecode, as an installed package
    compileall.compile_file(str(WORKER), quiet=1)  # the worker is imported, as a library is: its bytecode cached
    plain = {"bare": ["-c", "pass"], "bare_exit": ["-c", EXIT_FLOOR],
             **{name: ["-c", code] for name, code in IMPORTS.items()},
             **{f: ["-c", FIRST_TOKEN, f, tempfile.mkdtemp(prefix=f"first-{f}-")] for f in ("asyncio", *frameworks)}}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {name: (argv, {}) for name, argv in plain.items()}
    if no_bytecode:
        env = no_bytecode_env(seed_stdlib_bytecode())
        cases["nobc:bare_exit"] = (["-c", EXIT_FLOOR], env)
        for f in ("asyncio", *frameworks):
            cases[f"nobc:{f}"] = (["-c", FIRST_TOKEN, f, tempfile.mkdtemp(prefix=f"first-nobc-{f}-")], env)
    # single-threaded processes whose counts do not depend on the load: they run side by side
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        runs = {name: pool.submit(instructions, argv, think_nb, env) for name, (argv, env) in cases.items()}
        counts = {name: run.result() for name, run in runs.items()}

    def floor(name: str) -> str:
        if name.startswith("nobc:"):
            return "nobc:bare_exit"
        return "bare_exit" if name in ("asyncio", *frameworks) else "bare"

    return {name: n - counts[floor(name)] for name, n in counts.items() if "bare" not in name}


def first_token_seconds(framework: str, think_nb: Path, runs: int, no_bytecode: bool) -> list[float]:
    """Wall seconds of fresh first-token worker processes, from spawn to exit (the interpreter's start
    included: a user waits for it too); `no_bytecode`: each with a fresh `no_bytecode_env`."""
    out = []
    for _ in range(runs):
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "PYTHONPATH": os.pathsep.join([str(think_nb.resolve()), str(WORKER.parent)]),
               **(no_bytecode_env(seed_stdlib_bytecode()) if no_bytecode else {})}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", FIRST_TOKEN, framework, tempfile.mkdtemp(prefix="first-wall-")],
                       env=env, timeout=600, check=True, cwd=tempfile.gettempdir(), capture_output=True)
        out.append(time.perf_counter() - started)
    return out


def import_seconds(code: str, think_nb: Path, runs: int) -> list[float]:
    """Wall seconds of `code` in fresh processes (the interpreter's own start excluded)."""
    timed = f"import time\nt = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
    return [child_float(timed, think_nb) for _ in range(runs)]


def child_float(code: str, think_nb: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(think_nb.resolve())}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=True, cwd=tempfile.gettempdir())
    return float(done.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.3f} s (min {min(values):.3f}, max {max(values):.3f})"


def ms_spread(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms (min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one run of each: checks the benchmark runs (CI)")
    parser.add_argument("--think-nb", type=Path, default=ROOT, help="the checkout whose think_nb the children import")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    stalls = [child(STALL_CHILD, args.think_nb) for _ in range(runs)]
    hosted = [hosted_stall(args.think_nb) for _ in range(runs)]
    kernels = [kernel_cells(args.think_nb) for _ in range(runs)]
    cpus = [child(CPU_CHILD, args.think_nb) for _ in range(runs)]
    print(f"think_nb from        {stalls[0]['think_nb']}")
    print(f"runs                 {runs} (fresh processes, load average {os.getloadavg()[0]:.2f})")
    print(f"turn 1 duration      {spread([s['turn1_s'] for s in stalls])}")
    print(f"turn 1 max loop stall {spread([s['turn1_max_stall_s'] for s in stalls])}")
    print(f"turn 2 max loop stall {spread([s['turn2_max_stall_s'] for s in stalls])}")
    print(f"first hosted turn (litellm openai/ over HTTP, budget 50 ms per stall, load average "
          f"{os.getloadavg()[0]:.2f}):")
    print(f"  longest loop stall   {ms_spread([h['stall_s'] for h in hosted])} wall; in it the loop's CPU "
          f"{ms_spread([h['stall_cpu_s'] for h in hosted])},")
    print(f"                       other threads' CPU {ms_spread([h['stall_others_s'] for h in hosted])}, the rest "
          f"waiting for a core (the machine's load)")
    print(f"  longest GIL wait     {ms_spread([h['others_cpu_s'] for h in hosted])} of other threads' CPU in one gap "
          f"where the loop ran < 2 ms (a bound on one GIL hold)")
    print(f"  loop's longest CPU   {ms_spread([h['loop_cpu_s'] for h in hosted])} in one gap between 1 ms beats")
    print(f"  longest collection off the loop {ms_spread([h['gc_off_loop_s'] for h in hosted])} (holds the GIL: "
          f"the loop waits), {ms_spread([h['gc_off_loop_total_s'] for h in hosted])} in all")
    print(f"  turn duration        {spread([h['turn_s'] for h in hosted])}")
    print(f"  before it, the agent's creation (the cell's own synchronous call, a new file migrated; litellm's "
          f"import thread starts): {ms_spread([h['create_s'] for h in hosted])} wall, "
          f"{ms_spread([h['create_cpu_s'] for h in hosted])} of the loop thread's CPU")
    print(f"kernel: 1st %%think  {spread([k['think1'] for k in kernels])} to return")
    print(f"kernel: 2nd %%think  {spread([k['think2'] for k in kernels])} to return (right after the 1st)")
    print(f"kernel: then 1 + 1   {spread([k['trivial'] for k in kernels])} to return")
    with_samples = [c for c in cpus if c["during_s"]]
    print(f"litellm import       {spread([c['import_s'] for c in cpus])} (on its thread, beside the CPU loop)")
    print(f"cpu loop alone       {spread([c['before_s'] for c in cpus])}")
    if with_samples:
        print(f"cpu loop during import {spread([c['during_s'] for c in with_samples])}")
        ratios = [c["during_s"] / c["before_s"] for c in with_samples]
        print(f"cpu slowdown         {statistics.median(ratios):7.2f}x while litellm imports")
    print(f"cpu loop after       {spread([c['after_s'] for c in cpus])}")
    frameworks = ("think_nb",) if args.quick else PEERS
    counts = counted_start(args.think_nb, frameworks, no_bytecode=not args.quick)
    print("\nfirst token in a fresh process, M instructions above the bare interpreter (valgrind; "
          "bench/first_token_worker.py)" + (" (--quick: think_nb only, with bytecode only)" if args.quick else ""))
    columns = ("asyncio", *frameworks)
    peers = [p for p in ("agno", "pydantic_ai") if p in frameworks]
    print(f"  {'':14}" + "  ".join(f"{f:>12}" for f in columns) + "".join(f"  {'think_nb/' + p:>20}" for p in peers))
    rows = [("bytecode", "")] + ([] if args.quick else [("no bytecode", "nobc:")])
    for label, key in rows:
        print(f"  {label:14}" + "  ".join(f"{counts[key + f] / 1e6:>12,.0f}" for f in columns)
              + "".join(f"  {counts[key + 'think_nb'] / counts[key + p]:>19.2f}x" for p in peers))
    if not args.quick:
        print("  (no bytecode: PYTHONPYCACHEPREFIX=a fresh tree holding only the stdlib's and the worker's .pyc, "
              "PYTHONDONTWRITEBYTECODE=1;\n   less `python -c \"import os; os._exit(0)\"` run the same way)")
        print(f"\nfirst token, wall seconds from spawn to exit, median of 3 fresh processes "
              f"(load average {os.getloadavg()[0]:.2f})")
        print(f"  {'':14}" + "  ".join(f"{f:>12}" for f in frameworks)
              + "".join(f"  {'think_nb/' + p:>20}" for p in peers))
        for label, no_bc in (("bytecode", False), ("no bytecode", True)):
            walls = {f: statistics.median(first_token_seconds(f, args.think_nb, 3, no_bc)) for f in frameworks}
            print(f"  {label:14}" + "  ".join(f"{walls[f]:>10.2f} s" for f in frameworks)
                  + "".join(f"  {walls['think_nb'] / walls[p]:>19.2f}x" for p in peers))
    for name, code in IMPORTS.items():
        wall = import_seconds(code, args.think_nb, 3 if args.quick else 7)
        print(f"{name:34} {counts[name] / 1e6:>8,.1f} M instructions, {spread(wall)} wall "
              f"(load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
