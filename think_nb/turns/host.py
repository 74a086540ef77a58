"""`AgentHost`: what the `TurnEngine` needs from the agent it runs turns for, declared.

`Think` implements it. The engine calls nothing else on the agent: the overridable methods
(`get_model`, `get_system_prompt`, `get_tools`, `repair_interrupted_tool_part`), the hooks
(by name, through the turn's `HookSite`), the agent's memory (`session_ready`), its storage
(`store`) and its branch (`conversation`).
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

    name: str
    max_steps: int
    message_concurrency: Any
    include_mcp_tools: bool
    store: AgentStore
    conversation: Conversation

    def get_model(self) -> Any: ...
    def get_system_prompt(self) -> Any: ...
    def get_tools(self) -> Any: ...
    def workspace_tools(self) -> dict: ...
    def repair_interrupted_tool_part(self, part: dict) -> dict: ...
    def overrides(self, hook: str) -> bool: ...
    def observes(self, hook: str) -> bool: ...
    def mcp_tools(self) -> dict: ...
    async def mcp_ready(self) -> None: ...
    async def extension_tools(self) -> dict: ...
    async def extension_hook(self, name: str, ctx: Any, value: Any) -> Any: ...
    def recover_stalled_turn(self, request_id: str, partial: dict | None, trigger: str) -> None: ...
    async def session_ready(self) -> Session: ...
    @property
    def session_configured(self) -> Session | None: ...
