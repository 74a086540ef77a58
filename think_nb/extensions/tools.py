"""The model's extension tools, `load_extension` and `list_extensions` (Think's `createExtensionTools`).

Given to the model when the agent sets `include_extension_tools = True`. A loaded extension's
tools appear in the model's tool list from the next step on (Think: the next turn).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from think_nb.errors import UserError
from think_nb.extensions.manifest import prefix
from think_nb.tools.tool import Tool

if TYPE_CHECKING:
    from think_nb.extensions.manager import ExtensionManager

LOAD_DESCRIPTION = (
    "Load an extension written in Python (a sandboxed subset: no imports of host modules, no files, no network "
    "except the host functions granted below). The source defines a dict `tools = {name: {\"description\": ..., "
    "\"parameters\": {<JSON-schema properties>}, \"required\": [...], \"function\": <a def>}}` and optionally "
    "`hooks = {\"before_turn\": fn, ...}` and `context = {label: text}`. Functions get the tool's arguments as "
    "keywords. With workspace_access 'read' they may `await read_file(path)`, `await list_files(path)`; with "
    "'read-write' also `await write_file(path, content)`, `await delete_file(path)` (use `async def`); with "
    "network hosts, `await fetch(url)`. Use lowercase letters, digits and _ in the name. Tools are prefixed: "
    "name 'math' with tool 'add' becomes 'math_add'; call them by that full name once loaded.")

LOAD_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Unique name for the extension"},
        "version": {"type": "string", "description": "Semver version (e.g. '1.0.0')"},
        "description": {"type": "string", "description": "Human-readable description"},
        "source": {"type": "string", "description": "Python source defining `tools` (and optional `hooks`, "
                   "`context`). Example:\ndef greet(name):\n    return 'Hello, ' + name\n"
                   "tools = {'greet': {'description': 'Greet someone', 'parameters': {'name': {'type': 'string'}}, "
                   "'required': ['name'], 'function': greet}}"},
        "workspace_access": {"type": "string", "enum": ["none", "read", "read-write"],
                             "description": "Workspace access level for the extension (default: none)"},
        "network": {"type": "array", "items": {"type": "string"},
                    "description": "Network hosts the extension needs access to (default: none)"},
    },
    "required": ["name", "version", "source"],
}


def extension_tools(manager: ExtensionManager, *, gate_writes: bool = False) -> dict[str, Tool]:
    """`{"load_extension": Tool, "list_extensions": Tool}` over `manager`.

    `gate_writes` (the agent's `workspace_approval`): loading an extension that asks for
    `workspace_access="read-write"` or network hosts needs approval, since its code then writes
    and deletes files (or reaches hosts) with no approval of its own; a read-only or
    permissionless extension loads as before.
    """

    async def load_extension(name: str, version: str, source: str, description: str | None = None,
                             workspace_access: str | None = None, network: list[str] | None = None) -> dict:
        manifest = {"name": name, "version": version, "description": description or "",
                    "permissions": {"workspace": workspace_access or "none", "network": list(network or [])}}
        try:
            info = await manager.load(manifest, source)
        except UserError as exc:
            return {"loaded": False, "name": name, "error": str(exc)}
        if info["state"] != "loaded":
            return {"loaded": False, "name": name, "error": info["error"],
                    "message": f'Extension "{name}" did not load: {info["error"]}. Fix the source and load it again.'}
        tools = info["tools"]
        return {"loaded": True, "name": info["name"], "prefix": prefix(name),
                "version": info["version"], "tools": tools,
                "message": f'Extension "{name}" loaded. Call these tools by their full name: {", ".join(tools)}.'}

    async def list_extensions() -> dict:
        await manager.ready()
        items = [{k: e[k] for k in ("name", "version", "description", "tools", "permissions", "state", "error")}
                 for e in (x.info() for x in manager.items.values())]
        return {"count": len(items), "extensions": items}

    return {
        "load_extension": Tool("load_extension", LOAD_DESCRIPTION, LOAD_SCHEMA, load_extension,
                               needs_approval=_can_write_or_reach if gate_writes else False),
        "list_extensions": Tool("list_extensions", "List all currently loaded extensions and their tools.",
                                {"type": "object", "properties": {}}, list_extensions),
    }


def _can_write_or_reach(arguments: dict) -> bool:
    """Whether an extension loaded with `arguments` may write the workspace or reach the network."""
    return arguments.get("workspace_access") == "read-write" or bool(arguments.get("network"))
