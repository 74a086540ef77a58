"""How an MCP server is described, checked and stored.

`add_mcp_server(name, url_or_command, ...)`: a target starting with `http://` or `https://` is a
streamable-HTTP server; anything else is a command line launched as a stdio server (`args` are
appended). Environment variables (stdio) and headers (HTTP) may hold `${VAR}` references,
resolved from `os.environ` when connecting; the reference, never the value, is stored. A value
under a credential name (`Authorization`, `*_TOKEN`, `API_KEY`, `GITHUB_PAT`, ... as
`think_nb.redact` defines them) must be a reference: a literal secret is refused with the fix in
the message. Arguments may hold `${VAR}` references too. A literal secret anywhere else (an
argument `--api-key sk-...` / `--token=...`, an env value shaped like a key under another name:
`think_nb.redact.redact_argv` / `looks_secret`) is treated like a model's `api_key`: the live
connection uses it (the child's argv and environment), and what is stored (`stored()`) and shown
holds `REDACTED` instead. A server restored from such a row fails with `SECRET_NOT_STORED`'s
fix (add it again, or use a `${VAR}` reference) instead of starting with a wrong argument.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from think_nb.errors import UserError
from think_nb.redact import REDACTED, is_secret_setting, looks_secret, redact_argv, url_password

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
SECRET_NOT_STORED = ("MCP server {name!r}: its {what} held a literal secret, which was not stored; add the server "
                     "again with add_mcp_server(...) in this session, or pass the secret as a ${{VAR}} reference "
                     "(args=['--api-key', '${{MY_KEY}}'], env={{'GITHUB_PAT': '${{GITHUB_PAT}}'}}) so it reconnects "
                     "after a restart.")


@dataclass
class ServerConfig:
    """One MCP server (see the module docstring).

    Attributes:
        name: letters, digits, `_`, `-`, at most 32; prefixes its tools (`<name>_<tool>`).
        transport: `stdio` | `http`.
        target: the command (stdio) or the URL (http).
        args: command arguments (stdio).
        env: environment of the command (stdio), values literal or `${VAR}`.
        headers: HTTP headers (http), values literal or `${VAR}`.
        approval: True/False, or the names of the server's tools that need approval.
        timeout: seconds a call may take before it is a tool error.
    """

    name: str
    transport: str
    target: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    approval: bool | list[str] = False
    timeout: float = 60.0

    def row(self) -> dict:
        return {"name": self.name, "transport": self.transport, "target": self.target, "args": self.args,
                "env": self.env, "headers": self.headers, "approval": self.approval, "timeout": self.timeout}

    def stored(self) -> dict:
        """`row()` with each literal secret of `args` and `env` replaced by `REDACTED` (what is
        stored and shown)."""
        env = {k: REDACTED if looks_secret(v) else v for k, v in self.env.items()}
        return {**self.row(), "args": redact_argv(self.args), "env": env}

    def secrets(self) -> set[str]:
        """The literal secrets `stored()` leaves out (scrubbed from what the server says)."""
        found = {a for a, r in zip(self.args, redact_argv(self.args), strict=True) if a != r}
        found |= {a.split("=", 1)[1] for a in found if a.startswith("-") and "=" in a}
        headers = {a.split(":", 1)[1].strip() for a in found if ":" in a and not a.startswith("-")}
        found |= headers | {h.split()[-1] for h in headers if h.split()}
        found |= {v for v in self.env.values() if looks_secret(v)}
        found |= {p for f in list(found) if (p := url_password(f.split("=", 1)[-1]))}
        return {f for f in found if len(f) >= 4}

    def unstored(self) -> str | None:
        """What of a restored configuration lost a secret to redaction (`args` / `env`), else None."""
        if REDACTED in self.args or any(a.endswith(("=" + REDACTED, ": " + REDACTED)) for a in self.args):
            return "args"
        if REDACTED in self.env.values():
            return "env"
        return None

    @classmethod
    def from_row(cls, row: dict) -> ServerConfig:
        return cls(row["name"], row["transport"], row["target"], list(row["args"]), dict(row["env"]),
                   dict(row["headers"]), row["approval"], float(row["timeout"]))


def make(name: Any, target: Any, args: Any = None, env: Any = None, headers: Any = None,
         needs_approval: Any = False, timeout: Any = 60.0) -> ServerConfig:
    """Check `add_mcp_server`'s arguments; raises `UserError` naming the fix."""
    if not isinstance(name, str) or not NAME.match(name):
        raise UserError(f"MCP server name {name!r}: use letters, digits, _ or - (at most 32, starting with a "
                        "letter), e.g. 'weather'; it prefixes the server's tool names.")
    if not isinstance(target, str) or not target.strip():
        raise UserError(f"add_mcp_server({name!r}, ...): pass a URL ('http://127.0.0.1:8000/mcp') or a command "
                        "('python server.py').")
    approval = needs_approval if isinstance(needs_approval, bool) else (
        [str(t) for t in needs_approval] if isinstance(needs_approval, list | tuple | set) else None)
    if approval is None and not callable(needs_approval):
        raise UserError("needs_approval: True/False, a list of the server's tool names, or a function "
                        "(server, tool, input) -> bool.")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise UserError(f"timeout={timeout!r}: seconds > 0 a call may take.")
    if target.startswith(("http://", "https://")):
        if args or env:
            raise UserError(f"MCP server {name!r} is a URL: args= and env= are for commands; use headers=.")
        return ServerConfig(name, "http", target, [], {}, _values(name, headers, "headers"),
                            approval if approval is not None else False, float(timeout))
    if headers:
        raise UserError(f"MCP server {name!r} is a command: headers= are for URLs; use env=.")
    parts = shlex.split(target)
    extra = [str(a) for a in (args or [])]
    return ServerConfig(name, "stdio", parts[0], parts[1:] + extra, _values(name, env, "env"), {},
                        approval if approval is not None else False, float(timeout))


