"""`AgentHost`: what the `TurnEngine` needs from the agent it runs turns for, declared.

`think_nb.runtime.AgentRuntime` implements it. The engine calls nothing else: the user's object
(`agent`, on which the hooks and overridables are called by name, through `call_hook` and the
turn's `HookSite`), the settings read from it (`max_steps`, ...), the agent's memory
(`session_ready`), its storage (`store`), its branch (`conversation`) and the tools the runtime's
subsystems add (workspace, MCP, extensions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from think_nb.conversation import Conversation
    from think_nb.session.builder import Session
    from think_nb.store.agent import AgentStore

HOOKS = ("before_turn", "before_tool_call", "after_tool_call", "on_chunk", "on_step_finish", "on_chat_response",
         "on_chat_error")
"""Every hook of a turn, in Think's order; each fires through `HookSite.fire`."""


class AgentHost(Protocol):
    """The agent side of the engine's seam (see the module docstring)."""

    agent: Any
    """The user's `Think` object: hooks and overridables are called on it."""
    name: str
    key: str
    """The agent's storage key (`"<Class>:<name>"`): events name their agent with it."""
    max_steps: int
    send_reasoning: bool
    chat_stream_stall_timeout: float | None
    context_overflow: Any
    """`Think.context_overflow` (`think_nb.turns.overflow.ContextOverflow.coerce` reads it)."""
    media_eviction: Any
    """`Think.media_eviction` (`think_nb.messages.media.MediaEviction.coerce` reads it)."""
    message_concurrency: Any
    include_mcp_tools: bool
    store: AgentStore
    conversation: Conversation

    @property
    def actions(self) -> Any:
        """The agent's `think_nb.actions.runner.ActionRunner` (`actions.tools()`: what `get_actions()` offers)."""

    def get_model(self) -> Any: ...
    def get_system_prompt(self) -> Any: ...
    def get_tools(self) -> Any: ...
    def workspace_tools(self) -> dict: ...
    async def aworkspace_tools(self) -> dict: ...
    def kernel_tools(self) -> dict: ...
    def repair_interrupted_tool_part(self, part: dict) -> dict: ...
    def overrides(self, hook: str) -> bool: ...
    def observes(self, hook: str) -> bool: ...
    def mcp_tools(self) -> dict: ...
    async def mcp_ready(self) -> None: ...
    async def extension_tools(self) -> dict: ...
    async def extension_hook(self, name: str, ctx: Any, value: Any) -> Any: ...
    def messages_grew(self) -> None: ...
    """A turn ended or `add_messages` stored messages (background maintenance may start: media eviction)."""
    def recover_stalled_turn(self, request_id: str, partial: dict | None, trigger: str) -> Any: ...
    """Returns an awaitable of whether a continuation will own the answer, or None (none will)."""
    async def session_ready(self) -> Session: ...
    @property
    def session_configured(self) -> Session | None: ...
