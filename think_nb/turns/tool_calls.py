"""Running the model's tool calls for one step.

Calls of one step run concurrently. For each: `before_tool_call` may allow (optionally with a
new input), block (the reason becomes the output) or substitute an output; a tool that needs
approval does not run, the stream emits `tool-approval-request` and the turn pauses there
(Think's `needsApproval`); a tool that raises, an unknown tool or invalid input becomes a
`tool-output-error` whose text goes back to the model, and the turn goes on; `after_tool_call`
sees every outcome with its duration in milliseconds, before the call's result chunk is emitted
(in step mode, what the user leaves in its `output` / `success` / `error` is the call's result).
A `before_tool_call`, `after_tool_call` or `needs_approval` predicate that raises fails its call
the same way (the text names the hook), never the turn (Think: a throw becomes the tool's
error), so a failing hook never leaves its call without a result. Calls a tool makes from inside
its own run (the `execute` tool's inner calls, `call_inner`) go through the same two hooks. A
streaming tool (an async generator) emits each value it yields as a preliminary
`tool-output-available`; its last value is the output.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from think_nb import events
from think_nb.aio import maybe_await
from think_nb.errors import ToolRaised, describe
from think_nb.messages.ids import new_id
from think_nb.models.stream import ToolCall
from think_nb.tools.tool import (
    CURRENT_TOOL_CALL,
    CURRENT_TOOL_EDITED,
    CURRENT_TOOL_RUNNER,
    ApprovalRequired,
    StopTurn,
    Tool,
    ToolInputError,
    dump_output,
    dump_output_later,
)
from think_nb.turns.hooks import HookError

if TYPE_CHECKING:  # the tool hooks' types load with a turn's first tool call
    from think_nb.turns.tool_hooks import ToolCallContext, ToolCallDecision

Emit = Callable[[dict], Awaitable[None]]


async def needs_approval(tool: Tool, arguments: dict) -> bool:
    """Evaluate a tool's `needs_approval` (bool, or predicate on the validated input, sync or async)."""
    flag = tool.needs_approval
    return bool(await maybe_await(flag(arguments)) if callable(flag) else flag)


async def approval_gate(tool: Tool, call_id: str, arguments: dict, messages: list[dict]) -> tuple[bool, dict | None]:
    """`(ask, descriptor)` for a gated tool's call: a tool with its own `approval_gate` (an action,
    `think_nb.actions.compile.ActionTool`) decides both, the descriptor (Think's approval descriptor)
    riding on the `tool-approval-request`; any other tool's `needs_approval` decides, no descriptor."""
    gate = getattr(tool, "approval_gate", None)
    if gate is not None:
        decided: tuple[bool, dict | None] = await gate(call_id, arguments, messages)
        return decided
    return await needs_approval(tool, arguments), None


