"""The exceptions think_nb raises. Messages name the identifier and end with the fix.

A failed turn blames one of three sources, each with its own one-line form (the turn's
`TurnResult.error`, its `error` chunk, the turn log and `on_chat_error(error)` all use it;
`think_nb.turns.blame` picks the type, the original exception is the `__cause__`):

- `ModelError`: the model call raised (the provider, litellm, the in-process model):
  `Model '<model>' failed: <what>; <fix>. (<provider's words>)` (`think_nb.models.errors`).
- `HookError`: user code raised or returned something unusable (a hook, an overridable method
  of the agent, a context provider, a callback given to the session):
  `<Class>.<method>()[ for <what>] raised KeyError: 'x'`, e.g. `Calc.get_tools() raised
  KeyError: 'missing'` or `Calc.before_tool_call() for tool 'add' raised ValueError: no`.
- `InternalError`: think_nb's own code failed: `think_nb internal error in <where>: <exc>;
  please report it` (the traceback is logged on the `think_nb` logger).

A tool that raises does not end the turn: its error is the tool's `output-error`, which the
model reads. `UserError` (bad input to think_nb's API) keeps its own message.
"""

from __future__ import annotations

from typing import Any


class ThinkError(Exception):
    """Base class of every think_nb error."""


class UserError(ThinkError):
    """think_nb was used wrongly (bad agent name, bad tool, bad option); the message says how to fix it."""


class ModelError(ThinkError):
    """The model could not be reached or rejected the call (litellm or provider failure). A turn's
    model call that raised is reported as `Model '<model>' failed: ...` with the model's exception
    as `__cause__`.

    Attributes:
        classification: `"context_overflow"` when the turn's context-overflow recovery classified
            it so and could not save the turn (Think's `ChatErrorContext.classification`;
            `think_nb.turns.overflow`), else None.
    """

    classification: str | None = None


class HookError(ThinkError):
    """User code raised (or returned something unusable); the turn ends with status `error` (a
    tool hook's failure, `before_tool_call` / `after_tool_call`, fails only its call instead).

    `str(error)` is `<owner>.<method>()[ for <subject>] <detail>`, e.g. `Calc.get_tools() raised
    KeyError: 'missing'`; the exception user code raised is the `__cause__`.

    Attributes:
        method: the hook, method or callable that failed (`get_tools`, `before_tool_call`, `get`).
        detail: what went wrong, e.g. `raised KeyError: 'missing'` or `returned 3; return ...`.
        owner: the name of the class that defines `method`, or None when the raiser did not know
            it (a method of the agent: the turn that reports the error names the agent's class,
            `qualify`).
        subject: what the call was about, e.g. `tool 'add'` or `context block 'memory'`, or None.
    """

    def __init__(self, method: str, detail: str, *, owner: str | None = None, subject: str | None = None) -> None:
        super().__init__(method, detail)
        self.method = method
        self.detail = detail
        self.owner = owner
        self.subject = subject

    @property
    def who(self) -> str:
        """`<owner>.<method>()[ for <subject>]`: what failed."""
        name = f"{self.owner}.{self.method}()" if self.owner else f"{self.method}()"
        return f"{name} for {self.subject}" if self.subject else name

    def qualify(self, agent: Any) -> HookError:
        """Name the class of `agent` that defines `method` when the raiser did not and that class
        is not think_nb's own (returns self)."""
        if self.owner is None:
            cls = defining_type(agent, self.method)
            self.owner = cls.__name__ if cls is not None and not is_think_nb(cls) else None
        return self

    def __str__(self) -> str:
        return f"{self.who} {self.detail}"


class InternalError(ThinkError):
    """think_nb's own code failed (a bug): `think_nb internal error in <where>: <Type>: <message>;
    please report it`. The failure is the `__cause__`; its traceback is logged.

    Attributes:
        where: the innermost think_nb function the failure passed through, e.g.
            `think_nb.messages.accumulator.MessageAccumulator.apply`.
    """

    def __init__(self, where: str, cause: BaseException) -> None:
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        text = f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__
        super().__init__(f"think_nb internal error in {where}: {text}; please report it")
        self.where = where
        self.__cause__ = cause


def describe(exc: BaseException) -> str:
    """`"<Type>: <message>"` of `exc`, for a tool's `output-error` or a hook's error, that never raises.

    A user's exception whose `__str__` raises (or returns a non-string) is described by its
    `repr`, then by its type alone: describing a failure must not become a second one.
    """
    name = type(exc).__name__
    for render in (str, repr):
        try:
            text = render(exc)
        except BaseException:  # noqa: BLE001 - any __str__/__repr__ of user code
            continue
        if isinstance(text, str):
            return f"{name}: {text}" if text else name
    return f"{name}: (its message could not be shown: its __str__ raised)"


class ToolRaised(Exception):
    """A tool function raised an exception that must not cross an `await` as itself.

    `GeneratorExit`, `StopIteration` and `StopAsyncIteration` mean something to coroutines and
    generators: raised by a tool, they would close the turn's coroutines or turn into
    `RuntimeError`. `Tool.invoke` wraps them in this (the original is `original` and the
    `__cause__`) so they reach the call's `output-error` like any other exception.
    """

    def __init__(self, original: BaseException) -> None:
        super().__init__(describe(original))
        self.original = original


def is_think_nb(obj: Any) -> bool:
    """True when `obj` (a class or function) is defined in the think_nb package: its failures are
    think_nb's own (internal), not user code's."""
    module = getattr(obj, "__module__", None) or ""
    return module == "think_nb" or module.startswith("think_nb.")


def defining_type(obj: Any, method: str) -> type | None:
    """The class in `type(obj)`'s MRO that defines `method`, or None."""
    return next((cls for cls in type(obj).__mro__ if method in vars(cls)), None)
