"""The one place litellm is imported: lazily, offline-safe, with think_nb's providers registered.

`import litellm` takes 4-6 s here and, without `LITELLM_LOCAL_MODEL_COST_MAP=True`, fetches its
cost map from the network and later prints warnings into notebook cells (docs/platform-facts.md §6), so
it is never imported at `%load_ext` time.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from types import ModuleType
from typing import Any

_lock = threading.Lock()
_providers: dict[str, Any] = {}


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


_preload: threading.Thread | None = None


def preload() -> None:
    """Start importing litellm on a daemon thread (once), so the first turn does not wait 4-9 s for it.
    Called when an agent is created, never at `%load_ext`; a turn that starts earlier simply waits
    for the import to finish (Python's import lock)."""
    global _preload
    if _preload is None and "litellm" not in sys.modules:
        _preload = threading.Thread(target=get_litellm, name="think-nb-import-litellm", daemon=True)
        _preload.start()


def register_provider(name: str, factory: Any) -> None:
    """Register a litellm custom provider: `factory()` returns a `litellm.CustomLLM`, built on first use."""
    _providers.setdefault(name, factory)


def _install_providers(litellm: ModuleType) -> None:
    installed = {entry["provider"] for entry in litellm.custom_provider_map}
    for name, factory in _providers.items():
        if name not in installed:
            litellm.custom_provider_map.append({"provider": name, "custom_handler": factory()})
