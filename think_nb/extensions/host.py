"""The host functions an extension's code receives, decided by its manifest (Think's host bridge).

Everything else is out of reach: the sandbox (pydantic-monty) has no host files, environment,
sockets or imports of host modules, and a name that is not given here is a `NameError`.

All are `async` (`await read_file(p)`, so the tool function is an `async def`):
- `read_file(path) -> str | None`, `list_files(path="/") -> list[str]`, `exists(path) -> bool`:
  `permissions.workspace` is "read" or "read-write";
- `write_file(path, content) -> None`, `delete_file(path) -> bool`: "read-write";
- `fetch(url) -> dict` (the `fetch` tool's result, `{ok, content, ...}` or `{ok: False, code,
  message}`): `permissions.network` names hosts the agent's `extension_allowed_hosts` also allows;
- `get_context(label) -> str`, `set_context(label, content)`: the extension's own blocks;
- `get_messages(limit=None) -> list[dict]`: the newest `limit` messages of the current branch
  (all in memory when None), oldest first, as `{id, role, content}` (`content`: the text parts
  joined; tool calls, files and reasoning are left out; the running turn's reply as stored so
  far, at its last step): `permissions.messages` is "read";
- `get_session_info() -> dict`: `{agent, session_id, message_count, is_running}`:
  `permissions.session.metadata`;
- `send_message(text) -> str`: a user message (`metadata.extension` names the sender) starting
  a turn after the running one (Think's `sendMessage`; an unawaited `submit`, so a tool of the
  running turn never waits for it); returns its request id: `permissions.session.send_message`.

A function the manifest does not grant is still defined, and raises `PermissionError` naming the
permission to ask for, so the model that wrote the code learns what to change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from think_nb.extensions.manifest import Manifest
from think_nb.messages import new_id, text_of, user_message
from think_nb.workspace import ops

READ = ("read_file", "list_files", "exists")
WRITE = ("write_file", "delete_file")
CONTEXT = ("get_context", "set_context")
CONVERSATION = {"get_messages": "permissions.messages='read'",
                "get_session_info": "permissions.session={'metadata': True}",
                "send_message": "permissions.session={'send_message': True}"}


def host_functions(agent: Any, manifest: Manifest) -> dict[str, Callable[..., Any]]:
    """`{name: async function}` for the sandbox's `external_lookup` (see the module docstring)."""
    out: dict[str, Callable[..., Any]] = {}
    for name in READ + WRITE:
        out[name] = _denied(name, f"permissions.workspace={'read-write' if name in WRITE else 'read'!r}")
    out["fetch"] = _denied("fetch", "permissions.network=[<host>] (and the host in the agent's "
                                    "extension_allowed_hosts)")
    for name in CONTEXT:
        out[name] = _denied(name, "a 'context' entry in the manifest")
    if manifest.workspace in ("read", "read-write"):
        out.update(_workspace(agent, write=manifest.workspace == "read-write"))
    hosts = allowed_hosts(manifest, getattr(agent, "extension_allowed_hosts", ()) or ())
    if hosts:
        out["fetch"] = _fetch(agent, hosts)
    if manifest.context:
        out.update(_context(agent, manifest))
    for name, needs in CONVERSATION.items():
        out[name] = _denied(name, needs)
    out.update(_conversation(agent, manifest))
    return out


def allowed_hosts(manifest: Manifest, agent_hosts: Any) -> list[str]:
    """The manifest's hosts that the agent allows (exact or `*.domain` patterns of the agent)."""
    allow = [h.lower() for h in agent_hosts]
    network = manifest.network
    wanted = allow if network is True else [h.lower() for h in network] if isinstance(network, list) else []

    def ok(host: str) -> bool:
        return any(host == a or (a.startswith("*.") and (host.endswith(a[1:]) or host == a)) for a in allow)

    return [h for h in wanted if ok(h)]


def _denied(name: str, needs: str) -> Callable[..., Any]:
    async def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(f"{name}() is not granted to this extension; its manifest needs {needs}")

    return denied


def _workspace(agent: Any, write: bool) -> dict[str, Callable[..., Any]]:
    """The workspace functions over `agent.workspace` (read at each call), run off the event loop."""
    async def read_file(path: str) -> str | None:
        return await asyncio.to_thread(ops.read_text, agent.workspace, path, missing_ok=True)

    async def list_files(path: str = "/") -> list[str]:
        return await asyncio.to_thread(ops.list_paths, agent.workspace, path)

    async def exists(path: str) -> bool:
        return await asyncio.to_thread(ops.exists, agent.workspace, path)

    out: dict[str, Callable[..., Any]] = {"read_file": read_file, "list_files": list_files, "exists": exists}
    if not write:
        return out

    async def write_file(path: str, content: str) -> None:
        await asyncio.to_thread(ops.write_text, agent.workspace, path, str(content))

    async def delete_file(path: str) -> bool:
        return await asyncio.to_thread(ops.remove, agent.workspace, path)

    return {**out, "write_file": write_file, "delete_file": delete_file}


def _fetch(agent: Any, hosts: list[str]) -> Callable[..., Any]:
    from think_nb.workspace.fetch import fetch_tool

    tool = fetch_tool(allowed_hosts=hosts, allow_private=getattr(agent, "extension_allow_private", ()) or ())

    async def fetch(url: str) -> dict:
        return await tool.invoke({"url": url})

    return fetch


def _context(agent: Any, manifest: Manifest) -> dict[str, Callable[..., Any]]:
    own = {c["label"] for c in manifest.context}

    def label_of(label: str) -> str:
        if label not in own:
            raise PermissionError(f"context block {label!r} is not declared by extension {manifest.name!r} "
                                  f"(its blocks: {sorted(own)})")
        return f"{manifest.prefix}_{label}"

    async def get_context(label: str) -> str:
        block = (await agent.session_ready()).get_context_block(label_of(label))
        return block.content if block is not None else ""

    async def set_context(label: str, content: str) -> None:
        await (await agent.session_ready()).set_block(label_of(label), str(content))

    return {"get_context": get_context, "set_context": set_context}


def _conversation(agent: Any, manifest: Manifest) -> dict[str, Callable[..., Any]]:
    """The transcript and session functions the manifest grants (Think's `getMessages`,
    `getSessionInfo`, `sendMessage`), over the agent's runtime `agent`."""
    out: dict[str, Callable[..., Any]] = {}
    if manifest.messages == "read":
        async def get_messages(limit: int | None = None) -> list[dict]:
            if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
                raise ValueError(f"get_messages(limit={limit!r}): pass a whole number >= 0, or None for all")
            branch = agent.conversation.messages
            chosen = branch if limit is None else branch[len(branch) - limit:] if limit else []
            return [{"id": m.get("id"), "role": m.get("role"), "content": text_of(m)} for m in chosen]

        out["get_messages"] = get_messages
    if manifest.session.get("metadata"):
        async def get_session_info() -> dict:
            return {"agent": str(agent.agent.name), "session_id": agent.store.session_id,
                    "message_count": len(agent.conversation.messages), "is_running": bool(agent.agent.is_running)}

        out["get_session_info"] = get_session_info
    if manifest.session.get("send_message"):
        async def send_message(text: str) -> str:
            if not isinstance(text, str) or not text.strip():
                raise ValueError("send_message(text): pass the message's text, a non-empty string")
            message = {**user_message(text), "metadata": {"extension": manifest.name}}
            request_id = new_id("req")
            agent.agent.submit(message, request_id, trigger="extension")
            return request_id

        out["send_message"] = send_message
    return out

