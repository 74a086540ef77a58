"""A small MCP server written with the SDK's server API, for the MCP tests and the notebook.

    python mcp_server.py stdio
    python mcp_server.py http PORT

Tools: `add(a, b)`, `echo_env(name)` (a variable of its environment), `fail()` (an error result),
`slow(marker)` (writes the file `marker`, then never answers: a call to kill the server in),
`delete_file(path)` (harmless; a tool to gate).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo")


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool()
def echo_env(name: str) -> str:
    """The value of an environment variable of the server."""
    return os.environ.get(name, "<unset>")


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the demo tool failed on purpose")


@server.tool()
def slow(marker: str) -> str:
    """Write `marker`, then hang."""
    with open(marker, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(3600)
    return "never"


@server.tool()
def delete_file(path: str) -> str:
    """Pretend to delete a file."""
    return f"deleted {path}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
