"""The litellm custom providers think_nb registers (the embedded model, scripted test models).

A provider module calls `register_provider(name, factory)` when it is imported; `litellm_env`
installs every registered provider into litellm when litellm is first imported. Kept apart from
`litellm_env` so a provider module needs nothing of litellm's import machinery (and is not
imported back by it through a cycle).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register_provider", "registered"]

_providers: dict[str, Any] = {}


def register_provider(name: str, factory: Any) -> None:
    """Register a litellm custom provider: `factory()` returns a `litellm.CustomLLM`, built on first use."""
    _providers.setdefault(name, factory)


def registered() -> dict[str, Any]:
    """`{provider name: factory}` of every registered provider, in registration order."""
    return dict(_providers)
