"""An action: a server tool with Think's guarantees, declared with `@action` (Think's `action({...})`).

    @action(description="Refund an order.", idempotency_key="order_id", approval="approval-gated",
            permissions=["orders:refund"], risk="high", summary="Refund the order")
    def refund(order_id: str, amount: float, ctx: ActionContext) -> dict:
        ...

The input schema comes from the type hints and the docstring through pydantic, as `@tool` makes
it (`think_nb.tools.tool.from_function`); a parameter annotated `ActionContext` is not part of the
input: it receives the call's context. The definition is checked here, once, and refused in one
line (`UserError`) naming what to change. `think_nb.actions.compile` turns an `Action` into the
tool a turn offers.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from think_nb.actions.context import ActionContext
from think_nb.errors import UserError
from think_nb.tools.tool import Tool, from_function

Kind = Literal["server", "approval-gated", "durable-pause"]
Risk = Literal["low", "medium", "high"]
APPROVALS = (None, "approval-gated", "durable-pause")
RISKS = (None, "low", "medium", "high")
DEFAULT_TIMEOUT_S = 30.0
"""Think's default action timeout (`timeoutMs` 30000), in seconds."""


@dataclass(frozen=True)
class Action:
    """A declared action (see the module docstring). Made by `action`; read by `think_nb.actions.compile`.

    Attributes:
        name: the tool name the model sees (the function's name unless `name=` was given).
        named: True when `name=` was given (then a `get_actions()` dict key does not rename it, as
            Think's `config.name ?? registrationName`).
        description: what the model reads (the docstring unless `description=`).
        function: the user's function, sync or async; called with the validated input (keyword
            arguments) and, under `context_param`, the `ActionContext`.
        tool: the input schema as a `Tool` (its `parameters`, and `validate`); it is never run.
        kind: `server` (runs inline), `approval-gated` (the user approves each call first, in the
            panel or with `approve(id)`), `durable-pause` (the call is parked in SQLite and the turn
            ends; `approve_execution(id)` runs it, also after a restart).
        approval_when: predicate on the input (`fn(input)` or `fn(input, ctx)`, sync or async)
            deciding per call whether the approval applies (False: the call runs inline), or None
            (always). Think's function-valued `approval`.
        idempotency_key: None (the ledger key is the tool call id), the name of an input field, or
            `fn(input)` / `fn(input, ctx)` returning the key text.
        permissions: the permissions a call needs: a tuple of strings, or `fn(input)` / `fn(input,
            ctx)` returning them (Think's `permissions`); checked by `authorize_action`.
        timeout: seconds a call may run (None: no limit); then its output is a `TimeoutError` envelope.
        risk: `low` | `medium` | `high` | None, shown with the approval (Think's `approvalRisk`).
        summary: the approval's one-line summary (Think's `approvalSummary`; default: `description`).
    """

    name: str
    named: bool
    description: str
    function: Callable[..., Any]
    tool: Tool
    context_param: str | None
    kind: Kind
    approval_when: Callable[..., Any] | None
    idempotency_key: str | Callable[..., Any] | None
    permissions: tuple[str, ...] | Callable[..., Any] | None
    timeout: float | None
    risk: Risk | None
    summary: str | None

    @property
    def approval_summary(self) -> str:
        return self.summary or self.description

    def __repr__(self) -> str:
        return f"<action {self.name!r} ({self.kind})>"


def action(function: Callable | None = None, *, name: str | None = None, description: str | None = None,
           idempotency_key: str | Callable[..., Any] | None = None, approval: Any = None,
           approval_when: Callable[..., Any] | None = None, permissions: Any = None,
           timeout: float | None = DEFAULT_TIMEOUT_S, risk: Risk | None = None, summary: str | None = None) -> Any:
    """Make an `Action` from a function (Think's `action()`); bare (`@action`) or with options.

    Args:
        function: the action's function; its type hints give the input schema, its docstring the
            description. A parameter annotated `ActionContext` receives the call's context.
        name, description: default the function's name and docstring.
        idempotency_key: see `Action.idempotency_key` (Think's `idempotencyKey`; a Think string
            is a fixed key: here write `lambda input: "the-key"`).
        approval: None (`server`), "approval-gated" (or True) or "durable-pause" (Think's `kind`).
        approval_when: see `Action.approval_when`; only with an `approval`.
        permissions: a list of permission strings, or a function of the input returning them.
        timeout: seconds (default 30, Think's); None for no limit.
        risk, summary: shown with the approval request (Think's `approvalRisk`, `approvalSummary`).

    Returns:
        An `Action` (or, without `function`, a decorator that makes one). `get_actions()` returns them.

    Raises:
        UserError: one line naming the option or parameter to change.
    """
    def make(fn: Callable) -> Action:
        return _make(fn, name, description, idempotency_key, approval, approval_when, permissions, timeout, risk,
                     summary)
    return make(function) if function is not None else make


