"""An extension's manifest: who it is and what it may reach (Think's `ExtensionManifest`).

    {"name": "math", "version": "1.0.0", "description": "Arithmetic",
     "permissions": {"workspace": "none" | "read" | "read-write", "network": ["api.example.com"],
                     "messages": "none" | "read", "session": {"send_message": True, "metadata": True}},
     "context": [{"label": "notes", "description": "What the math extension learned", "max_tokens": 500}]}

`permissions.workspace` (default "none") and `permissions.network` (default none; `True` means
"every host the agent allows") decide which host functions the extension's code receives
(`think_nb.extensions.host`). `network` hosts are further limited to the agent's
`extension_allowed_hosts`: an extension never reaches a host the agent does not allow.
`permissions.messages` ("read"; default "none") grants `get_messages(limit)`, and
`permissions.session` (`send_message` / Think's `sendMessage`, `metadata`: booleans, default
false) grant `send_message(text)` and `get_session_info()` (Think's permissions).
`context` declares blocks, registered in the session as `<prefix>_<label>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from think_nb.errors import UserError

WORKSPACE_LEVELS = ("none", "read", "read-write")
MESSAGE_LEVELS = ("none", "read")
SESSION_GRANTS = {"send_message": ("send_message", "sendMessage"), "metadata": ("metadata",)}
"""`permissions.session` keys: think_nb's name -> the spellings accepted (Think's camelCase too)."""
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")


@dataclass
class Manifest:
    """A checked manifest (see the module docstring)."""

    name: str
    version: str
    description: str = ""
    workspace: str = "none"
    network: list[str] | bool = field(default_factory=list)
    context: list[dict] = field(default_factory=list)
    messages: str = "none"
    session: dict[str, bool] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        """The namespace of its tools and blocks (Think's `sanitizeName`): `<prefix>_<tool>`."""
        return prefix(self.name)

    def as_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "description": self.description,
                "permissions": self.permissions(), "context": self.context}

    def permissions(self) -> dict:
        """`{workspace, network}`, plus `messages` / `session` when they grant anything."""
        granted = {k: v for k, v in self.session.items() if v}
        return {"workspace": self.workspace, "network": self.network,
                **({"messages": self.messages} if self.messages != "none" else {}),
                **({"session": granted} if granted else {})}


def prefix(name: str) -> str:
    """Non-alphanumerics to `_`, runs of `_` collapsed, trimmed (Think's `sanitizeName`)."""
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]", "_", name)).strip("_")


def parse(value: Any) -> Manifest:
    """Check a manifest dict (or `Manifest`); raises `UserError` naming the fix."""
    if isinstance(value, Manifest):
        return value
    if not isinstance(value, dict):
        raise UserError(f"extension manifest {value!r}: pass a dict like {{'name': 'math', 'version': '1.0.0'}}.")
    name, version = value.get("name"), value.get("version")
    if not isinstance(name, str) or not NAME.match(name):
        raise UserError(f"extension name {name!r}: use letters, digits, _ or - (at most 32, starting with a letter), "
                        "e.g. 'math'; it prefixes the extension's tools (math_add).")
    if not isinstance(version, str) or not version.strip():
        raise UserError(f"extension {name!r}: pass a version string, e.g. '1.0.0'.")
    description = value.get("description") or ""
    if not isinstance(description, str):
        raise UserError(f"extension {name!r}: description must be a string.")
    permissions = value.get("permissions") or {}
    if not isinstance(permissions, dict):
        raise UserError(f"extension {name!r}: permissions must be a dict like {{'workspace': 'read'}}.")
    workspace = permissions.get("workspace") or "none"
    if workspace not in WORKSPACE_LEVELS:
        raise UserError(f"extension {name!r}: permissions.workspace={workspace!r}; use one of {WORKSPACE_LEVELS}.")
    network = permissions.get("network") or []
    if network is not True and not (isinstance(network, list | tuple) and all(isinstance(h, str) for h in network)):
        raise UserError(f"extension {name!r}: permissions.network must be a list of host names or True.")
    messages = permissions.get("messages") or "none"
    if messages not in MESSAGE_LEVELS:
        raise UserError(f"extension {name!r}: permissions.messages={messages!r}; use one of {MESSAGE_LEVELS}.")
    session = _session(name, permissions.get("session") or {})
    context = value.get("context") or []
    if not isinstance(context, list) or not all(isinstance(c, dict) and isinstance(c.get("label"), str)
                                                and re.match(r"^[A-Za-z0-9_-]+$", c["label"]) for c in context):
        raise UserError(f"extension {name!r}: context must be a list of {{'label': 'notes', 'description': ...}} "
                        "with labels of letters, digits, _ or -.")
    blocks = [{"label": c["label"], "description": str(c.get("description") or ""),
               "max_tokens": c.get("max_tokens", c.get("maxTokens"))} for c in context]
    return Manifest(name, version.strip(), description, workspace, True if network is True else list(network), blocks,
                    messages, session)


def _session(name: str, raw: Any) -> dict[str, bool]:
    """`permissions.session` as `{send_message, metadata}` booleans; `UserError` for anything else."""
    spellings = {k: grant for grant, keys in SESSION_GRANTS.items() for k in keys}
    if not isinstance(raw, dict) or any(k not in spellings or not isinstance(v, bool) for k, v in raw.items()):
        raise UserError(f"extension {name!r}: permissions.session={raw!r:.80} must be a dict like "
                        "{'send_message': True, 'metadata': True} (booleans).")
    return {grant: any(raw.get(k, False) for k in keys) for grant, keys in SESSION_GRANTS.items()}
