"""The one link from a user's agent object to the runtime that does its work.

`Think.__init__` binds each agent to its `AgentRuntime` (`think_nb.runtime`) here; frontends (the
panel, the magics, the terminal, `execute_tool(self)`) and tests that need the machinery behind an
agent ask `runtime_of(agent)`. Nothing else knows where the runtime is kept, and nothing is put in
the user's namespace: the attribute is name-mangled (`Think.__runtime`), so a subclass may define
any name of its own (`store`, `key`, `_engine`, ...).

This module imports nothing of think_nb, so any layer may use it without a cycle.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ATTRIBUTE", "bind", "runtime_of"]

ATTRIBUTE = "_Think__runtime"
"""Where `Think` keeps its runtime (`self.__runtime` inside the class)."""


def bind(agent: object, runtime: object) -> None:
    """Attach `runtime` to `agent` (called once, by `Think.__init__`)."""
    object.__setattr__(agent, ATTRIBUTE, runtime)


def runtime_of(agent: object) -> Any:
    """The `AgentRuntime` behind `agent` (a `Think`): its store, conversation, engine, listeners.

    Raises:
        TypeError: `agent` is not a `Think` that finished `Think.__init__` (a subclass `__init__`
        must call `super().__init__(name)` first).
    """
    try:
        return object.__getattribute__(agent, ATTRIBUTE)
    except AttributeError:
        raise TypeError(f"{type(agent).__name__} object is not a set-up think_nb agent: create it as "
                        "MyAgent('name'); a subclass __init__ must call super().__init__(name, ...) first.") from None
