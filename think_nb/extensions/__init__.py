"""Extensions: sandboxed Python that adds tools, context blocks and hooks to an agent (Think's extensions).

    class Calc(Think):
        include_extension_tools = True           # the model gets load_extension / list_extensions
        def get_extensions(self):                # loaded each time the agent is created
            return [{"manifest": {"name": "math", "version": "1.0.0"},
                     "source": '''
    def add(a, b):
        return {"result": a + b}
    tools = {"add": {"description": "Add two numbers",
                     "parameters": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"], "function": add}}
    '''}]

The model sees `math_add`. An extension's source is Python run in the same pydantic-monty
sandbox as the `execute` tool (`sandbox`); it receives only the host functions its manifest
grants (`host`); its tools are merged after `get_tools()` and before the session's tools and MCP
tools (Think's order, later sources win: an MCP tool or session tool of the same name replaces
an extension tool, an extension tool replaces a `get_tools()` one); `hooks` mirror Think's
extension hooks with a per-hook timeout (`hooks`); run-time extensions are stored in SQLite and
restored (`manager`). Modules: `manifest`, `host`, `sandbox`, `manager`, `hooks`, `tools`.

Context blocks: as in Think, an extension's blocks join the session, and a session with blocks
renders the system prompt from its blocks, so `get_system_prompt()` is then not used (declare
your prompt as a block in `configure_session` if you combine the two).
Processes: the extensions of one agent share a pool of Monty worker processes (one, up to
two), started on first use and stopped by `agent.shutdown()` or when the kernel exits.

Think's `messages` and `session` permissions grant the host bridge's `get_messages(limit)`,
`get_session_info()` and `send_message(text)` (`host`). Not mirrored from Think: reading other
extensions' blocks; network access is per host
(Think's is all-or-nothing today); extensions run Python, not JavaScript; and an extension keeps
no state between calls (its source runs again for each call; a Think Worker keeps module state
until it is evicted). `time.sleep` inside an extension returns at once (the sandbox's OS policy
`{"sleep": "zero"}`: an extension cannot hold a worker by sleeping; a call is bounded by its timeout).
"""

from think_nb.extensions.manager import Extension, ExtensionManager
from think_nb.extensions.manifest import Manifest
from think_nb.extensions.sandbox import ExtensionError

__all__ = ["Extension", "ExtensionError", "ExtensionManager", "Manifest"]
