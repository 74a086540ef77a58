"""The direct implementation of the model seam: models that run inside the kernel.

The embedded model (`think-local/*`, `think_nb.models.local`) and scripted models
(`think-scripted/*`, `think_nb.testing.ScriptedModel`) are async generators of litellm
`GenericStreamingChunk` dicts, or of lists of them (the chunks a model had ready together: a
scripted model's chunks up to its next wait). Called here directly, a turn on them never imports
litellm and never pays its stream wrapper. The client hands the chunks on in lists too (at most
`BATCH` a list, a text-only chunk as its text), so a fast model costs one step of each generator per
list, not per chunk. Usage is what the model reported; when it reports none the step's usage is
unknown (no estimate: litellm's tokenizer is what estimates).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from think_nb.models.client import Delta, from_generic
from think_nb.models.resolve import LOCAL_PROVIDER, SCRIPTED_PROVIDER, ModelConfig

YIELD_EVERY = 0.005
"""Seconds an in-process model may stream before the kernel's event loop gets a turn. A scripted
model never awaits between chunks, so without this a long script would hold the loop for the whole
reply (Stop, panel clicks and status updates would wait): the loop runs after the first chunk and
then at least every 5 ms (the clock is read once per list of chunks)."""
BATCH = 64
"""At most this many chunks in a list the client yields (a model's longer list is cut)."""

Generate = Callable[[str, list, dict], AsyncIterator[dict | list[dict]]]
"""`generate(model, messages, optional_params) -> async iterator of GenericStreamingChunk dicts`
(or lists of them, in order);
`optional_params` holds what litellm would hand a custom provider (`tools`, `tool_choice`,
`max_tokens`, `temperature`, ...)."""


def _generator(provider: str) -> Generate:
    if provider == LOCAL_PROVIDER:
        from think_nb.models.local import generate_for

        return generate_for
    if provider == SCRIPTED_PROVIDER:
        from think_nb.testing import play_batches

        return play_batches
    raise ValueError(f"{provider!r} is not an in-process provider")


class InProcessClient:
    """`ModelClient` for in-process models: errors the model raises propagate unchanged (no retry)."""

    async def stream(self, config: ModelConfig, messages: list[dict], tools: list[dict],
                     options: dict[str, Any]) -> AsyncIterator[list[Delta | str]]:
        params = {**config.options, **options}
        if tools:
            params["tools"] = tools
        else:
            params.pop("tool_choice", None)
        chunks = _generator(config.provider)(config.model, messages, params)
        yielded_at = None
        try:
            async for item in chunks:
                items: list[dict] = item if isinstance(item, list) else [item]
                for start in range(0, len(items), BATCH):
                    yield [from_generic(chunk) for chunk in items[start:start + BATCH]]
                    now = time.monotonic()
                    if yielded_at is None or now - yielded_at >= YIELD_EVERY:
                        await asyncio.sleep(0)  # the loop's other work (Stop, panel frames) runs between lists
                        yielded_at = time.monotonic()
        finally:  # an abort closes the model's generator now (the embedded model's thread stops)
            await chunks.aclose()  # type: ignore[attr-defined]
