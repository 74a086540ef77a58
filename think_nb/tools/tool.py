"""One tool: a Python function plus its name, description, JSON schema and options.

The schema comes from the signature's type hints through pydantic (`create_model`), and
parameter descriptions from the Google/NumPy/reST docstring (docstring-parser), as
pydantic-ai's `function_schema` and llm's `Tool.function` do. Think's equivalent is an AI SDK
`tool({description, inputSchema, execute, needsApproval})`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import docstring_parser
import pydantic

from think_nb.errors import UserError


@dataclass
class Tool:
    """A tool the model can call.

    Attributes:
        name: the name the model sees (`^[a-zA-Z0-9_-]{1,64}$`).
        description: what the tool does, shown to the model.
        parameters: JSON schema (an object schema) of the input.
        function: the Python callable, sync or async; called with keyword arguments.
        needs_approval: bool, or a predicate on the input dict (sync or async); used by the
            approval flow (Think's `needsApproval`).
        client: True for a tool that runs in the browser (the panel), not in the kernel.
        js: for a Python-declared client tool, the body of an async JavaScript function of `input`.
    """

    name: str
    description: str
    parameters: dict
    function: Callable[..., Any] | None = None
    needs_approval: bool | Callable[[dict], Any] = False
    _model: type[pydantic.BaseModel] | None = field(default=None, repr=False)
    client: bool = False
    js: str | None = None

    def schema(self) -> dict:
        """The OpenAI/litellm tool declaration `{type: "function", function: {name, description, parameters}}`."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def validate(self, arguments: dict) -> dict:
        """Validate and coerce the model's arguments; raises `ToolInputError` naming the bad fields."""
        if self._model is None:
            return arguments
        try:
            return dict(self._model.model_validate(arguments))
        except pydantic.ValidationError as exc:
            raise ToolInputError(f"Invalid input for tool {self.name!r}: {_short(exc)}") from None

    async def invoke(self, arguments: dict) -> Any:
        """Run the tool with validated arguments. Sync functions run on a worker thread so the
        kernel's event loop is never blocked; async functions are awaited."""
        if self.function is None:
            raise UserError(f"Tool {self.name!r} has no Python function to run.")
        kwargs = self.validate(arguments)
        if inspect.iscoroutinefunction(self.function):
            return await self.function(**kwargs)
        result = await asyncio.to_thread(self.function, **kwargs)
        return await result if inspect.isawaitable(result) else result


class ToolInputError(ValueError):
    """The model's input does not match the tool's schema; the text goes back to the model."""


def _short(exc: pydantic.ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors())


def tool(function: Callable | None = None, *, name: str | None = None, description: str | None = None,
         needs_approval: bool | Callable[[dict], Any] = False) -> Any:
    """Make a `Tool` from a function. Use bare (`@tool`) or with options (`@tool(name=..., needs_approval=True)`).

    Args:
        function: the function; its type hints give the JSON schema, its docstring the
            description and the parameter descriptions.
        name: tool name; defaults to the function's `__name__`.
        description: defaults to the docstring's description.
        needs_approval: bool or predicate on the input dict (Think's `needsApproval`).

    Returns:
        A `Tool` (or, without `function`, a decorator that makes one).

    Raises:
        UserError: listing every problem (missing type hints, `*args`, bad name), one per line.
    """
    def make(fn: Callable) -> Tool:
        return from_function(fn, name=name, description=description, needs_approval=needs_approval)
    return make(function) if function is not None else make


def from_function(fn: Callable, *, name: str | None = None, description: str | None = None,
                  needs_approval: bool | Callable[[dict], Any] = False) -> Tool:
    """Build a `Tool` from a function (see `tool`)."""
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    params = {p.arg_name: p.description for p in doc.params}
    fields, problems = _fields(fn, params)
    tool_name = name or str(getattr(fn, "__name__", ""))
    if not tool_name.replace("_", "").replace("-", "").isalnum() or len(tool_name) > 64:
        problems.append(f"tool name {tool_name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$; pass name=...")
    if problems:
        raise UserError(f"Cannot make a tool from {fn!r}:\n" + "\n".join(f"- {p}" for p in problems))
    model = pydantic.create_model(f"{tool_name}_input", **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    text = description or "\n\n".join(filter(None, [doc.short_description, doc.long_description])) or tool_name
    return Tool(tool_name, text, schema, fn, needs_approval, model)


def _fields(fn: Callable, descriptions: dict[str, str | None]) -> tuple[dict, list[str]]:
    fields: dict[str, Any] = {}
    problems: list[str] = []
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception as exc:  # noqa: BLE001 - unresolvable string annotations
        hints, problems = {}, [f"type hints could not be resolved: {exc}"]
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            problems.append(f"parameter {param.name!r}: *args/**kwargs cannot be described to a model")
            continue
        if param.name not in hints:
            problems.append(f"parameter {param.name!r} has no type hint; the model needs one "
                            f"(e.g. `{param.name}: str`)")
            continue
        annotation = hints[param.name]
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, pydantic.Field(default, description=descriptions.get(param.name)))
    return fields, problems


def dump_output(output: Any) -> Any:
    """Make a tool's return value JSON-compatible (pydantic models, dataclasses, other objects → str)."""
    if isinstance(output, pydantic.BaseModel):
        return output.model_dump(mode="json")
    try:
        json.dumps(output)
        return output
    except (TypeError, ValueError):
        return pydantic.TypeAdapter(Any).dump_python(output, mode="json", fallback=str)
