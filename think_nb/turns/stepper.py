"""Step mode: run a turn that pauses before each hook, like a debugger stepping through code.

    stepper = agent.step("What is 2 plus 40?")    # or %think step AGENT MESSAGE
    event = stepper.next()                        # runs to the next pause; works without await
    event.ctx.system = "Answer in French."        # edit what the model will see, then go on
    event = stepper.next()                        # ... before_tool_call: event.substitute(42)
    stepper.run()                                 # finish without pausing (or stepper.cancel())

Pauses: `before_turn`, each `before_tool_call`, each `after_tool_call`, each `on_step_finish`,
`on_chat_error` (a failed turn) and `on_chat_response`. At `after_tool_call`, changing
`event.ctx.output` (or `success` / `error`) changes the call's result the model reads next. While
paused, the turn waits on the kernel's event loop; a synchronous
`next()` drives that loop until the next pause (nest_asyncio2, which ipykernel ≥ 7.4 ships, is
applied lazily to the running loop; outside a kernel the stepper owns a private loop). The
panel shows "paused at <hook>". The stored transcript records what really happened.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from think_nb.aio import script_loop
from think_nb.turns.result import TurnResult
from think_nb.turns.tool_hooks import ToolCallDecision


@dataclass
class HookEvent:
    """One pause: which hook, where in the turn, and its live context (edit it before resuming).

    Attributes:
        hook: `before_turn`, `before_tool_call`, `after_tool_call`, `on_step_finish`,
            `on_chat_response`, `done` (the turn ended; `result` is set) or `queued` (the turn
            waits behind another paused stepper's turn; `ctx` says which).
        step: the step number (0-based) or None.
        tool: the tool name for tool hooks, else None.
        ctx: the hook's context object (`TurnContext`, `ToolCallContext`, ...); edits apply.
        result: the `TurnResult` when `hook == "done"`.
    """

    hook: str
    step: int | None = None
    tool: str | None = None
    ctx: Any = None
    result: TurnResult | None = None
    decision: ToolCallDecision | None = field(default=None, repr=False)
    _resume: asyncio.Future | None = field(default=None, repr=False)

    def substitute(self, output: Any) -> None:
        """At `before_tool_call`: do not run the tool; `output` becomes its result."""
        self._expect("before_tool_call")
        self.decision = ToolCallDecision.substitute(output)

    def block(self, reason: str | None = None) -> None:
        """At `before_tool_call`: do not run the tool; `reason` becomes its output."""
        self._expect("before_tool_call")
        self.decision = ToolCallDecision.block(reason)

    def _release(self) -> None:
        """Let the paused turn go on (no-op when it already did)."""
        if self._resume is not None and not self._resume.done():
            self._resume.set_result(None)

    def _expect(self, hook: str) -> None:
        if self.hook != hook:
            raise ValueError(f"Only possible at {hook}; this pause is at {self.hook}.")

    def __await__(self):  # `await stepper.next()` works as well as `stepper.next()`
        if False:
            yield
        return self

    def _repr_html_(self) -> str:
        from think_nb.turns.stepper_view import render_event

        return render_event(self)

    def __repr__(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in (("step", self.step), ("tool", self.tool)) if v is not None)
        return f"<paused at {self.hook}{' (' + where + ')' if where else ''}>"


class Stepper:
    """Drives one turn pause by pause (see the module docstring). Create with `agent.step(message)`."""

    def __init__(self, engine: Any, message: Any) -> None:
        self.engine = engine
        self.events: list[HookEvent] = []
        self._auto = False
        self._current: HookEvent | None = None
        try:
            asyncio.get_running_loop()
            self._own_loop = None
        except RuntimeError:  # a script: the thread's one private loop, shared with agent.run()
            self._own_loop = script_loop()
        self._task: asyncio.Task = self._drive(self._start(message))

    # -- public ---------------------------------------------------------------------------
    @property
    def request_id(self) -> str:
        return self._request_id

    @property
    def done(self) -> bool:
        return self._task.done()

    def next(self) -> HookEvent:
        """Resume, run to the next pause, and return it (a `done` event when the turn has ended)."""
        return self._drive(self._anext())

    def run(self) -> TurnResult:
        """Finish the turn without pausing again; returns its `TurnResult`."""
        self._auto = True
        return self._drive(self._finish())

    def cancel(self) -> TurnResult:
        """Abort the turn (status `aborted`; the partial reply is kept)."""
        self.engine.abort_request(self._request_id)
        return self.run()

    # -- called by the turn (HookSite) ----------------------------------------------------------
    def pauses(self, hook: str) -> bool:
        """Whether the turn pauses at `hook` (every hook but `UNPAUSED`'s; a fork's stepper also
        pauses at its `before_step` fork point)."""
        from think_nb.turns.hooksite import UNPAUSED

        return hook not in UNPAUSED

    async def _pause(self, hook: str, ctx: Any, step: int | None, tool: str | None) -> Any:
        if self._auto:
            return None
        resume = asyncio.get_running_loop().create_future()
        event = HookEvent(hook, step, tool, ctx, _resume=resume)
        self.events.append(event)
        self._queue.append(event)  # concurrent tool calls may pause together: one at a time to the user
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self.engine.notify("on_paused", self._request_id, hook)
        try:
            await resume
        finally:
            self.engine.notify("on_paused", self._request_id, None)
        return event.decision

    # -- internals -------------------------------------------------------------------------------
    async def _start(self, message: Any) -> asyncio.Task:
        from think_nb.messages import new_id, user_message

        self._queue: list[HookEvent] = []
        self._waiter: asyncio.Future | None = None
        self._request_id = new_id("req")
        self.engine.steppers[self._request_id] = self
        message = user_message(message) if isinstance(message, str) else message
        return self.engine.start([message], self._request_id, trigger="step")

    def _resume_current(self) -> None:
        if self._current is not None:
            self._current._release()
        self._current = None

    async def _anext(self) -> HookEvent:
        self._resume_current()
        while not self._queue and not self._task.done():
            self._waiter = asyncio.get_running_loop().create_future()
            await asyncio.wait({self._waiter, self._task}, timeout=0.05, return_when=asyncio.FIRST_COMPLETED)
            blocker = self._blocked_by()
            if blocker is not None and not self._queue:  # waiting would never end: say so instead
                return HookEvent("queued", ctx=f"This turn waits behind {blocker.request_id}, which is paused; "
                                               "resume or finish that stepper first.")
        if self._queue:
            self._current = self._queue.pop(0)
            return self._current
        return HookEvent("done", result=self._task.result())

    def _blocked_by(self) -> Any:
        """The paused stepper whose turn holds the agent's queue ahead of this one, or None."""
        active = self.engine.queue.active
        if active is None or active.request_id == self._request_id:
            return None
        other = self.engine.steppers.get(active.request_id)
        return other if other is not None and (other._queue or other._current is not None) else None

    async def _finish(self) -> TurnResult:
        self._resume_current()
        for event in self._queue:
            event._release()
        self._queue.clear()
        return await self._task

    def _drive(self, coro: Any) -> Any:
        if self._own_loop is not None:
            return self._own_loop.run_until_complete(coro)
        loop = asyncio.get_running_loop()
        import nest_asyncio2

        nest_asyncio2.apply(loop)
        return loop.run_until_complete(coro)