@dataclass
class StepTools:
    """Runs one step's tool calls for an agent: `await StepTools(...).run(calls)`."""

    hooks: Any  # the turn's HookSite
    tools: dict[str, Tool]
    emit: Emit
    messages: list[dict]
    step_number: int = 0
    fork: Any = None
    """A forked turn's `think_nb.turns.fork.ForkPlan`: a call it has a recorded result for gets that
    result instead of running (after the approval gate and `before_tool_call`)."""

    async def run(self, calls: list[ToolCall]) -> tuple[list[dict], bool]:
        """Returns (results as `{toolCallId, toolName, output | errorText}` in call order,
        paused: True when a call awaits approval or a client tool's result, so the turn must
        stop after this step)."""
        outcomes = await run_all([self._one(call) for call in calls])
        return [r for r in outcomes if r is not None], any(r is None for r in outcomes)

    async def _one(self, call: ToolCall) -> dict | None:
        base = {"toolCallId": call.id, "toolName": call.name}
        if call.error is not None:  # already reported as tool-input-error
            return {**base, "errorText": call.error}
        tool = self.tools.get(call.name)
        arguments = call.input or {}
        if tool is not None and tool.client:  # runs in the panel; its result comes back as tool_result
            return None
        if tool is not None and tool.needs_approval:
            await tool.prepare()
            try:
                validated = tool.validate(arguments)  # the predicate sees what the tool would run with
            except ToolInputError:
                return await self.execute(call.id, call.name, arguments, tool)  # an output-error; nothing runs
            try:
                gated, descriptor = await approval_gate(tool, call.id, validated, self.messages)
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except BaseException as exc:  # noqa: BLE001 - a failing predicate fails the call, never opens it
                error = f"needs_approval({call.name!r}) raised {describe(exc)}; the tool did not run."
                await self.emit({"type": "tool-output-error", "toolCallId": call.id, "errorText": error})
                return {**base, "errorText": error}
            if gated:
                approval_id = new_id("approval")
                request: dict[str, Any] = {"type": "tool-approval-request", "approvalId": approval_id,
                                           "toolCallId": call.id}
                if descriptor is not None:
                    request["approvalDescriptor"] = descriptor
                await self.emit(request)
                _approval_requested(call.id, call.name, approval_id)
                return None
        return await self.execute(call.id, call.name, arguments, tool)

    async def execute(self, call_id: str, name: str, arguments: dict, tool: Tool | None, *,
                      edited: bool = False) -> dict | None:
        """Decide (before_tool_call), run, report (after_tool_call), then emit the call's one result
        chunk. Returns `{toolCallId, toolName, output | errorText}`, or None: the tool paused its call
        for approval (`ApprovalRequired`, e.g. a gated call inside `execute`).

        `edited`: the user approved `arguments` in place of the model's input (the tool reads
        `CURRENT_TOOL_EDITED`). A tool raising `StopTurn` fails its call with its text, then the
        turn ends `aborted` (a kernel interrupt inside `run_code`). A `before_tool_call` or
        `after_tool_call` that raises (or returns something unusable) fails this call only, as in
        Think: its `HookError` text (naming the class and the hook) is the call's `output-error`,
        which the model reads, and the turn goes on; `after_tool_call` still sees a failed
        `before_tool_call` (`success=False`), and a failed `after_tool_call` replaces the result."""
        from think_nb.turns.tool_hooks import ToolCallContext  # built with a turn's first tool call

        ctx = ToolCallContext(name, call_id, arguments, self.messages, self.step_number)
        started = called = time.perf_counter()
        base = {"tool_call_id": call_id, "tool_name": name, "step": self.step_number}
        events.emit("chat:tool:call", base)
        try:
            decision = await self._decide(ctx, name)
        except HookError as exc:
            outcome: tuple[bool, Any, str | None] = (False, None, self._hook_failed(exc, "the tool did not run"))
            arguments = ctx.input
        else:
            arguments = decision.input if decision.input is not None else ctx.input
            started = time.perf_counter()
            ran = await self._run(decision, name, arguments, tool, call_id, edited)
            if ran is None:
                return None
            outcome = ran
        success, output, error = await self._reported(name, call_id, arguments, outcome, started)
        if success:
            await self.emit({"type": "tool-output-available", "toolCallId": call_id, "output": output})
        else:
            await self.emit({"type": "tool-output-error", "toolCallId": call_id, "errorText": error})
        events.emit("chat:tool:result", {**base, "state": "output-available" if success else "output-error",
                                         "duration_ms": round((time.perf_counter() - called) * 1000, 3),
                                         **({} if success else {"error": error})})
        result = {"toolCallId": call_id, "toolName": name}
        return {**result, "output": output} if success else {**result, "errorText": error}

    async def _decide(self, ctx: ToolCallContext, name: str) -> ToolCallDecision:
        """Fire `before_tool_call`; its value as a decision. Raises `HookError` (the hook raised or
        returned something unusable)."""
        from think_nb.turns.tool_hooks import ToolCallDecision

        value = await self.hooks.fire("before_tool_call", ctx, step=self.step_number, tool=name)
        return ToolCallDecision.coerce(value, name)

    async def _run(self, decision: ToolCallDecision, name: str, arguments: dict, tool: Tool | None,
                   call_id: str, edited: bool) -> tuple[bool, Any, str | None] | None:
        """The call's `(success, output, error)` (see `_outcome`), or None when the tool paused the
        call for approval (the `tool-approval-request` is emitted here)."""
        if decision.action != "allow":  # stored with the message: a panel says the tool did not run
            await self.emit({"type": "data-tool-decision", "id": call_id, "data": {
                "toolCallId": call_id, "action": decision.action, "reason": decision.reason}})
        token = CURRENT_TOOL_CALL.set(call_id)
        runner_token = CURRENT_TOOL_RUNNER.set(self)
        edited_token = CURRENT_TOOL_EDITED.set(bool(edited))
        try:
            return await self._outcome(decision, name, arguments, tool, call_id)
        except ApprovalRequired as pause:
            await self.emit({"type": "tool-approval-request", "approvalId": pause.approval_id, "toolCallId": call_id,
                             "approvalDescriptor": pause.descriptor})
            _approval_requested(call_id, name, pause.approval_id)
            return None
        except StopTurn as stop:  # the call fails with its text, then the turn ends as Stop ends it
            await self.emit({"type": "tool-output-error", "toolCallId": call_id, "errorText": str(stop)})
            raise asyncio.CancelledError(str(stop)) from None
        finally:
            CURRENT_TOOL_EDITED.reset(edited_token)
            CURRENT_TOOL_RUNNER.reset(runner_token)
            CURRENT_TOOL_CALL.reset(token)

    async def _reported(self, name: str, call_id: str, arguments: dict, outcome: tuple[bool, Any, str | None],
                        started: float, parent: str | None = None) -> tuple[bool, Any, str | None]:
        """Fire `after_tool_call` with `outcome` (`(success, output, error)`) and its duration;
        returns `outcome` itself, or, when the hook raised (`HookError`), a new failed outcome whose
        error is the hook's."""
        from think_nb.turns.tool_hooks import ToolCallResultContext

        success, output, error = outcome
        result_ctx = ToolCallResultContext(name, call_id, arguments, success, output, error,
                                           (time.perf_counter() - started) * 1000, self.step_number,
                                           parent_tool_call_id=parent)
        try:
            await self.hooks.fire("after_tool_call", result_ctx, step=self.step_number, tool=name)
        except HookError as exc:
            return False, None, self._hook_failed(exc, "the call's result was discarded")
        if self.hooks.stepper is not None and parent is None:  # step mode: the result as the user left it
            edited = (bool(result_ctx.success), result_ctx.output, result_ctx.error)
            if edited != outcome:
                return (True, dump_output(edited[1]), None) if edited[0] else \
                    (False, None, str(edited[2] or "The tool failed."))
        return outcome

    def _hook_failed(self, exc: HookError, consequence: str) -> str:
        """The `output-error` text of a call whose tool hook failed: the hook's error (naming the
        agent's class and the hook, `HookError.qualify`) and what became of the call."""
        return f"{exc.qualify(self.hooks.host.agent)}; {consequence}."

    async def call_inner(self, parent_call_id: str, call_id: str, name: str, arguments: dict,
                         run: Callable[[dict], Awaitable[Any]]) -> Any:
        """Run a call a tool makes from inside its own run (the `execute` tool's `tools.add(...)`)
        through the same hooks as a direct call: `before_tool_call` may allow (with a new input),
        block (the reason, or Think's default text, is the call's value) or substitute a value;
        `after_tool_call` reports the outcome. Both contexts carry `parent_tool_call_id`. No chunk
        is emitted (the inner call has no part of its own).

        Args:
            parent_call_id: the running tool's call id. call_id: the inner call's id
                (`<parent>.<n>`, n counting the parent's inner calls from 1).
            name, arguments: the inner tool and its input. run: `await run(input)` runs it.

        Returns the call's value; raises what `run` raised (after `after_tool_call`). A tool hook
        that raises fails this inner call only, as it fails a direct call: `ToolHookFailed` (its
        text the direct call's `output-error` text) is raised to the calling code, and the turn
        goes on."""
        from think_nb.turns.tool_hooks import ToolCallContext

        ctx = ToolCallContext(name, call_id, arguments, self.messages, self.step_number,
                              parent_tool_call_id=parent_call_id)
        started = time.perf_counter()
        output: Any = None
        failure: BaseException | None
        try:
            decision = await self._decide(ctx, name)
        except HookError as exc:
            arguments, failure = ctx.input, ToolHookFailed(self._hook_failed(exc, "the tool did not run"))
        else:
            arguments = decision.input if decision.input is not None else ctx.input
            started = time.perf_counter()
            output, failure = await _inner_outcome(decision, name, arguments, run)
        outcome = (failure is None, output, None if failure is None else _failure_text(failure))
        reported = await self._reported(name, call_id, arguments, outcome, started, parent=parent_call_id)
        if reported is not outcome:  # after_tool_call failed: its error replaces the outcome
            failure = ToolHookFailed(reported[2])
        if failure is not None:
            raise failure
        return output

    async def _outcome(self, decision: ToolCallDecision, name: str, arguments: dict,
                       tool: Tool | None, call_id: str = "") -> tuple[bool, Any, str | None]:
        if decision.action == "block":
            return True, decision.reason or f"Tool {name!r} was blocked by before_tool_call.", None
        if decision.action == "substitute":
            return True, dump_output(decision.output), None
        if self.fork is not None:
            recorded = self.fork.recorded_outcome(call_id, name, arguments)
            if recorded is not None:  # a forked turn: the recorded result, and what the call emitted
                for chunk in recorded[1]:
                    await self.emit(chunk)
                return recorded[0]
        try:
            if tool is None:
                available = ", ".join(sorted(self.tools)) or "none"
                raise LookupError(f"There is no tool named {name!r}; available tools: {available}.")
            if tool.streaming:  # each yield is a preliminary output; the last one is the result
                last = None
                async for value in tool.stream(arguments):
                    last = await dump_output_later(value)
                    await self.emit({"type": "tool-output-available", "toolCallId": call_id, "output": last,
                                     "preliminary": True})
                return True, last, None
            return True, await dump_output_later(await tool.invoke(arguments)), None
        except (asyncio.CancelledError, KeyboardInterrupt, ApprovalRequired, HookError, StopTurn):
            raise  # an abort, or the kernel's interrupt: the turn ends `aborted`; a pause (see execute); a
            # turn hook failing while the tool runs (`on_chunk` on a preliminary output) ends the turn
        except ToolRaised as exc:
            return False, None, describe(exc.original)
        except BaseException as exc:  # noqa: BLE001 - any failure (SystemExit too) goes back to the model
            return False, None, describe(exc)


