"""Running extension code in pydantic-monty, the sandbox of the `execute` tool.

Each operation (describe at load, one tool call, one hook) checks out a Monty worker from the
agent's pool, runs the extension's source, then one snippet, under limits: `timeout` seconds
(a loop that never ends is stopped there), `max_memory` bytes, 200 frames. The worker process
is Monty's (a Python subset in Rust, out of the kernel's process): no host files, environment
or network; host functions come only from `external_lookup` (`think_nb.extensions.host`).
Re-running the source per operation keeps extensions stateless between calls, as a Think
extension Worker may be evicted between calls; ~1 ms for a small extension.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from think_nb.procs import monty_pool

DESCRIBE = '''
try:
    __tools = tools
except NameError:
    __tools = {}
try:
    __hooks = hooks
except NameError:
    __hooks = {}
try:
    __context = context
except NameError:
    __context = {}
__out = {"tools": [], "hooks": [], "context": {}, "problems": []}
if type(__tools).__name__ != "dict":
    __out["problems"].append("`tools` must be a dict of name -> {description, parameters, function}")
    __tools = {}
for __k, __v in __tools.items():
    if type(__v).__name__ != "dict" or type(__v.get("function")).__name__ != "function":
        __out["problems"].append("tool " + repr(__k) + " needs a dict with a 'function' (a def)")
        continue
    __out["tools"].append({"name": __k, "description": __v.get("description") or __k,
                           "parameters": __v.get("parameters") or {}, "required": __v.get("required") or []})
for __k, __v in __hooks.items():
    __out["hooks"].append(__k)
for __k, __v in __context.items():
    __out["context"][__k] = str(__v)
__out
'''

CALL = '''
if __kind == "tool":
    __r = tools[__name]["function"](**__args)
else:
    __r = hooks[__name](__args)
if type(__r).__name__ == "coroutine":
    __r = await __r
__r
'''


class ExtensionError(Exception):
    """Extension code failed or passed a limit; the text says which and how."""


class Sandbox:
    """A pool of Monty workers shared by one agent's extensions (started on first use)."""

    def __init__(self, max_memory: int = 64 * 1024 * 1024) -> None:
        self.max_memory = max_memory
        self._pool: Any = None
        self._starting: asyncio.Lock | None = None

    async def _ready(self) -> Any:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._pool is None:
                pool = monty_pool(min_processes=1, max_processes=2)
                await pool.__aenter__()
                self._pool = pool
        return self._pool

    async def describe(self, source: str, lookup: dict[str, Callable[..., Any]], timeout: float) -> dict:
        """`{tools: [{name, description, parameters, required}], hooks: [names], context: {label: text},
        problems: [...]}` of `source`; raises `ExtensionError` when it fails at load."""
        return await self._run(source, DESCRIBE, {}, lookup, timeout, "loading")

    async def call(self, source: str, kind: str, name: str, args: Any, lookup: dict[str, Callable[..., Any]],
                   timeout: float) -> Any:
        """Call tool `name` with keyword `args` (kind "tool") or hook `name` with one snapshot (kind "hook")."""
        return await self._run(source, CALL, {"__kind": kind, "__name": name, "__args": args}, lookup, timeout,
                               f"{kind} {name!r}")

    async def _run(self, source: str, code: str, inputs: dict, lookup: dict, timeout: float, what: str) -> Any:
        import pydantic_monty as pm

        pool = await self._ready()
        limits = {"max_feed_duration_secs": timeout, "max_memory": self.max_memory, "max_recursion_depth": 200}

        async def run() -> Any:
            async with pool.checkout(script_name="extension.py", limits=limits, os_policy={"sleep": "zero"}) as s:
                await s.feed_run(source, external_lookup=lookup, print_callback=pm.CollectString(max_bytes=4096))
                return await s.feed_run(code, inputs=inputs, external_lookup=lookup,
                                        print_callback=pm.CollectString(max_bytes=4096))

        try:
            return await asyncio.wait_for(run(), timeout + 2.0)
        except pm.MontyError as exc:
            raise ExtensionError(f"{what} failed: {_describe(exc, timeout)}") from None
        except TimeoutError:
            raise ExtensionError(f"{what} failed: time limit exceeded: it ran longer than {timeout:g} s") from None

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)


def _describe(exc: Exception, timeout: float) -> str:
    import pydantic_monty as pm

    text = exc.display("type-msg") if isinstance(exc, pm.MontyRuntimeError | pm.MontySyntaxError) else str(exc)
    if text.startswith("TimeoutError"):
        return f"time limit exceeded: it ran longer than {timeout:g} s ({text})"
    return text
