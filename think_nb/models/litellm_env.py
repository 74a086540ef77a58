"""The one place litellm is imported: lazily, offline-safe, with think_nb's providers registered.

`import litellm` takes 4-7 s of CPU here and, without `LITELLM_LOCAL_MODEL_COST_MAP=True`, fetches
its cost map from the network and later prints warnings into notebook cells (docs/platform-facts.md
§6); the variable is set before every import. The import never runs on the kernel's event loop:
`preload()` starts it on a daemon thread as soon as intent is known (`%load_ext think_nb`, an agent's
creation) and a turn awaits it with `aget_litellm()`, which reports "loading litellm…" to the turn
(`think_nb.models.progress`) while it waits. While the thread imports, Python code on other threads
(a CPU-bound cell) shares the GIL with it and runs slower for those seconds (bench/bench_first_turn.py).
The GIL is also why the import runs with the garbage collector paused and its objects frozen
after (`think_nb.gc_pause`): its collections held the GIL, and so the loop, 40-440 ms at a time.
It also imports what litellm's first call would import lazily on the loop (`warm_first_call`).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import importlib
import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any

from think_nb.models.providers import register_provider, registered  # noqa: F401 - register_provider re-exported

_lock = threading.Lock()


def get_litellm() -> ModuleType:
    """Import litellm (once), offline-safe, with every registered custom provider installed.

    The first import runs with the garbage collector paused and its objects frozen after
    (`think_nb.gc_pause`), and also imports what a first `acompletion` would import lazily
    (`warm_first_call`): on a thread, neither then holds the event loop."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if "litellm" not in sys.modules:
        _first_import()
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


def _first_import() -> None:
    """The process's first import of litellm: with the collector paused, then frozen (`get_litellm`)."""
    from think_nb import gc_pause

    with gc_pause.paused(freeze=True):
        litellm = importlib.import_module("litellm")
        importlib.import_module("think_nb.models.local")  # its allocations too: it registers a provider
        warm_first_call(litellm)


FIRST_CALL_MODULES = (
    "litellm.llms.github_copilot.per_user_auth",  # acompletion's wrapper, on the loop
    "litellm.proxy.openai_files_endpoints.common_utils",  # completion(), on the executor: litellm.proxy._types
    "litellm._service_logger",  # a provider handler's first request, on the loop
    "litellm.proxy.spend_tracking.savings",  # the success handler after a stream, on the loop
    "litellm.types.litellm_core_utils.streaming_chunk_builder_utils",  # the stream's usage, on a worker
    "anyio._backends._asyncio",  # litellm's asyncify and the openai SDK's stream cleanup, on the loop
    # the first reply's cost (response metadata) reads tiktoken's cl100k_base, loaded on import:
    # ~120 ms of CPU, on the loop (or waiting there for the warm-model thread's import of it)
    "litellm.litellm_core_utils.default_encoding",
)
"""Modules litellm 1.110 imports lazily during its first `acompletion` of any provider (measured
over real HTTP: 19-30 of them on the kernel's loop, ~20-45 ms of its CPU, and ~30 on the executor
thread, whose first was `litellm.proxy._types`: pydantic models that set off a 200-440 ms full
collection there). A module that a later litellm renames is skipped: its import then happens on
first use again (bench/bench_first_turn.py prints the first hosted turn's longest stall)."""


def warm_first_call(litellm: ModuleType) -> None:
    """Import, on the calling thread, what litellm's first `acompletion` imports lazily whatever
    the provider (`FIRST_CALL_MODULES`, its logging callback manager, its table of provider
    configurations, a provider lookup), and build the SSL context its first HTTP client loads
    (certifi's bundle: ~20 ms of CPU in one call that keeps the GIL, cached by litellm); best
    effort: a failure leaves that work to first use."""
    for name in FIRST_CALL_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    steps = (lambda: litellm.logging_callback_manager, lambda: litellm.AmazonAI21Config,
             lambda: litellm.get_llm_provider("openai/gpt-4o"),
             lambda: litellm.utils.ProviderConfigManager.get_provider_chat_config(
                 model="gpt-4o", provider=litellm.LlmProviders.OPENAI),
             lambda: litellm.llms.custom_httpx.http_handler.get_ssl_configuration())  # its cached SSL context
    for step in steps:
        with contextlib.suppress(Exception):
            step()


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
        _warm_model(name)


_warmed: set[str] = set()


def _warm_model(model: str) -> None:
    """On a daemon thread, once per model name, once litellm is imported: resolve `model`'s
    provider (litellm imports some providers' configurations lazily on that first lookup, e.g.
    Anthropic's text-completion one) and load litellm's tokenizer for it. litellm counts tokens
    itself when a stream fails part-way (the usage of the partial reply) and loads the tokenizer
    then, on the event loop (tiktoken's cl100k_base: ~120 ms of CPU). Both are litellm's caches,
    process-wide; a cached lookup is 0.1 ms."""
    with _preload_lock:
        if model in _warmed:
            return
        _warmed.add(model)

    def load() -> None:
        with contextlib.suppress(BaseException):  # best effort: a failure only leaves the cost where it was
            litellm = preload().result()
            with contextlib.suppress(Exception):
                litellm.get_llm_provider(model)
            for name in {model, model.split("/", 1)[-1]}:  # litellm asks with and without the provider
                litellm.utils.select_tokenizer(name)

    threading.Thread(target=load, name="think-nb-warm-model", daemon=True).start()


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
