"""One tool: a Python function plus its name, description, JSON schema and options.

The schema comes from the signature's type hints through pydantic (`create_model`), and
parameter descriptions from the Google/NumPy/reST docstring (docstring-parser), as
pydantic-ai's `function_schema` and llm's `Tool.function` do. Think's equivalent is an AI SDK
`tool({description, inputSchema, execute, needsApproval})`.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from think_nb.errors import ToolRaised, UserError
from think_nb.jsonsafe import loads, to_json_value

if TYPE_CHECKING:
    import pydantic


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
    _make_model: Callable[[], type[pydantic.BaseModel] | None] | None = field(default=None, repr=False, compare=False)
    """Builds `_model` on first need (a `declared` tool: its schema is given, its model is not built until
    a call is validated)."""

    def __post_init__(self) -> None:
        if not valid_tool_name(self.name):
            raise UserError(f"tool name {self.name!r} is not allowed: names must match {TOOL_NAME.pattern} "
                            "(letters, digits, _ and -, at most 64); pass another name.")
        if not (isinstance(self.needs_approval, bool) or callable(self.needs_approval)):
            raise UserError(f"tool {self.name!r}: needs_approval={self.needs_approval!r} must be True, False or "
                            "a function of the input dict.")

    def schema(self) -> dict:
        """The OpenAI/litellm tool declaration `{type: "function", function: {name, description, parameters}}`."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}

    def validate(self, arguments: dict | str) -> dict:
        """Validate and coerce the model's arguments (a dict, or a JSON object as text: see
        `object_input`); raises `ToolInputError` naming the bad fields."""
        arguments = object_input(arguments)
        if self._model is None and self._make_model is not None:
            self._model, self._make_model = self._make_model(), None
        if self._model is None:
            return arguments  # type: ignore[return-value]  # a tool without a schema model: unchecked
        import pydantic

        try:
            return dict(self._model.model_validate(arguments))
        except pydantic.ValidationError as exc:
            raise ToolInputError(f"Invalid input for tool {self.name!r}: {_short(exc)}") from None

    async def prepare(self) -> None:
        """Build a `declared` tool's input model, on a worker thread (its first build imports pydantic:
        never on the kernel's loop). Called before a turn validates a call; a no-op once built."""
        if self._make_model is not None:
            make = self._make_model
            model = await asyncio.to_thread(make)
            if self._make_model is make:
                self._model, self._make_model = model, None

    @property
    def streaming(self) -> bool:
        """True for an async generator function: each value it yields is a preliminary output and
        the last one is the result (Think's `async function*` tools). Any other function that
        returns an async iterable does not stream: its result is the last value the iterable
        yields (Think collapses such a return, a `Promise<AsyncIterable>` or not, the same way)."""
        return inspect.isasyncgenfunction(self.function)

    async def stream(self, arguments: dict) -> AsyncIterator[Any]:
        """The values a streaming tool yields, with validated arguments (`invoke` for the others)."""
        if self.function is None:
            raise UserError(f"Tool {self.name!r} has no Python function to run.")
        if not self.streaming:
            yield await self.invoke(arguments)
            return
        await self.prepare()
        try:
            async for value in self.function(**self.validate(arguments)):
                yield value
        except _COROUTINE_SIGNALS as exc:
            raise ToolRaised(exc) from exc
        except RuntimeError as exc:  # PEP 479/525: an async generator's StopIteration/StopAsyncIteration
            if isinstance(exc.__cause__, _COROUTINE_SIGNALS):
                raise ToolRaised(exc.__cause__) from exc
            raise

    async def invoke(self, arguments: dict) -> Any:
        """Run the tool with validated arguments. Sync functions run on a worker thread so the
        kernel's event loop is never blocked; async functions are awaited; a streaming tool's
        result is the last value it yields (None if it yields nothing), and so is the result of a
        function that returns an async iterable (one with `__aiter__`), iterated on the loop."""
        if self.function is None:
            raise UserError(f"Tool {self.name!r} has no Python function to run.")
        if self.streaming:
            last = None
            async for last in self.stream(arguments):  # noqa: B007 - the last value is the result
                pass
            return last
        await self.prepare()
        kwargs = self.validate(arguments)
        try:
            if inspect.iscoroutinefunction(self.function):
                result = await self.function(**kwargs)
            else:
                result = await asyncio.to_thread(_call_in_thread, self.function, kwargs)
                result = await result if inspect.isawaitable(result) else result
            return await _last_value(result) if hasattr(type(result), "__aiter__") else result
        except _COROUTINE_SIGNALS as exc:
            raise ToolRaised(exc) from exc
        except RuntimeError as exc:  # PEP 479: a coroutine's StopIteration arrives as RuntimeError
            if isinstance(exc.__cause__, _COROUTINE_SIGNALS):
                raise ToolRaised(exc.__cause__) from exc
            raise


