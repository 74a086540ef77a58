"""Token counts for context blocks, prompts and histories, from litellm's counter.

`litellm.token_counter(model=..., text=...)` picks the tokenizer of the model in use (tiktoken
for OpenAI models, Anthropic's and others' bundled tokenizers, cl100k_base as its fallback). The
in-process models (`think-local/*`, `think-scripted/*`) have no litellm tokenizer, so they are
counted with `DEFAULT_TOKENIZER_MODEL`, whose encoding ships inside the litellm wheel
(`litellm_core_utils/tokenizers`, found through `TIKTOKEN_CACHE_DIR`) and read with tiktoken
directly: counting for them never imports litellm, and never needs the network. For hosted models
litellm is imported lazily (first count), through `think_nb.models.litellm_env`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import math
import os
import threading
from pathlib import Path
from typing import Any

from think_nb.models.resolve import IN_PROCESS_PROVIDERS

DEFAULT_TOKENIZER_MODEL = "gpt-3.5-turbo"
"""Counted with cl100k_base, bundled with litellm (works offline)."""


def tokenizer_model(model: str | None) -> str:
    """The model name handed to litellm's counter for `model` (a litellm model string or None)."""
    if not model or model.split("/", 1)[0] in IN_PROCESS_PROVIDERS:
        return DEFAULT_TOKENIZER_MODEL
    return model


@functools.lru_cache(maxsize=4096)
def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens in `text` for `model` (litellm's counter). Empty text is 0 tokens.

    In-process models (and `model=None`) are counted with cl100k_base through tiktoken directly,
    the encoding litellm's counter would use for them, so counting for them never imports litellm.
    Falls back to `DEFAULT_TOKENIZER_MODEL` when litellm cannot count for `model`, and to the
    heuristic `estimate_tokens` only when the tokenizer itself fails.
    """
    if not text:
        return 0
    if tokenizer_model(model) == DEFAULT_TOKENIZER_MODEL:
        try:
            return len(bundled_encoding().encode(text, disallowed_special=()))
        except Exception:  # noqa: BLE001 - no tokenizer file: the heuristic
            return estimate_tokens(text)
    from think_nb.models.litellm_env import get_litellm

    litellm = get_litellm()
    try:
        return int(litellm.token_counter(model=model, text=text))
    except Exception:  # noqa: BLE001 - unknown model or tokenizer: count with the bundled default
        try:
            return len(bundled_encoding().encode(text, disallowed_special=()))
        except Exception:  # noqa: BLE001
            return estimate_tokens(text)


_LOADING = threading.Lock()


def bundled_encoding() -> Any:
    """tiktoken's cl100k_base, read from the copy bundled in the litellm wheel (offline; litellm
    itself is not imported: its package directory is found with `importlib.util.find_spec`).
    Loaded once (~0.15 s of CPU): a caller that comes while another thread loads it waits for that
    load instead of making a second one."""
    with _LOADING:
        return _load_bundled_encoding()


@functools.lru_cache(maxsize=1)
def _load_bundled_encoding() -> Any:
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.submodule_search_locations:
        bundled = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bundled))  # what litellm sets on import
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


_WARM: set[str] = set()  # tokenizer models whose litellm tokenizer is loaded


def is_ready(model: str | None) -> bool:
    """True when `count_tokens(..., model)` loads nothing (its tokenizer is in memory)."""
    if tokenizer_model(model) == DEFAULT_TOKENIZER_MODEL:
        return _load_bundled_encoding.cache_info().currsize > 0
    return tokenizer_model(model) in _WARM


async def aready(model: str | None) -> None:
    """Make `count_tokens(..., model)` ready without blocking the event loop: for a hosted model
    await litellm's import thread (`aget_litellm`) and load its tokenizer for `model` on a thread
    (litellm builds it on the first count: ~0.3 s of CPU), else load the bundled encoding on a thread."""
    if tokenizer_model(model) == DEFAULT_TOKENIZER_MODEL:
        if _load_bundled_encoding.cache_info().currsize == 0:
            await asyncio.to_thread(bundled_encoding)
        return
    from think_nb.models.litellm_env import aget_litellm

    litellm = await aget_litellm()
    name = tokenizer_model(model)
    if name not in _WARM:
        def warm() -> None:
            with contextlib.suppress(Exception):  # a model litellm cannot count for: the fallback is bundled
                litellm.token_counter(model=model, text="warm")
            bundled_encoding()
        await asyncio.to_thread(warm)
        _WARM.add(name)


def estimate_tokens(text: str) -> int:
    """Think's heuristic (`utils/tokens.ts`): max(chars / 4, words × 1.3), rounded up."""
    return math.ceil(max(len(text) / 4, len(text.split()) * 1.3)) if text else 0
