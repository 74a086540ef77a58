"""Functions → tools: JSON schema from type hints and docstrings (think_nb.tools)."""

from typing import Literal

import pydantic
import pytest

from think_nb import Tool, tool
from think_nb.errors import UserError
from think_nb.tools import resolve_tools
from think_nb.tools.tool import ToolInputError


def test_schema_from_hints_defaults_and_google_docstring() -> None:
    @tool
    def search(query: str, limit: int = 5, kind: Literal["web", "news"] = "web") -> list[str]:
        """Search the web.

        Args:
            query: what to look for.
            limit: how many results.
        """
        return []

    assert search.schema() == {"type": "function", "function": {
        "name": "search", "description": "Search the web.",
        "parameters": {"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "what to look for."},
            "limit": {"type": "integer", "default": 5, "description": "how many results."},
            "kind": {"type": "string", "enum": ["web", "news"], "default": "web"},
        }}}}


def test_decorator_options_and_pydantic_model_parameters() -> None:
    class Point(pydantic.BaseModel):
        x: float
        y: float

    @tool(name="plot_point", description="Plot one point.", needs_approval=True)
    def plot(p: Point) -> str:
        return f"{p.x},{p.y}"

    assert (plot.name, plot.description, plot.needs_approval) == ("plot_point", "Plot one point.", True)
    assert plot.parameters["properties"]["p"] == {"$ref": "#/$defs/Point"}
    assert plot.validate({"p": {"x": "1", "y": 2}}) == {"p": Point(x=1, y=2)}


async def test_invoke_sync_on_a_thread_and_async_directly() -> None:
    import threading

    main = threading.get_ident()

    @tool
    def where() -> bool:
        """Which thread."""
        return threading.get_ident() == main

    @tool
    async def double(n: int) -> int:
        """Double."""
        return n * 2

    assert await where.invoke({}) is False
    assert await double.invoke({"n": "21"}) == 42


def test_invalid_input_names_the_field() -> None:
    @tool
    def add(a: float, b: float) -> float:
        """Add."""
        return a + b

    with pytest.raises(ToolInputError, match=r"Invalid input for tool 'add': b: Field required"):
        add.validate({"a": 1})


def test_every_problem_is_listed_in_one_error() -> None:
    def bad(*args, **kwargs):  # deliberately untyped: the tool is refused
        """Bad."""

    with pytest.raises(UserError) as info:
        tool(bad, name="bad name!")
    assert str(info.value) == (
        "tool 'bad name!': parameter 'args': *args/**kwargs cannot be described to a model; "
        "parameter 'kwargs': *args/**kwargs cannot be described to a model; "
        "name='bad name!' must match ^[a-zA-Z0-9_-]{1,64}$ (letters, digits, _ and -, at most 64); pass name='...'.")


def test_resolve_tools_accepts_lists_dicts_and_functions() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    tools = resolve_tools({"p": ping, "q": tool(ping)})
    assert {name: (t.name, isinstance(t, Tool)) for name, t in tools.items()} == {"p": ("p", True), "q": ("q", True)}
    assert list(resolve_tools([ping])) == ["ping"]
    with pytest.raises(UserError, match="get_tools\\(\\) returned 3"):
        resolve_tools([3])


def test_a_parameter_without_a_type_hint_is_refused() -> None:
    def nohints(a, b: int):  # deliberately without a hint on `a`
        """Add."""

    with pytest.raises(UserError, match="parameter 'a' has no type hint; the model needs one"):
        tool(nohints)