def _approval_requested(call_id: str, name: str, approval_id: Any) -> None:
    events.emit("chat:approval:requested", {"tool_call_id": call_id, "tool_name": name, "approval_id": approval_id})


class ToolHookFailed(Exception):
    """A `before_tool_call` / `after_tool_call` hook failed for a call a tool makes from its run
    (`StepTools.call_inner`): raised to the calling code; its text names the hook and says what
    became of the call, as a direct call's `output-error` does."""


async def _inner_outcome(decision: ToolCallDecision, name: str, arguments: dict,
                         run: Callable[[dict], Awaitable[Any]]) -> tuple[Any, BaseException | None]:
    """`(value, failure)` of an inner call under `decision` (see `StepTools.call_inner`)."""
    if decision.action == "block":
        return decision.reason or f"Tool {name!r} was blocked by before_tool_call.", None
    if decision.action == "substitute":
        return dump_output(decision.output), None
    try:
        return await run(arguments), None
    except (asyncio.CancelledError, KeyboardInterrupt, ApprovalRequired, HookError):
        raise
    except BaseException as exc:  # noqa: BLE001 - reported to after_tool_call, then raised to the code
        return None, exc if isinstance(exc, Exception) else ToolRaised(exc)  # SystemExit & co. too


def _failure_text(failure: BaseException) -> str:
    """What `after_tool_call` reads as an inner call's `error`."""
    if isinstance(failure, ToolHookFailed):
        return str(failure)
    return describe(failure.original if isinstance(failure, ToolRaised) else failure)


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


async def _contained(coro: Awaitable[Any]) -> Any:
    try:
        return await coro
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # noqa: BLE001 - handed to run_all's caller, see there
        return _Raised(exc)


async def run_all(coros: list[Awaitable[Any]]) -> list[Any]:
    """Run `coros` concurrently (one step's tool calls); returns their results in order.

    The first failure is raised here, in the caller's task, and cancels the others. Unlike
    `asyncio.gather`, nothing is ever raised out of a child task: a `KeyboardInterrupt` or
    `SystemExit` leaving a task stops the event loop itself (the kernel's), not just the turn.
    """
    tasks = [asyncio.ensure_future(_contained(coro)) for coro in coros]
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task.cancelled():
                    raise asyncio.CancelledError("a tool call was cancelled")
                if isinstance(task.result(), _Raised):
                    raise task.result().exc
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            task.cancel()