def _make(fn: Callable, name: str | None, description: str | None, idempotency_key: Any, approval: Any,
          approval_when: Any, permissions: Any, timeout: Any, risk: Any, summary: Any) -> Action:
    label = f"action {name or getattr(fn, '__name__', fn)!r}"
    if not callable(fn) or isinstance(fn, (Tool, Action)):
        raise UserError(f"@action needs a function, got {fn!r:.60}; decorate a def (not a @tool).")
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        raise UserError(f"{label}: the function yields, but an action returns one result; return it instead.")
    kind = _kind(label, approval, approval_when)
    if risk not in RISKS:
        raise UserError(f"{label}: risk={risk!r}; use 'low', 'medium', 'high' or None.")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise UserError(f"{label}: timeout={timeout!r}; give seconds as a number > 0 (default 30), or None for none.")
    if summary is not None and not isinstance(summary, str):
        raise UserError(f"{label}: summary={summary!r:.40} must be a string (one line shown with the approval).")
    schema_fn, context_param = _input_function(fn, label)
    try:
        tool = from_function(schema_fn, name=name, description=description)
    except UserError as exc:
        text = str(exc)
        raise UserError("action " + text[5:] if text.startswith("tool ") else text) from None
    properties = tool.parameters.get("properties", {})
    if isinstance(idempotency_key, str) and idempotency_key not in properties:
        raise UserError(f"{label}: idempotency_key={idempotency_key!r} names no input field (fields: "
                        f"{sorted(properties)}); name one, or pass a function of the input, e.g. "
                        f"idempotency_key=lambda input: {idempotency_key!r} for a fixed key.")
    if idempotency_key is not None and not (isinstance(idempotency_key, str) or callable(idempotency_key)):
        raise UserError(f"{label}: idempotency_key={idempotency_key!r:.40} must be an input field's name or a "
                        "function of the input.")
    return Action(tool.name, name is not None, tool.description, fn, tool, context_param, kind, approval_when,
                  idempotency_key, _permissions(label, permissions), None if timeout is None else float(timeout),
                  risk, summary)


def _kind(label: str, approval: Any, approval_when: Any) -> Kind:
    if approval is True:
        approval = "approval-gated"
    if approval is False:
        approval = None
    if approval not in APPROVALS:
        raise UserError(f"{label}: approval={approval!r}; use None (runs inline), 'approval-gated' (the user "
                        "approves each call) or 'durable-pause' (parked until approve_execution).")
    if approval_when is not None:
        if approval is None:
            raise UserError(f"{label}: approval_when= decides when the approval applies, so it needs "
                            "approval='approval-gated' or 'durable-pause'.")
        if not callable(approval_when):
            raise UserError(f"{label}: approval_when={approval_when!r:.40} must be a function of the input "
                            "returning True (ask) or False (run inline); for never, leave approval out.")
    return "server" if approval is None else approval


def _permissions(label: str, permissions: Any) -> tuple[str, ...] | Callable[..., Any] | None:
    if permissions is None or callable(permissions):
        return permissions
    if isinstance(permissions, (list, tuple, set, frozenset)) and all(isinstance(p, str) for p in permissions):
        return tuple(permissions)
    raise UserError(f"{label}: permissions={permissions!r:.60} must be a list of strings (e.g. ['orders:refund']) "
                    "or a function of the input returning one.")


def _input_function(fn: Callable, label: str) -> tuple[Callable, str | None]:
    """`fn`'s signature without its `ActionContext` parameter (what the input schema is made from),
    and that parameter's name (None when it takes none)."""
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:  # noqa: BLE001 - from_function reports unresolvable hints in its own words
        return fn, None
    signature = inspect.signature(fn)
    context = [n for n, p in signature.parameters.items() if hints.get(n) is ActionContext]
    if len(context) > 1:
        raise UserError(f"{label}: parameters {context} are all ActionContext; keep one.")
    if not context and "ctx" in signature.parameters and "ctx" not in hints:
        raise UserError(f"{label}: parameter 'ctx' has no type hint; write `ctx: ActionContext` to receive the "
                        "call's context (from think_nb import ActionContext), or rename it.")
    if not context:
        return fn, None

    def schema_only(**kwargs: Any) -> Any:  # pragma: no cover - never called: its signature is read
        raise NotImplementedError

    schema_only.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for n, p in signature.parameters.items() if n != context[0]])
    schema_only.__annotations__ = {n: h for n, h in hints.items() if n not in (context[0], "return")}
    schema_only.__name__ = getattr(fn, "__name__", "action")
    schema_only.__doc__ = fn.__doc__
    return schema_only, context[0]
