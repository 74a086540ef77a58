"""`SessionHost`: what an agent's memory (`Session`) needs from the agent it belongs to, declared.

`think_nb.runtime.AgentRuntime` implements it; the session never sees `Think` or the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from think_nb.conversation import Conversation
    from think_nb.store.agent import AgentStore
    from think_nb.turns.broadcast import Event


class SessionListeners(Protocol):
    def wants(self, event: str) -> bool: ...


class SessionHost(Protocol):
    """The agent side of a `Session`: its storage, branch, model and skills, and its listeners."""

    agent: Any
    """The user's `Think` object (its `get_model` and `get_skills` are called, named in errors)."""
    store: AgentStore
    conversation: Conversation

    @property
    def messages(self) -> list[dict]: ...
    def get_model(self) -> Any: ...
    def get_skills(self) -> Any: ...
    def overrides(self, hook: str) -> bool: ...


class SessionEngine(Protocol):
    """The turn engine side of a `Session`: who listens, and the model the last turn resolved."""

    resolved_model: str | None

    @property
    def listeners(self) -> SessionListeners: ...
    def notify(self, event: Event, *args: Any) -> None: ...
