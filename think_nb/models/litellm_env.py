"""The one place litellm is imported: lazily, offline-safe, with think_nb's providers registered.

`import litellm` takes 4-7 s of CPU here and, without `LITELLM_LOCAL_MODEL_COST_MAP=True`, fetches
its cost map from the network and later prints warnings into notebook cells (docs/platform-facts.md
§6); the variable is set before every import. The import never runs on the kernel's event loop:
`preload()` starts it on a daemon thread as soon as intent is known (`%load_ext think_nb`, an agent's
creation) and a turn awaits it with `aget_litellm()`, which reports "loading litellm…" to the turn
(`think_nb.models.progress`) while it waits. While the thread imports, Python code on other threads
(a CPU-bound cell) shares the GIL with it and runs slower for those seconds (bench/bench_first_turn.py).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any

from think_nb.models.providers import register_provider, registered  # noqa: F401 - register_provider re-exported

_lock = threading.Lock()


def get_litellm() -> ModuleType:
    """Import litellm (once), offline-safe, with every registered custom provider installed."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    import think_nb.models.local  # noqa: F401 - registers the embedded model's provider

    with _lock:
        if not getattr(litellm, "_think_nb_ready", False):
            litellm.suppress_debug_info = True
            # think_nb reports every model failure itself (an `error` chunk naming the fix);
            # litellm's own tracebacks and "file a bug" links would land in notebook cells.
            logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
            litellm._think_nb_ready = True
        _install_providers(litellm)
    return litellm


_preload: concurrent.futures.Future[ModuleType] | None = None
_preload_lock = threading.Lock()


def ready() -> bool:
    """True when litellm is imported and set up (`get_litellm()` then returns at once)."""
    module = sys.modules.get("litellm")
    return module is not None and bool(getattr(module, "_think_nb_ready", False))


def preload() -> concurrent.futures.Future[ModuleType]:
    """Start importing litellm on a daemon thread (once per process) and return its future.

    Called at `%load_ext think_nb` and when an agent is created, so the import overlaps the user's
    typing. The future holds the module, or the import's exception (a failed import is retried by
    the next call)."""
    global _preload
    with _preload_lock:
        if _preload is None or (_preload.done() and _preload.exception() is not None):
            future: concurrent.futures.Future[ModuleType] = concurrent.futures.Future()
            future.set_running_or_notify_cancel()  # a cancelled waiter (Stop) never cancels the import
            _preload = future
            if ready():
                future.set_result(get_litellm())
            else:
                threading.Thread(target=_import_into, args=(future,), name="think-nb-import-litellm",
                                 daemon=True).start()
                atexit.register(_finish_import, future)
        return _preload


def preload_for(model: Any, *, embedded: bool = True) -> None:
    """Start what `model`'s first turn will wait for, on a daemon thread: `preload()` (litellm's
    import) when `model` (a `get_model()` result: a model string or a `ModelConfig`) needs litellm;
    with `embedded`, the embedded model's load (`think_nb.models.local.preload`) when it is the
    embedded model; nothing for scripted models or an unknown model (None)."""
    if model is None:
        return
    name = getattr(model, "model", model)
    if isinstance(name, str) and not getattr(model, "via_litellm", False):
        from think_nb.models.resolve import IN_PROCESS_PROVIDERS, LOCAL_PROVIDER

        provider = name.split("/", 1)[0]
        if provider == LOCAL_PROVIDER and embedded:
            from think_nb.models import local

            local.preload()
        if provider in IN_PROCESS_PROVIDERS:
            return
    preload()
    if isinstance(name, str):
        _warm_tokenizer(name)


_warmed: set[str] = set()


def _warm_tokenizer(model: str) -> None:
    """Load litellm's tokenizer for `model` on a daemon thread, once per model name. litellm counts
    tokens itself when a stream fails part-way (the usage of the partial reply) and loads the
    tokenizer then, on the event loop: Anthropic's is a HuggingFace tokenizer built from JSON in
    native code that holds the GIL for 120-230 ms. Loaded here, the pause (the GIL is held all the
    same) moves from a failing turn to the agent's creation, while litellm is still importing and
    no turn runs; the failure itself then costs the loop nothing (the cache is litellm's,
    process-wide; a cached lookup is 0.1 ms)."""
    with _preload_lock:
        if model in _warmed:
            return
        _warmed.add(model)

    def load() -> None:
        with contextlib.suppress(BaseException):  # best effort: a failure only leaves the cost where it was
            litellm = preload().result()
            for name in {model, model.split("/", 1)[-1]}:  # litellm asks with and without the provider
                litellm.utils.select_tokenizer(name)

    threading.Thread(target=load, name="think-nb-warm-tokenizer", daemon=True).start()


def _finish_import(future: concurrent.futures.Future[ModuleType]) -> None:
    """At interpreter exit, let an import in progress finish (at most 120 s): a daemon thread
    stopped while it holds the import lock hangs any import during shutdown (a warning printed by
    a garbage-collected task imports `warnings` machinery), so the process would never exit."""
    with contextlib.suppress(Exception):
        future.exception(timeout=120)


def _import_into(future: concurrent.futures.Future[ModuleType]) -> None:
    try:
        future.set_result(get_litellm())
    except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits the import
        future.set_exception(exc)


async def aget_litellm() -> ModuleType:
    """`get_litellm()` without blocking the event loop: the first call awaits the import thread
    (`preload()`), reporting "loading litellm…" to the current turn while it waits; later calls
    return at once. Raises what the import raised (e.g. `ImportError`)."""
    if ready():
        return get_litellm()  # imported: only the provider table is checked
    from think_nb.models import progress

    with progress.waiting(progress.LOADING_LITELLM):
        await asyncio.wrap_future(preload())
    return get_litellm()


def _install_providers(litellm: ModuleType) -> None:
    installed = {entry["provider"] for entry in litellm.custom_provider_map}
    for name, factory in registered().items():
        if name not in installed:
            litellm.custom_provider_map.append({"provider": name, "custom_handler": factory()})