def referenced(values: Any) -> set[str]:
    """The environment's values of the `${VAR}` references in `values` (strings, lists, dict values):
    the secrets a server may echo."""
    items = values.values() if isinstance(values, dict) else values
    return {os.environ[v] for value in items for v in REFERENCE.findall(str(value))
            if len(os.environ.get(v, "")) >= 4}


def resolve_args(args: list[str], server: str) -> list[str]:
    """`args` with `${VAR}` references replaced by the environment's values; UserError when one is unset."""
    return list(resolve({str(i): a for i, a in enumerate(args)}, "argument", server).values())


def resolve(values: dict[str, str], what: str, server: str) -> dict[str, str]:
    """`${VAR}` references replaced by the environment's values; UserError when one is unset."""
    out = {}
    for key, value in values.items():
        missing = [v for v in REFERENCE.findall(value) if v not in os.environ]
        if missing:
            raise UserError(f"MCP server {server!r}: {what} {key!r} uses ${{{missing[0]}}}, which is not set; "
                            f"set it (os.environ[{missing[0]!r}] = ..., or getpass) and reconnect.")
        out[key] = REFERENCE.sub(lambda m: os.environ[m.group(1)], value)
    return out


def _values(server: str, values: Any, what: str) -> dict[str, str]:
    if values is None:
        return {}
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise UserError(f"MCP server {server!r}: {what}= is a dict of strings.")
    for key, value in values.items():
        literal = REFERENCE.sub("", value).replace("Bearer", "").strip()
        if is_secret_setting(key) and literal:
            raise UserError(f"MCP server {server!r}: {what} {key!r} holds a literal secret, which would be stored in "
                            f"the notebook's SQLite file; pass a reference instead, e.g. {{'{key}': '${{MY_VAR}}'}} "
                            "with MY_VAR set in the environment.")
    return dict(values)
