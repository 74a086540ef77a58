"""think_nb: Cloudflare's Think chat-agent base class, rebuilt for Python and Jupyter.

Public names only; see `think_nb.agent.Think` to start.
"""

from think_nb._version import __version__

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing alone costs more than the rest of this module
if TYPE_CHECKING:  # what the names are, for type checkers (at run time: `__getattr__`)
    from IPython.core.interactiveshell import InteractiveShell

    from think_nb.actions import ActionAuthorizationContext, ActionContext, action
    from think_nb.agent import Think
    from think_nb.binding import runtime_of
    from think_nb.errors import HookError, InternalError, ModelError, UserError
    from think_nb.messages.media import MediaEviction
    from think_nb.messages.types import UIMessage, UIMessageChunk, UIMessagePart
    from think_nb.models.resolve import LOCAL_MODEL, ModelConfig
    from think_nb.panel.widget import ChatPanel
    from think_nb.schedules import ScheduledTask, ScheduledTaskContext
    from think_nb.tools.client import client_tool
    from think_nb.tools.tool import Tool, tool
    from think_nb.turns.hooks import TurnConfig, TurnContext
    from think_nb.turns.overflow import (
        ChatErrorContext,
        ContextOverflow,
        Proactive,
        default_context_overflow_classifier,
    )
    from think_nb.turns.recovery import ChatRecoveryContext, RecoveryDecision
    from think_nb.turns.result import StepContext, TurnResult
    from think_nb.turns.signal import AbortController, AbortSignal
    from think_nb.turns.steps import PrepareStepContext, StepConfig
    from think_nb.turns.stop import has_tool_call, step_count_is
    from think_nb.turns.structured import StructuredOutputError
    from think_nb.turns.tool_hooks import ToolCallContext, ToolCallDecision, ToolCallResultContext

_LAZY: dict[str, str] = {name: module for module, names in (
    ("think_nb.actions", "ActionAuthorizationContext ActionContext action"),
    ("think_nb.agent", "Think"),
    ("think_nb.binding", "runtime_of"),
    ("think_nb.errors", "HookError InternalError ModelError UserError"),
    ("think_nb.messages.media", "MediaEviction"),
    ("think_nb.messages.types", "UIMessage UIMessageChunk UIMessagePart"),
    ("think_nb.models.resolve", "LOCAL_MODEL ModelConfig"),
    ("think_nb.schedules", "ScheduledTask ScheduledTaskContext"),
    ("think_nb.tools.client", "client_tool"),
    ("think_nb.tools.tool", "Tool tool"),
    ("think_nb.turns.hooks", "TurnConfig TurnContext"),
    ("think_nb.turns.tool_hooks", "ToolCallContext ToolCallDecision ToolCallResultContext"),
    ("think_nb.turns.overflow", "ChatErrorContext ContextOverflow Proactive default_context_overflow_classifier"),
    ("think_nb.turns.recovery", "ChatRecoveryContext RecoveryDecision"),
    ("think_nb.turns.result", "StepContext TurnResult"),
    ("think_nb.turns.signal", "AbortController AbortSignal"),
    ("think_nb.turns.steps", "PrepareStepContext StepConfig"),
    ("think_nb.turns.stop", "has_tool_call step_count_is"),
    ("think_nb.turns.structured", "StructuredOutputError"),
    ("think_nb.panel.widget", "ChatPanel"),
) for name in names.split()}
"""Public name -> the module that defines it, imported on first access (PEP 562): `import think_nb`
imports none of them, so `%load_ext think_nb` and `import think_nb` stay cheap, and
`from think_nb import Think, tool` imports what those two need (tests/test_imports.py)."""

__all__ = [
    "LOCAL_MODEL",
    "AbortController",
    "AbortSignal",
    "ActionAuthorizationContext",
    "ActionContext",
    "ChatErrorContext",
    "ChatPanel",
    "ChatRecoveryContext",
    "ContextOverflow",
    "HookError",
    "InternalError",
    "MediaEviction",
    "ModelConfig",
    "ModelError",
    "PrepareStepContext",
    "Proactive",
    "RecoveryDecision",
    "ScheduledTask",
    "ScheduledTaskContext",
    "StepConfig",
    "StepContext",
    "StructuredOutputError",
    "Think",
    "Tool",
    "ToolCallContext",
    "ToolCallDecision",
    "ToolCallResultContext",
    "TurnConfig",
    "TurnContext",
    "TurnResult",
    "UIMessage",
    "UIMessageChunk",
    "UIMessagePart",
    "UserError",
    "__version__",
    "action",
    "client_tool",
    "default_context_overflow_classifier",
    "has_tool_call",
    "load_ipython_extension",
    "runtime_of",
    "step_count_is",
    "tool",
]


def __getattr__(name: str) -> object:
    from think_nb.lazy import load  # here, not above: `import think_nb` imports only `_version`

    return load(__name__, _LAZY, name)


def __dir__() -> list[str]:
    from think_nb.lazy import listing

    return listing(__name__, _LAZY)


def load_ipython_extension(ipython: "InteractiveShell") -> None:  # IPython's own signature
    """`%load_ext think_nb`: registers `%think` / `%%think` and, when the notebook's default model is
    hosted (`Think.default_model`, `THINK_NB_MODEL`), starts importing litellm on a daemon thread
    (`think_nb.models.litellm_env.preload_for`), so the first turn does not wait for it; the
    embedded model needs no litellm. A `UserError` in a cell then shows as its one-line message
    (`think_nb.frontends.usage_errors`). The cell returns at once."""
    import os

    from think_nb.agent import Think
    from think_nb.frontends import usage_errors
    from think_nb.frontends.magic.core import register
    from think_nb.models.litellm_env import preload_for
    from think_nb.models.resolve import LOCAL_MODEL

    register(ipython)
    usage_errors.install(ipython)  # a UserError shows its one-line message, not think_nb's frames
    # not the embedded model: it loads when an agent that uses it is created (a notebook whose agents
    # override get_model() with a hosted or scripted model never holds its ~300 MiB)
    preload_for(Think.default_model or os.environ.get("THINK_NB_MODEL") or LOCAL_MODEL, embedded=False)
