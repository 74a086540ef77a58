"""An agent's extensions: loaded, listed, turned into tools, blocks and hooks (Think's `ExtensionManager`).

- **Static** extensions come from `get_extensions()` each time the agent is created (not stored);
  **run-time** ones (`agent.load_extension`, the model's `load_extension`) are stored in SQLite and
  loaded again when the agent is created (after the static ones, oldest first).
- Loading runs the source once in the sandbox to discover its `tools`, `hooks` and `context`;
  the load time is `load_ms`. A second load of a loaded name is refused ("unload it first", as
  Think does); a static extension therefore keeps its name against a stored one of the same name.
- **Broken** extensions (a source that raises, loops past the timeout, or defines no valid tool
  or hook) are kept with `state == "error"` and their `error` (shown by `agent.extensions()`,
  `list_extensions` and the `load_extension` result the model reads) and contribute nothing; the
  agent keeps working. A failed run-time load is not stored.
- Tools are `<prefix>_<tool>` with the description `[<name>] <description>`; blocks `<prefix>_<label>`.
  A tool whose name is a built-in's (`load` + `extension`) is refused (`think_nb.tools.collisions`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import textwrap
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from think_nb.aio import task_loop
from think_nb.errors import UserError
from think_nb.extensions import hooks as hook_mod
from think_nb.extensions.manifest import Manifest, parse
from think_nb.extensions.sandbox import ExtensionError, Sandbox
from think_nb.tools.collisions import refused_builtin
from think_nb.tools.tool import Tool, dump_output

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

    from think_nb.store.agent import AgentStore

log = logging.getLogger("think_nb")


@dataclass
class Extension:
    """One extension as the agent holds it."""

    manifest: Manifest
    source: str
    origin: str  # "static" | "loaded"
    state: str = "loading"  # "loading" | "loaded" | "error"
    tools: list[dict] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    error: str | None = None
    load_ms: float | None = None
    calls: int = 0
    hook_errors: int = 0

    def info(self) -> dict:
        """Think's `ExtensionInfo` plus our state: `{name, version, description, tools, context_labels,
        permissions, hooks, origin, state, error}`."""
        m = self.manifest
        return {"name": m.name, "version": m.version, "description": m.description,
                "tools": [f"{m.prefix}_{t['name']}" for t in self.tools],
                "context_labels": [f"{m.prefix}_{c['label']}" for c in m.context] if self.state == "loaded" else [],
                "permissions": m.permissions(), "hooks": list(self.hooks),
                "origin": self.origin, "state": self.state, "error": self.error}


class ExtensionHost(Protocol):
    """What the extensions need of their agent (`think_nb.runtime.AgentRuntime` implements it): its
    storage, memory and workspace, and the extension settings read from the agent's class."""

    name: str
    store: AgentStore
    extension_timeout: float
    extension_hook_timeout: float
    extension_allowed_hosts: Any
    extension_allow_private: Any

    @property
    def workspace(self) -> AbstractFileSystem: ...
    async def session_ready(self) -> Any: ...


class ExtensionManager:
    """The extensions of one agent (see the module docstring)."""

    def __init__(self, host: ExtensionHost) -> None:
        self.host = host
        self.rows = host.store.extensions
        self.items: dict[str, Extension] = {}
        self.sandbox = Sandbox()
        self.task: asyncio.Task | None = None

    # -- loading ---------------------------------------------------------------------------
    def restore(self, static: list) -> None:
        """Load `get_extensions()` then the stored ones, in a task on the running loop (else the
        script loop); `ready()` waits for it. Bad static configs raise `UserError` here, at creation."""
        if static is None:
            static = []
        if not isinstance(static, (list, tuple)):
            raise UserError(f"get_extensions() returned {static!r:.60}; return a list of {{'manifest': ..., "
                            "'source': ...}} dicts.")
        configs = [_config(c) for c in static]
        stored = self.rows.all()
        if not configs and not stored:
            return
        for manifest, source in configs:
            self.items[manifest.name] = Extension(manifest, source, "static")
        for row in stored:  # listed at once ("loading"), so `agent.extensions()` shows them before they load
            try:
                manifest = parse(row["manifest"])
            except UserError as exc:
                log.warning("stored extension skipped: %s", exc)
                continue
            if manifest.name in self.items:
                log.warning("stored extension %r not loaded: a static extension has that name", manifest.name)
                continue
            self.items[manifest.name] = Extension(manifest, row["source"], "loaded")
        pending = list(self.items.values())

        async def run() -> None:
            for ext in pending:  # load() and unload() wait for this task first
                await self._load(ext)

        loop = task_loop()
        self.task = loop.create_task(run(), name=f"think_nb extensions {self.host.name}")

    async def ready(self) -> None:
        """Wait until the extensions restored at creation are loaded (or failed)."""
        if self.task is not None and not self.task.done():
            await asyncio.shield(self.task)

    async def load(self, manifest: Any, source: Any) -> dict:
        """Load a run-time extension and store it (see `Think.load_extension`)."""
        checked = parse(manifest)
        if not isinstance(source, str) or not source.strip():
            raise UserError(f"extension {checked.name!r}: pass its Python source as a string.")
        await self.ready()
        old = self.items.get(checked.name)
        if old is not None and old.state != "error":
            raise UserError(f"Extension {checked.name!r} is already loaded. Unload it first "
                            f"(agent.unload_extension({checked.name!r})) or pick another name.")
        clash = next((e for name, e in self.items.items() if name != checked.name and e.state != "error"
                      and e.manifest.prefix == checked.prefix), None)
        if clash is not None:  # "my-x" and "my_x" would both name their tools my_x_<tool>
            raise UserError(f"Extension {checked.name!r} would name its tools {checked.prefix}_<tool>, as the loaded "
                            f"extension {clash.manifest.name!r} does; pick another name.")
        ext = Extension(checked, textwrap.dedent(source), "loaded")
        self.items[checked.name] = ext
        await self._load(ext)
        if ext.state == "loaded":
            self.rows.put(ext.manifest.as_dict(), ext.source)
        return ext.info()

    async def unload(self, name: str) -> bool:
        """Remove an extension's tools, hooks and blocks and forget it (a static one comes back
        when the agent is created again)."""
        await self.ready()
        ext = self.items.pop(name, None)
        # a static extension is not stored: unloading it leaves a stored one of the same name alone
        stored = self.rows.delete(name) if ext is None or ext.origin != "static" else False
        if ext is not None and ext.state == "loaded" and ext.manifest.context:
            session = await self.host.session_ready()
            for block in ext.manifest.context:
                session.remove_context(f"{ext.manifest.prefix}_{block['label']}")
            session.refresh_system_prompt()  # Think refreshes the prompt on extension unload
        return ext is not None or stored

    async def _load(self, ext: Extension) -> None:
        started = time.perf_counter()
        try:
            found = await self.sandbox.describe(ext.source, host_functions(self.host, ext.manifest),
                                                self.host.extension_timeout)
            if found["problems"]:
                raise ExtensionError("; ".join(found["problems"]))
            unknown = sorted(set(found["hooks"]) - set(hook_mod.HOOKS))
            if unknown:
                raise ExtensionError(f"unknown hooks {unknown}; extensions may define {list(hook_mod.HOOKS)}")
            if not found["tools"] and not found["hooks"] and not found["context"] and not ext.manifest.context:
                raise ExtensionError("the source defines no `tools`, `hooks` or `context` dict")
            ext.manifest = _with_source_blocks(ext.manifest, found["context"])
            await self._register_blocks(ext, found["context"])
            ext.tools, ext.hooks, ext.state, ext.error = found["tools"], found["hooks"], "loaded", None
        except (ExtensionError, UserError) as exc:
            ext.state, ext.error = "error", str(exc)
            log.warning("extension %r failed to load: %s", ext.manifest.name, exc)
        finally:
            ext.load_ms = round((time.perf_counter() - started) * 1000, 2)

    async def _register_blocks(self, ext: Extension, initial: dict[str, str]) -> None:
        if not ext.manifest.context:
            return
        session = await self.host.session_ready()
        for block in ext.manifest.context:
            label = f"{ext.manifest.prefix}_{block['label']}"
            if session.get_context_block(label) is None:
                session.add_context(label, description=block["description"] or None, max_tokens=block["max_tokens"])
            text = initial.get(block["label"])
            current = session.get_context_block(label)
            if text and current is not None and not current.content:
                await session.set_block(label, text)
        session.refresh_system_prompt()

    # -- what a turn gets ------------------------------------------------------------------
    def tools(self) -> dict[str, Tool]:
        """`{<prefix>_<tool>: Tool}` of every loaded extension, in load order. A tool whose name is
        a built-in tool's (extension `load` + tool `extension` is `load_extension`) is refused with
        a warning (`think_nb.tools.collisions`: the built-in keeps its name and its gate)."""
        out: dict[str, Tool] = {}
        for ext in self.items.values():
            if ext.state != "loaded":
                continue
            for spec in ext.tools:
                tool = self._tool(ext, spec)
                if not refused_builtin(tool.name, f"extension {ext.manifest.name!r}"):
                    out[tool.name] = tool
        return out

    def _tool(self, ext: Extension, spec: dict) -> Tool:
        remote = spec["name"]
        manager = self

        async def call(**arguments: Any) -> Any:
            if manager.items.get(ext.manifest.name) is not ext:
                raise ExtensionError(f'Extension "{ext.manifest.name}" has been unloaded. Tool "{ext.manifest.prefix}_'
                                     f'{remote}" is no longer available.')
            ext.calls += 1
            lookup = host_functions(manager.host, ext.manifest)
            return dump_output(await manager.sandbox.call(ext.source, "tool", remote, arguments, lookup,
                                                          manager.host.extension_timeout))

        return Tool(name=f"{ext.manifest.prefix}_{remote}"[:64], description=f"[{ext.manifest.name}] "
                    f"{spec['description']}", parameters=_schema(spec), function=call)

    def subscribers(self, hook: str) -> list[Extension]:
        """Loaded extensions defining `hook`, in load order."""
        return [e for e in self.items.values() if e.state == "loaded" and hook in e.hooks]

    async def run_hook(self, hook: str, ctx: Any, value: Any) -> Any:
        """Think's extension hook pipeline (`think_nb.extensions.hooks`)."""
        return await hook_mod.dispatch(self, hook, ctx, value)

    async def call_hook(self, ext: Extension, hook: str, snapshot: dict) -> Any:
        return await self.sandbox.call(ext.source, "hook", hook, snapshot, host_functions(self.host, ext.manifest),
                                       float(self.host.extension_hook_timeout))

    def table(self) -> list[dict]:
        return [{**e.info(), "load_ms": e.load_ms, "calls": e.calls, "hook_errors": e.hook_errors}
                for e in self.items.values()]

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        await self.sandbox.close()


def _config(value: Any) -> tuple[Manifest, str]:
    if not isinstance(value, dict) or "manifest" not in value or not isinstance(value.get("source"), str):
        raise UserError(f"get_extensions() entry {value!r:.80}: return dicts {{'manifest': {{...}}, 'source': "
                        "'<python>'}}.")
    return parse(value["manifest"]), textwrap.dedent(value["source"])


def _with_source_blocks(manifest: Manifest, initial: dict[str, str]) -> Manifest:
    """Blocks the source defines (`context = {label: text}`) that the manifest does not declare."""
    declared = {c["label"] for c in manifest.context}
    extra = [{"label": label, "description": "", "max_tokens": None} for label in initial if label not in declared]
    if not extra:
        return manifest
    return dataclasses.replace(manifest, context=[*manifest.context, *extra])  # its permissions kept


def _schema(spec: dict) -> dict:
    """Think's descriptor: `parameters` are JSON-schema properties (+ `required`); a whole object
    schema is taken as it is."""
    params = spec.get("parameters") or {}
    if params.get("type") == "object" and isinstance(params.get("properties"), dict):
        return params
    return {"type": "object", "properties": params, "required": list(spec.get("required") or [])}


def host_functions(agent: Any, manifest: Manifest) -> dict:
    """`think_nb.extensions.host.host_functions`, imported on first use: it pulls in the workspace
    (fsspec, httpx), which `import think_nb` does not need."""
    from think_nb.extensions.host import host_functions as build

    return build(agent, manifest)
