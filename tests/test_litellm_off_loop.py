"""litellm's import and a hosted model's first turn leave the event loop free (issue 29 §6).

litellm is imported on a daemon thread (`think_nb.models.litellm_env.preload`), but the GIL is
shared: a garbage collection set off by the import's allocations holds it for the whole
collection (a full one walks the whole heap: 40-440 ms each, 6-7 of them per import), and the
modules litellm imports lazily on its first `acompletion` were imported by the loop thread itself.
These checks count collections and imports per thread in a fresh interpreter (litellm is imported
once per process); `bench/bench_first_turn.py` measures the stalls themselves.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from think_nb import gc_pause

TESTS = Path(__file__).resolve().parent

RECORDER = '''
import gc, json, sys, threading
collections = []  # (thread name, generation) of every collection
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(
    (threading.current_thread().name, info["generation"])))
imports = []  # (thread name, module) of every module imported from here on
class Recorder:
    def find_spec(self, name, path=None, target=None):
        imports.append((threading.current_thread().name, name))
        return None
'''


def fresh(code: str) -> dict:
    """Run `RECORDER` then `code` in a fresh interpreter; `code` ends by printing one JSON line."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "THINK_NB_ALLOW_MODEL_REQUESTS": "1",
           "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    done = subprocess.run([sys.executable, "-c", RECORDER + textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_litellm_imports_with_the_collector_paused_and_leaves_its_objects_frozen() -> None:
    out = fresh('''
        from think_nb.models.litellm_env import preload
        preload().result()
        print(json.dumps({"on_import_thread": [c for c in collections if c == ("think-nb-import-litellm", 2)],
                          "enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                          "objects": len(gc.get_objects()),
                          "encoding": "litellm.litellm_core_utils.default_encoding" in sys.modules}))
    ''')
    assert out["on_import_thread"] == []  # no full collection; before: 6-7, of the growing heap
    # the first reply's cost reads tiktoken's cl100k_base: loaded here, not on the loop at the first call
    # (~120 ms of CPU, 51 ms of it one GIL hold; the loop stalled 150-170 ms there)
    assert out["encoding"] is True
    assert out["enabled"] is True
    assert out["frozen"] > 10 * out["objects"]  # litellm's objects: out of every later collection


def test_a_first_hosted_turn_imports_nothing_on_the_loop_thread() -> None:
    out = fresh('''
        import asyncio, tempfile
        from providers.server import FakeProvider, Reply
        from think_nb import Think

        async def main():
            async with FakeProvider("openai") as server:
                server.replies.append(Reply(text="Hello."))
                class Hosted(Think):
                    default_model = server.model_config()
                agent = Hosted("hosted", db=tempfile.mkdtemp() + "/a.sqlite")
                from think_nb.models.litellm_env import preload
                await asyncio.wrap_future(preload())  # the import thread is done: what follows is the turn's
                await asyncio.to_thread(lambda: None)  # the executor's thread exists (it imports nothing)
                sys.meta_path.insert(0, Recorder())
                result = await agent.send("hi")
                sys.meta_path.remove(sys.meta_path[0])
                return result.status, server.completed

        status, completed = asyncio.run(main())
        ours = ("litellm", "anyio", "openai", "httpx", "aiohttp", "tiktoken")
        print(json.dumps({"status": status, "completed": completed,
                          "on_loop": [m for t, m in imports if t == "MainThread" and m.split(".")[0] in ours],
                          "on_executor": [m for t, m in imports if t.startswith("asyncio_") and "proxy" in m]}))
    ''')
    assert (out["status"], out["completed"]) == ("completed", 1)
    assert out["on_loop"] == []  # before: 19-30 of litellm's and anyio's modules, ~20-45 ms of the loop's CPU
    assert out["on_executor"] == []  # before: litellm.proxy._types and ~30 more, a 200-440 ms collection


def test_a_pause_nests_and_restores_the_collector_as_it_found_it() -> None:
    assert gc.isenabled()
    with gc_pause.paused():
        with gc_pause.paused():
            assert not gc.isenabled() and gc_pause.active()
        assert not gc.isenabled()
    assert gc.isenabled() and not gc_pause.active()
    gc.disable()
    try:
        with gc_pause.paused():
            pass
        assert not gc.isenabled()  # turned off by someone else: left off
    finally:
        gc.enable()
