"""The small built-in tool set of the terminal main job (`think-nb chat`) and the demos."""

from __future__ import annotations

import datetime

from think_nb.tools.tool import tool


@tool
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


@tool
def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a * b


@tool
def current_time() -> str:
    """The current local date and time, ISO 8601."""
    return datetime.datetime.now().isoformat(timespec="seconds")


DEMO_TOOLS = [add, multiply, current_time]
