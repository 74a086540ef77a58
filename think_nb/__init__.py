"""think_nb: Cloudflare's Think chat-agent base class, rebuilt for Python and Jupyter.

Public names only; see `think_nb.agent.Think` to start.
"""

import os
from typing import Any

from think_nb._version import __version__
from think_nb.actions import ActionAuthorizationContext, ActionContext, action
from think_nb.agent import Think
from think_nb.binding import runtime_of
from think_nb.errors import HookError, InternalError, ModelError, UserError
from think_nb.messages.media import MediaEviction
from think_nb.messages.types import UIMessage, UIMessageChunk, UIMessagePart
from think_nb.models.resolve import LOCAL_MODEL, ModelConfig
from think_nb.schedules import ScheduledTask, ScheduledTaskContext
from think_nb.tools.client import client_tool
from think_nb.tools.tool import Tool, tool
from think_nb.turns.hooks import ToolCallContext, ToolCallDecision, ToolCallResultContext, TurnConfig, TurnContext
from think_nb.turns.overflow import ChatErrorContext, ContextOverflow, Proactive, default_context_overflow_classifier
from think_nb.turns.recovery import ChatRecoveryContext, RecoveryDecision
from think_nb.turns.result import StepContext, TurnResult
from think_nb.turns.signal import AbortController, AbortSignal
from think_nb.turns.steps import PrepareStepContext, StepConfig, has_tool_call, step_count_is
from think_nb.turns.structured import StructuredOutputError

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


def __getattr__(name: str) -> type:  # lazy: the widget imports anywidget/ipywidgets
    if name == "ChatPanel":
        from think_nb.panel.widget import ChatPanel

        return ChatPanel
    raise AttributeError(name)


def load_ipython_extension(ipython: Any) -> None:  # IPython's own signature
    """`%load_ext think_nb`: registers `%think` / `%%think` and, when the notebook's default model is
    hosted (`Think.default_model`, `THINK_NB_MODEL`), starts importing litellm on a daemon thread
    (`think_nb.models.litellm_env.preload_for`), so the first turn does not wait for it; the
    embedded model needs no litellm. A `UserError` in a cell then shows as its one-line message
    (`think_nb.frontends.usage_errors`). The cell returns at once."""
    from think_nb.agent import Think
    from think_nb.frontends import usage_errors
    from think_nb.frontends.magic.core import register
    from think_nb.models.litellm_env import preload_for

    register(ipython)
    usage_errors.install(ipython)  # a UserError shows its one-line message, not think_nb's frames
    # not the embedded model: it loads when an agent that uses it is created (a notebook whose agents
    # override get_model() with a hosted or scripted model never holds its ~300 MiB)
    preload_for(Think.default_model or os.environ.get("THINK_NB_MODEL") or LOCAL_MODEL, embedded=False)