_COROUTINE_SIGNALS = (GeneratorExit, StopIteration, StopAsyncIteration)
"""Exceptions with a meaning to coroutines: a tool's are wrapped in `ToolRaised` where they are raised."""


async def _last_value(iterable: Any) -> Any:
    """The last value an async iterable yields (None if it yields nothing)."""
    last = None
    async for last in iterable:  # noqa: B007 - the last value is the result
        pass
    return last


def _call_in_thread(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """`function(**kwargs)` on a worker thread: a coroutine signal it raises is wrapped there, before
    asyncio's future carries it back (a `GeneratorExit` arriving through `await` closes the awaiting
    coroutines instead of being caught by them)."""
    try:
        return function(**kwargs)
    except _COROUTINE_SIGNALS as exc:
        raise ToolRaised(exc) from exc


TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

CURRENT_TOOL_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar("think_nb_tool_call", default=None)
"""The `toolCallId` of the call a tool function is running for (set by the engine around each call;
None outside a turn). A tool that keeps state per call (the `execute` tool's paused runs) reads it."""


CURRENT_TOOL_RUNNER: contextvars.ContextVar[Any] = contextvars.ContextVar("think_nb_tool_runner", default=None)
"""The turn's tool runner while a tool function runs (None outside a turn): a tool that calls other
tools (the `execute` tool) runs each through `await runner.call_inner(parent_call_id, inner_call_id,
name, input, run)`, so `before_tool_call` / `after_tool_call` see it as they see a direct call."""

CURRENT_TOOL_EDITED: contextvars.ContextVar[bool] = contextvars.ContextVar("think_nb_tool_edited", default=False)
"""True while a tool function runs with an input the user edited before approving it
(`approve(id, input=...)`): the arguments are the user's, not the model's (`run_code` reports it)."""


class StopTurn(Exception):
    """Raised by a running tool to fail its call with this text and end the turn `aborted`, as Stop
    does (`run_code` interrupted by the kernel's interrupt): the model is not called again."""


PAUSE_PREFIX = "tool-pause:"
"""`agent_state` key prefix of what a paused tool keeps to resume (`PAUSE_PREFIX + toolCallId`). The
engine deletes it when the call can no longer resume: denied, repaired (superseded by a new message,
or interrupted), or the conversation cleared."""


class ApprovalRequired(Exception):
    """Raised by a running tool to pause its call for the user's approval instead of finishing it.

    The engine emits `tool-approval-request` for the call (with `approval_id`, and `descriptor`
    stored on the part's `approval.descriptor`, Think's approval descriptor) and the turn pauses as
    for a gated call; after `approve()` the continuation runs the tool again with the same input and
    `CURRENT_TOOL_CALL`, and the tool resumes what it paused (the `execute` tool's inner calls).
    """

    def __init__(self, approval_id: str, descriptor: dict) -> None:
        super().__init__(f"approval {approval_id} required")
        self.approval_id, self.descriptor = approval_id, descriptor


def object_input(value: Any) -> Any:
    """A tool call's input as a JSON object: a string holding one (`'{"a": 1}'`: providers and
    proxies send the input that way, double-encoded) becomes that dict, as Think's
    `normalizeToolInput` parses it; anything else is returned unchanged (and fails validation)."""
    if not (isinstance(value, str) and value.lstrip().startswith("{")):
        return value
    try:
        parsed = loads(value)  # strict: NaN/Infinity are not JSON and would not persist
    except ValueError:
        return value
    return parsed if isinstance(parsed, dict) else value


def valid_tool_name(name: object) -> bool:
    """Whether `name` is a tool name every provider accepts (`^[a-zA-Z0-9_-]{1,64}$`)."""
    return isinstance(name, str) and TOOL_NAME.fullmatch(name) is not None


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


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
        UserError: at decoration time, in one line naming each bad parameter or `name=` (see `from_function`).
    """
    def make(fn: Callable) -> Tool:
        return from_function(fn, name=name, description=description, needs_approval=needs_approval)
    return make(function) if function is not None else make


def from_function(fn: Callable, *, name: str | None = None, description: str | None = None,
                  needs_approval: bool | Callable[[dict], Any] = False) -> Tool:
    """Build a `Tool` from a function (see `tool`).

    Raises:
        UserError: in one line, every problem found (each naming its parameter or `name=`): a
            bad name, a generator function, a parameter without a type hint or of a type
            pydantic cannot describe as JSON schema, `*args`/`**kwargs`.
    """
    if not callable(fn):
        raise UserError(f"@tool needs a function, got {fn!r}; decorate a def or pass function=...")
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    label = f"tool {tool_name!r}" if isinstance(tool_name, str) and tool_name else f"tool from {fn!r}"
    if inspect.isgeneratorfunction(fn):
        raise UserError(f"{label}: the function is a generator (it yields), and a streaming tool must be an async "
                        "generator (`async def` with `yield`); make it async or return the whole result.")
    import docstring_parser
    import pydantic

    doc = docstring_parser.parse(inspect.getdoc(fn) or "")  # both imported here: `declared` tools need neither
    params = {p.arg_name: p.description for p in doc.params}
    fields, problems = _fields(fn, params)
    if not valid_tool_name(tool_name):
        problems.append(f"name={tool_name!r} must match {TOOL_NAME.pattern} (letters, digits, _ and -, at most 64); "
                        "pass name='...'")
    model: type[pydantic.BaseModel] | None = None
    schema: dict[str, Any] = {}
    try:
        model = pydantic.create_model(f"{tool_name}_input", **fields)
        # defaults such as float('nan') become strict JSON
        schema = cast("dict[str, Any]", to_json_value(model.model_json_schema()))
    except Exception as exc:  # noqa: BLE001 - find the parameters at fault, only on this (rare) path
        reason = _one_line(exc).split(". ")[0]
        problems.extend(_schema_problems(fields) or [f"its input has no JSON schema ({reason})"])
    if problems:
        raise UserError(f"{label}: " + "; ".join(problems) + ".")
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    text = description or "\n\n".join(filter(None, [doc.short_description, doc.long_description])) or tool_name
    return Tool(tool_name, text, schema, fn, needs_approval, model)


def declared(fn: Callable, *, description: str, parameters: dict,
             needs_approval: bool | Callable[[dict], Any] = False) -> Tool:
    """A `Tool` for `fn` whose description and JSON schema are given, not derived: what `from_function(fn)`
    would make, its pydantic input model built only when a call is validated (`Tool.prepare`). For the
    tools think_nb offers by default (the workspace's, `think_nb.workspace.tools`): an agent that never
    calls them imports neither pydantic nor docstring-parser. The caller keeps the given schema equal to
    `from_function`'s (a test compares them)."""
    return Tool(fn.__name__, description, parameters, fn, needs_approval,
                _make_model=lambda: from_function(fn)._model)


def _fields(fn: Callable, descriptions: dict[str, str | None]) -> tuple[dict, list[str]]:
    import pydantic

    fields: dict[str, Any] = {}
    problems: list[str] = []
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception as exc:  # noqa: BLE001 - unresolvable string annotations
        hints, problems = {}, [f"type hints could not be resolved ({_one_line(exc)}); import the types they name"]
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


def _schema_problems(fields: dict[str, tuple[Any, Any]]) -> list[str]:
    """One problem per parameter whose type pydantic cannot validate or describe as JSON schema."""
    return [f"parameter {name!r} has type {_type_name(annotation)}, which has no JSON schema the model could "
            "fill; use str, int, float, bool, list, dict, a pydantic model or a dataclass"
            for name, (annotation, _) in fields.items() if not _has_json_schema(annotation)]


def _has_json_schema(annotation: Any) -> bool:
    """Whether pydantic can validate `annotation` and describe it as JSON schema."""
    import pydantic

    try:
        pydantic.TypeAdapter(annotation).json_schema()
    except Exception:  # noqa: BLE001 - PydanticSchemaGenerationError, PydanticInvalidForJsonSchema, ...
        return False
    return True


def _type_name(annotation: Any) -> str:
    return annotation.__qualname__ if isinstance(annotation, type) else _one_line(repr(annotation))


class Bounded:
    """A tool's output it already made strict JSON and bounded (an action's: `think_nb.actions.output`);
    `dump_output` keeps `value` as it is."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


async def dump_output_later(output: Any) -> Any:
    """`dump_output(output)`, in a worker thread when `output` is media (rendering a figure or encoding
    an image takes tens of milliseconds or more: never on the kernel's loop)."""
    from think_nb.messages import media

    if media.is_media(output):
        return await asyncio.to_thread(dump_output, output)
    return dump_output(output)


def dump_output(output: Any) -> Any:
    """A tool's return value as strict JSON (`think_nb.jsonsafe.to_json_value`: NaN/±Inf → null,
    datetimes → ISO text, sets → sorted lists, bytes → `{"type": "bytes", "base64": ...}`, pydantic
    models and dataclasses → objects, anything else → a bounded repr). What the stream, the store and
    the model see is this value. DataFrames, Series and large numpy arrays become bounded `table`
    objects and overlong values a `truncated` preview (`think_nb.data_context.tool_output`). Media (a
    matplotlib figure, a PIL image, image bytes, a list of those and text) become the AI SDK's content
    output, which a vision model receives as images (`think_nb.messages.media`; `dump_output_later`
    renders them off the event loop)."""
    if isinstance(output, Bounded):
        return output.value
    from think_nb.messages import media

    if media.is_media(output):
        return media.tool_content(output)
    from think_nb.data_context import tool_output

    return tool_output(output)
