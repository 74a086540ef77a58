"""One turn, start to finish: assemble → `before_turn` → steps (model call + tool calls) →
persist → report.

The same chunk stream feeds the accumulator (the persisted assistant UIMessage), every
subscribed listener (panels, the terminal, `chat()` callbacks) and `on_chunk`. The partial
message is persisted when the model's stream ends (before tools run), at every step boundary
and whatever ends the turn (finish, error, abort), so nothing streamed is lost and nothing stays
in a "streaming" state; a turn that fails first gives each call still without a result an
`output-error` (`UNSETTLED_TEXT`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from think_nb import channels, events, jsonsafe
from think_nb.actions.authorize import turn_grant
from think_nb.actions.pause import parked
from think_nb.errors import InternalError, ModelError
from think_nb.messages import media
from think_nb.messages.accumulator import SETTLED_TOOL_STATES, MessageAccumulator, is_tool_part, tool_name_of
from think_nb.messages.convert import to_model_messages
from think_nb.messages.ids import new_id
from think_nb.messages.media import MediaEviction
from think_nb.models import progress
from think_nb.models import usage as usage_model
from think_nb.models.litellm_env import get_litellm, preload_for
from think_nb.models.resolve import IN_PROCESS_PROVIDERS, ModelConfig, regenerate_options, resolve_model
from think_nb.models.sent import sent
from think_nb.models.stream import StepOutcome, stream_step
from think_nb.redact import env_secrets, scrub, secrets_of
from think_nb.tools import rpc_client
from think_nb.tools.collisions import keep_gates
from think_nb.tools.tool import CURRENT_TOOL_CALL
from think_nb.tools.toolset import resolve_tools
from think_nb.turns import assemble, blame, capabilities, overflow, stop, structured
from think_nb.turns.hooks import HookError, TurnConfig, TurnContext, call_hook
from think_nb.turns.hooksite import HookSite
from think_nb.turns.repair import USED_TEXT
from think_nb.turns.result import StepContext, TurnResult, TurnStatus
from think_nb.turns.tool_calls import StepTools, run_all
from think_nb.turns.trace import Tracer
from think_nb.turns.turn_record import Capture, class_version

if TYPE_CHECKING:
    from think_nb.conversation import Conversation
    from think_nb.store.agent import AgentStore
    from think_nb.turns.broadcast import Event
    from think_nb.turns.host import AgentHost
    from think_nb.turns.steps import PrepareStepContext, StepConfig


class TurnEngine(Protocol):
    """What a running turn reports to and reads from its engine (`think_nb.turns.engine.TurnEngine`
    is the one; declared here because the engine creates turns and this module must not import it back)."""

    host: AgentHost
    conversation: Conversation
    store: AgentStore
    steppers: dict[str, Any]
    current_turn: Any
    resolved_model: str | None
    resolved_tools: dict[str, Any] | None
    client_tool_names: set[str]
    rpc_tools: dict[str, dict[str, Any]]

    def publish_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None: ...
    def publish_deltas(self, request_id: str, deltas: list[dict], continuation: bool) -> None: ...
    def notify(self, event: Event, *args: Any) -> None: ...
    def replace_message(self, message: dict) -> None: ...
    def messages_changed(self) -> None: ...
    def save_assistant(self, message: dict, generation: int | None) -> None: ...

log = logging.getLogger("think_nb")
FINISH_REASONS = {"stop": "stop", "tool_calls": "tool-calls", "function_call": "tool-calls",
                  "length": "length", "content_filter": "content-filter"}
CONTINUE_TEXT = "Continue your previous response from exactly where it left off. Do not repeat any of it."
"""Think's continue checkpoint: sent (never stored) when a continuation's messages end with the assistant."""


HELD = frozenset({"text-delta", "reasoning-delta", "tool-input-delta"})
"""Chunks `Turn.emit` holds and publishes in runs (`Turn.release`)."""

HOLD_DELTAS = 256
"""Deltas held before they are published although the loop has not run (a model that never lets it
run); a run handed over at once (`Turn.emit_run`) may pass it by that run's length."""


UNSETTLED_TEXT = "The turn ended with an error before this call had a result."
"""The `output-error` of a call a failed turn left without a result (`Turn._settle_open_calls`)."""

STOPPED_RUNNING_TEXT = ("Interrupted: the user stopped the turn while this approved call ran; its result was not "
                        "recorded.")
"""The `output-error` of an approved call its continuation was stopped running (a tool that did not
say more itself: `run_code` says how long it ran, `think_nb.kernel.run`)."""

STOPPED_BEFORE_TEXT = ("Interrupted before it ran: the user stopped the turn as this approved call was starting; "
                       "the tool did not run. Ask for it anew if it should run.")
"""The `output-error` of an approved call whose continuation was stopped before it ran the call."""


EXTENSION_CHANGERS = ("load_extension",)
"""Model tools after which a turn merges its tools again (`think_nb.extensions.tools`)."""


class Turn:
    """Runs one admitted turn (the caller, `TurnEngine`, holds the agent's queue lock).

    Args:
        engine: the agent's `TurnEngine` (its `host` is the agent).
        request_id: the turn's request id.
        continuation: continue the last assistant message (a new message marked
            `metadata.continuation = True`).
        body: custom request body, shown to `before_turn`.
        trigger: `panel`, `cell`, `send`, `save_messages`, `programmatic`, `chat` or `continuation`.
        generation: the queue generation the turn was admitted in; after a clear nothing is persisted.
        output_type: a pydantic model class: a structured turn (`turns/structured.py`), unless
            `before_turn`'s `TurnConfig.output_type` replaces it.
        fork: a `think_nb.turns.fork.ForkPlan`: the turn re-runs a recorded one, reproducing it up
            to the fork point (recorded model outputs and tool results), live after it.
    """

    def __init__(self, engine: TurnEngine, request_id: str, *, continuation: bool = False, body: dict | None = None,
                 trigger: str = "programmatic", generation: int | None = None, output_type: Any = None,
                 fork: Any = None) -> None:
        self.engine = engine
        self.host = engine.host
        self.generation = generation
        self.request_id = request_id
        self.continuation = continuation
        self.body = body
        self.trigger = trigger
        self.acc = MessageAccumulator(new_id("msg"))
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        self.model: ModelConfig | None = None
        self._observe = self.host.observes("on_chunk")
        self._held: list[dict] = []  # deltas applied, not yet published (`emit`, `release`)
        self._release_due = False  # a `_release_now` callback waits on the loop
        self.step = 0
        self.tracer = Tracer(request_id)
        self.hooks = HookSite(self.host, self.tracer, engine.steppers.get(request_id), self.check_aborted)
        self.aborted = False
        self.approved_ran = False  # `_run_approved_tools` took this continuation's approved calls
        self.finish_reason = "stop"  # the AI SDK's finish reason of the last step (stored in the metadata)
        # credential values of this turn's model configs and of the environment (scrubbed from errors)
        self.secrets: set[str] = env_secrets()
        self.tracer.secrets = self.secrets  # one set: what the turn learns, the trace scrubs
        self.stalled: float | None = None  # the stall timeout (s) that ended the turn
        self._watchdog: asyncio.Task | None = None
        self.waiting: tuple[str, float] | None = None  # (what, trace ms) while the model path waits
        self.action_grant: Any = None  # authorize_turn's grant of this turn's actions (None: everything)
        self.reply_attachments: list[dict] = []  # what its actions attach (`ctx.attach_reply`): metadata
        self.wait_ended = 0.0  # time.monotonic() when the last wait ended (the stall watchdog skips waits)
        self.steps: list[StepContext] = []  # the finished steps, as on_step_finish saw them (before_step's ctx.steps)
        self.send_reasoning = True  # False: reasoning chunks reach neither the views nor the stored message
        self.output_type = output_type
        self.final: structured.FinalAnswer | None = None  # the hidden final-answer tool of a structured turn
        self.final_error: str | None = None  # why its last call was refused
        self.output: Any = None  # the validated answer of a structured turn (`TurnResult.output`)
        self.policy: channels.TurnPolicy | None = None  # the turn's channel policy (`_prepare`)
        self.overflow = overflow.Recovery(self)  # context-overflow recovery (`turns/overflow.py`)
        self.fork = fork
        self.capture = Capture(trigger, continuation)  # the turn's record (`turns/turn_record.py`)
        self.hooks.capture = self.capture
        self.parent_id = (engine.conversation.last or {}).get("id")  # the message this turn answers
        self.conversation_key = engine.store.messages.key
        self.compactions = len(engine.store.compactions().load())

    def scrubbed(self, chunk: dict) -> dict:
        """`chunk` with the turn's credential values scrubbed from its error text (a tool may echo
        the key it was given)."""
        if self.secrets and isinstance(chunk.get("errorText"), str):
            return {**chunk, "errorText": scrub(chunk["errorText"], self.secrets)}
        return chunk

    def abort(self) -> None:
        """Mark the turn aborted (`abort_request`). From now on nothing it produces is applied,
        recorded or broadcast, whether or not the code it awaits lets the cancellation through."""
        self.aborted = True

    def check_aborted(self) -> None:
        """Raise `CancelledError` when the turn was aborted (at every chunk and hook the engine controls)."""
        if self.aborted:
            raise asyncio.CancelledError("the turn was aborted")

    async def emit(self, chunk: dict) -> None:
        """Apply a chunk to this turn's message, record and broadcast it, show it to `on_chunk`.
        With `send_reasoning` off a reasoning chunk is applied (the turn's later steps send it back
        to the model, as the AI SDK's step loop does) and shown to `on_chunk` (Think's `onChunk`
        sees it too), but neither recorded nor broadcast, and the stored message leaves it out.

        A delta (`HELD`) is applied at once but held, with the deltas after it, until the turn's
        task lets the loop run, `HOLD_DELTAS` are held, or another chunk is emitted (`release`):
        then the trace and the stream recorder get the run at once, one clock reading for all
        (the recorder writes it before any view hears it, as every chunk). With an `on_chunk`
        hook nothing is held: each delta is published, then shown to the hook."""
        if self.aborted:
            raise asyncio.CancelledError("the turn was aborted")
        if chunk.get("type") in HELD and "errorText" not in chunk:
            capture = self.capture.chunks
            if capture is not None:  # a step's model output, for the turn's record
                capture.append(chunk)
            self.acc.apply(chunk)
            if self.send_reasoning or chunk["type"] != "reasoning-delta":
                if len(self._held) >= HOLD_DELTAS:
                    self.release()
                if not self._held:
                    self._release_soon()
                self._held.append(chunk)
            if self._observe:  # per chunk: its trace row exists when the hook's time is counted on it
                self.release()
                await self.hooks.fire("on_chunk", chunk, step=self.step)
            return
        self.release()
        chunk = self.scrubbed(chunk)
        if self.capture.chunks is not None:  # a step's model output, for the turn's record
            self.capture.chunks.append(chunk)
        elif _emitted_by_tool(chunk):  # a tool's own chunks (a sub-agent's progress), replayed with its result
            self.capture.emitted(CURRENT_TOOL_CALL.get(), chunk)
        self.acc.apply(chunk)
        if not self.send_reasoning and str(chunk.get("type", "")).startswith("reasoning-"):
            if self._observe:
                await self.hooks.fire("on_chunk", chunk, step=self.step)
            return
        await self.emit_broadcast(chunk)

    async def emit_run(self, chunks: list[dict]) -> None:
        """`emit` for a run of `text-delta` chunks of one part (`stream_step`'s `emit_run`): applied,
        kept for the turn's record and held at once (with an `on_chunk` hook, or aborted: `emit`
        one by one)."""
        if self.aborted or self._observe:
            for chunk in chunks:
                await self.emit(chunk)
            return
        capture = self.capture.chunks
        if capture is not None:  # a step's model output, for the turn's record
            capture.extend(chunks)
        self.acc.apply_run(chunks)
        held = self._held
        if not held:
            self._release_soon()
        held.extend(chunks)
        if len(held) >= HOLD_DELTAS:
            self.release()

    def publish(self, chunk: dict) -> None:
        """Record a chunk in the trace/recording and send it to every view (no hook: callable from
        sync code), after the deltas held before it."""
        self.release()
        self.tracer.chunk(chunk, self.step)
        self.engine.publish_chunk(self.request_id, chunk, self.continuation)

    def release(self) -> None:
        """Publish the held deltas (see `emit`), in order, as one run."""
        if self._held:
            held, self._held = self._held, []
            self.tracer.deltas(held, self.step)
            self.engine.publish_deltas(self.request_id, held, self.continuation)

    def _release_soon(self) -> None:
        """Release the held deltas when the loop next runs its callbacks, i.e. as soon as the
        turn's task waits (a hosted model's next network read, an in-process model's yield)."""
        if self._release_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop: the next other chunk, or `HOLD_DELTAS`, releases them
        self._release_due = True
        loop.call_soon(self._release_now)

    def _release_now(self) -> None:
        self._release_due = False
        try:
            self.release()
        except Exception:  # the recorder keeps what it could not write; the turn's next chunk raises it
            log.exception("could not record the stream of %s", self.request_id)

    async def run(self) -> TurnResult:
        """Run the turn; never raises for model, tool or hook failures (they end it with `error`).

        Outcomes: `completed`; `aborted` (`abort_request`, a cancelled task, or the kernel's
        interrupt — `KeyboardInterrupt` — while the turn runs: exactly one `abort` chunk, nothing
        after it); `error` (anything else raised, `BaseException`s from user code such as
        `SystemExit` included: an `error` chunk, `on_chat_error` called once; the error names its
        source, the model, user code or think_nb itself, `think_nb.turns.blame`; a call it left
        without a result gets an `output-error` first, `_settle_open_calls`).
        """
        self.engine.current_turn = self
        status: TurnStatus
        error: str | None = None
        try:
            with progress.reporting(self._waiting):
                await self._attempts()
            status = "aborted" if self.aborted else "completed"  # an abort the awaited code swallowed
        except (asyncio.CancelledError, KeyboardInterrupt):
            _uncancel()
            status = "aborted"
        except BaseException as exc:  # noqa: BLE001 - SystemExit & co. from user code end the turn, not the kernel
            if self.aborted:
                status = "aborted"
            else:
                await self._settle_open_calls()
                if self.acc.parts:
                    self._try_persist()  # Think: the partial is persisted before on_chat_error fires
                error = await self._report_error(exc)
                status = "error"
        finally:
            self.engine.current_turn = None
            if self.waiting is not None:  # an abort or error ended the wait
                self._waiting(None)
            if self._watchdog is not None:
                self._watchdog.cancel()
        if self.stalled is not None and status == "aborted":
            error = f"The model stream stalled: no chunk for {self.stalled:g} s."
            self.acc.message.setdefault("metadata", {})["interrupted"] = True
        if status == "aborted":
            self.aborted = True
            if self.continuation and not self.approved_ran:
                self._settle_unrun_approvals()
            reason = "stalled" if self.stalled is not None else "cancelled"
            self.publish({"type": "abort", "reason": reason})  # the one abort outcome; never applied
            self.acc.message.setdefault("metadata", {})["aborted"] = True  # a reloaded view shows it was stopped
        if error is not None:  # kept with the message, so a reloaded view still shows it
            self.acc.message.setdefault("metadata", {})["error"] = error
        message = None
        if self.acc.parts:
            failure = self._try_persist()
            if failure is None:
                message = self._stored_form()
            elif status == "completed":  # not stored is not completed: report it (on_chat_error once)
                status, error = "error", await self._report_error(failure, stage="persist")
        return TurnResult(self.request_id, status, error, message, self.continuation,
                          interrupted=self.stalled is not None and status == "aborted",
                          output=self.output if status == "completed" else None)

    async def _attempts(self) -> None:
        """`_run_steps`, and again from the start (`continuation` unchanged, `before_turn` again)
        each time the reactive context-overflow recovery discarded the partial and compacted the
        history after a failed model call (`think_nb.turns.overflow`)."""
        while True:
            try:
                await self._run_steps()
                return
            except ModelError as exc:
                if not await self.overflow.retry_after(exc):
                    raise
            self._start_over()

    def discard_partial(self) -> None:
        """Take this turn's stored partial reply out of the branch (an overflow's: Think does not
        keep it beside the retried answer) and tell the views. The message stays in memory: the
        turn stores it again if it ends without a retry."""
        if self.engine.conversation.discard(self.acc.message["id"]):
            self.engine.messages_changed()

    def _start_over(self) -> None:
        """Forget what the failed attempt produced: a new message, no steps, no usage."""
        self.acc = MessageAccumulator(new_id("msg"))
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        self.steps, self.step, self.finish_reason = [], 0, "stop"
        self.capture.flag("compacted")
        self.final, self.final_error, self.output = None, None, None
        self.reply_attachments = []

    def _waiting(self, what: str | None) -> None:
        """The model path waits for `what` (None: it stopped waiting; `think_nb.models.progress`):
        the ended wait becomes a `wait` trace row, and the views hear `on_waiting(request_id, what)`."""
        if self.waiting is not None:
            self.tracer.wait(self.waiting[0], self.step, self.waiting[1])
            self.wait_ended = time.monotonic()
        self.waiting = (what, self.tracer.now_ms()) if what else None
        self.engine.notify("on_waiting", self.request_id, what)

    # -- assembly -----------------------------------------------------------------------
    async def _prepare(self) -> tuple[str, list[dict], dict, TurnConfig]:
        host, engine = self.host, self.engine
        self.model = resolve_model(await call_hook(host.agent, "get_model"))  # a raise names get_model()
        if self.fork is not None and self.fork.live_model not in (None, "recorded"):
            self.model = resolve_model(self.fork.live_model)  # fork(model=...): the rest runs on it
        self.secrets |= secrets_of(self.model)
        engine.resolved_model = self.model.model
        preload_for(self.model)  # a hosted model's litellm import runs while hooks and context assemble
        base = await assemble.system_prompt(host)
        tools = await assemble.tools(host)  # extensions are loaded from here on
        engine.client_tool_names = {name for name, t in tools.items() if t.client}  # the panel's and declared ones
        tools = rpc_client.merge(tools, engine.rpc_tools.get(self.request_id))  # chat()'s: this turn's only
        self.policy = await channels.turn_policy(host.agent, engine.conversation.messages)  # before before_turn
        if self.policy is not None:
            tools = self.policy.tools(tools)
        system = self._channel_system(capabilities.system_for_turn(base, tools, self.model.model))
        self._observe = host.observes("on_chunk")
        engine.resolved_tools = tools
        messages = await self._history_messages()
        if self.fork is not None and isinstance(self.fork.record.get("system"), str):
            system = self.fork.record["system"]  # as the recorded turn saw it
        ctx = TurnContext(system, messages, dict(tools), self.model.model, self.continuation, self.body,
                          self.request_id, self.trigger)
        self.capture.data["system"] = ctx.system
        config = TurnConfig.coerce(await self.hooks.fire("before_turn", ctx)) or TurnConfig()
        self.secrets |= secrets_of(config)
        if ctx.model != self.model.model:  # edited in place (step mode, or a hook that mutates ctx)
            self.model = resolve_model(ctx.model)
        edited = ctx.tools  # a tool put into ctx.tools over a gated one needs approval
        if isinstance(edited, dict):
            edited = keep_gates(tools, edited, "before_turn")
        final, messages, tools, config = self._apply(config, ctx.system, ctx.messages, edited)
        if final == system and system != base:  # the block's, not a hook's: name the tools offered in the end
            final = self._channel_system(capabilities.system_for_turn(base, tools, self.model.model))
        final = self._system_sent(final)
        self.action_grant = await turn_grant(host, TurnContext(final, messages, tools, self.model.model,
                                                               self.continuation, self.body, self.request_id,
                                                               self.trigger))
        return final, messages, tools, config

    def _system_sent(self, final: str) -> str:
        """The turn's system prompt after `before_turn`, kept in the record when it differs from what
        `before_turn` saw (a hook's config, an edit in step mode); a fork past `before_turn` takes
        the recorded one (it is before the fork point)."""
        record = self.fork.record if self.fork is not None else None
        if record is not None and self.fork.site != "before_turn" and isinstance(record.get("system_sent"), str):
            final = record["system_sent"]
        if final != self.capture.data.get("system"):
            self.capture.data["system_sent"] = final
        return final

    async def _history_messages(self) -> list[dict]:
        """The model messages of the history (this turn's own stored message left out: its steps
        are sent from `self.acc`), with Think's continue checkpoint for a continuation."""
        history = await assemble.history(self.host)
        if history and history[-1].get("id") == self.acc.message["id"]:  # stored at a step boundary
            history = history[:-1]
        messages = to_model_messages(history, stored=True)
        if self.continuation and messages and messages[-1]["role"] == "assistant":
            messages.append({"role": "user", "content": CONTINUE_TEXT})
        return messages

    def _channel_system(self, system: str) -> str:
        """`system` with the turn's channel instructions prepended (`think_nb.channels`)."""
        return self.policy.system(system) if self.policy is not None else system

    @property
    def channel(self) -> channels.ChannelContext | None:
        """The turn's channel (`Think.active_channel`), None before it is resolved or without one."""
        return self.policy.context if self.policy is not None else None

    def _apply(self, config: TurnConfig, system: str, messages: list[dict],
               tools: dict) -> tuple[str, list[dict], dict, TurnConfig]:
        try:
            if config.model is not None:
                self.model = resolve_model(config.model)
            extra = resolve_tools(config.tools)
            if config.max_steps is not None and (not isinstance(config.max_steps, int) or config.max_steps < 1):
                raise ValueError(f"max_steps must be a positive int, not {config.max_steps!r}")
            stop.stop_conditions(config.stop_when)
            structured.check_output_type(config.output_type)
        except Exception as exc:
            raise HookError("before_turn", f"returned an unusable TurnConfig: {exc}") from exc
        system = config.instructions or config.system or system
        messages = config.messages if config.messages is not None else messages
        return system, messages, _configured(tools, extra, config), config

    # -- steps ----------------------------------------------------------------------------
    async def _run_approved_tools(self, tools: dict) -> tuple[bool, bool]:
        """Run the calls approved since the last turn; their results land in the message that asked
        (a cross-message update: `on_message_updated`). Returns (any ran, any paused again: a tool
        that asked for a new approval while resuming, e.g. `execute` reaching a second gated inner
        call; the turn then ends before calling the model, waiting for that approval)."""
        self.approved_ran = True
        history = self.engine.conversation.messages
        last, approved = self._approved_calls()
        if not approved:
            return False, False
        assert last is not None  # `approved` is empty otherwise
        earlier = MessageAccumulator(last["id"], base=last)

        async def emit(chunk: dict) -> None:
            chunk = self.scrubbed(chunk)
            earlier.apply(chunk)
            await self.emit_broadcast(chunk)

        ledger = self.engine.store.approvals
        # each approval is used here, once, committed before its call starts (`Approvals.claim`)
        claims = {p["toolCallId"]: ledger.claim(p["toolCallId"], p.get("input")) for p in approved}
        inputs = {call_id: claim for call_id, claim in claims.items() if not isinstance(claim, str)}
        granted = [p for p in approved if p["toolCallId"] in inputs]
        for part in approved:
            claim = claims[part["toolCallId"]]
            if claim == "used":  # it started before (hand-edited back, or the process died while it ran)
                await emit({"type": "tool-output-error", "toolCallId": part["toolCallId"], "errorText": USED_TEXT})
            elif claim == "none":  # the part says "approved" but approve() never said so: never run it
                await emit({"type": "tool-output-error", "toolCallId": part["toolCallId"],
                            "errorText": "No approval was recorded for this call (only agent.approve() approves "
                                         "a call); the tool did not run."})
        runner = StepTools(self.hooks, tools, emit, to_model_messages(history))
        runs = [(p, *_ledger_input(inputs, p)) for p in granted]
        try:
            outcomes = await run_all([runner.execute(p["toolCallId"], tool_name_of(p), arguments,
                                                     tools.get(tool_name_of(p)), edited=edited)
                                      for p, arguments, edited in runs])
        except BaseException:
            # stopped while they ran (the kernel's interrupt in `run_code`, an abort): each call ends
            # settled in the message that asked, as a call of the turn's own step does, never left
            # `approval-responded` for the next turn to call "already started once"
            self._settle(earlier, [p["toolCallId"] for p in granted], STOPPED_RUNNING_TEXT)
            raise
        self.engine.replace_message(earlier.message)
        return True, any(outcome is None for outcome in outcomes)

    def _approved_calls(self) -> tuple[dict | None, list[dict]]:
        """The last message (when it is the assistant's) and its approved calls waiting to run."""
        history = self.engine.conversation.messages
        last = history[-1] if history and history[-1]["role"] == "assistant" else None
        return last, [p for p in (last or {}).get("parts", [])
                      if p.get("state") == "approval-responded" and (p.get("approval") or {}).get("approved")]

    def _settle(self, message: MessageAccumulator, call_ids: list[str], text: str) -> None:
        """Settle the calls of `message` among `call_ids` still without a result (`output-error`
        with `text`; one a tool already failed keeps its own text) and store the message, telling
        the views (`on_message_updated`). Called as the turn ends stopped: nothing is streamed."""
        for call_id in call_ids:
            part = message.find_tool_part(call_id)
            if part is not None and part.get("state") not in SETTLED_TOOL_STATES:
                message.apply({"type": "tool-output-error", "toolCallId": call_id, "errorText": text})
        try:
            self.engine.replace_message(message.message)
        except Exception:  # the conversation was cleared under the turn: nothing to settle
            log.exception("could not store the settled calls of %s", message.message.get("id"))

    def _settle_unrun_approvals(self) -> None:
        """A continuation stopped before it ran its approved calls (a Stop as the approval started
        it): they end `output-error` (`STOPPED_BEFORE_TEXT`), so no card stays "approved — running"
        and no later turn runs them; their approvals stay unused."""
        last, approved = self._approved_calls()
        if last is not None and approved:
            self._settle(MessageAccumulator(last["id"], base=last), [p["toolCallId"] for p in approved],
                         STOPPED_BEFORE_TEXT)

    async def emit_broadcast(self, chunk: dict) -> None:
        """`publish` a chunk and show it to `on_chunk`, without applying it to this turn's message
        (used directly for chunks of an earlier message, e.g. an approved tool's output)."""
        self.publish(chunk)
        if self._observe:
            await self.hooks.fire("on_chunk", chunk, step=self.step)

    async def _run_steps(self) -> None:
        system, base_messages, tools, config = await self._prepare()
        self._watch_stalls(config)
        ran, paused = await self._run_approved_tools(tools)
        if ran:
            self.capture.flag("approved")
        if paused:  # waiting for the user again: no model call until that approval is decided
            return
        if ran and config.messages is None:
            base_messages = to_model_messages(await assemble.history(self.host), stored=True)
        options = config.litellm_options()
        if self.trigger == "regenerate" and self.model is not None:
            options = regenerate_options(self.model, options, self.request_id)
        limit = self.policy.max_turns if self.policy is not None else None  # a channel's, unless before_turn's
        max_steps = max(1, int(config.max_steps if config.max_steps is not None else (limit or self.host.max_steps)))
        reasoning = config.send_reasoning if config.send_reasoning is not None else self.host.send_reasoning
        self.send_reasoning = bool(reasoning)
        stop_when = stop.stop_conditions(config.stop_when)  # with max_steps, as Think's stepCountIs(maxSteps)
        system, options = self._structure(config, system, tools, options)
        self.capture.turn(self.model.model if self.model else "", tools, config, max_steps, self.compactions)
        start: dict = {"type": "start", "messageId": self.acc.message["id"]}
        if self.continuation:
            start["messageMetadata"] = {"continuation": True}
        await self.emit(start)
        finish = "stop"
        for step in range(max_steps):
            self.step = step
            if step and config.messages is None and await self.overflow.before_step(self.steps):
                base_messages = await self._history_messages()  # compacted; this turn's steps go on top
                self.capture.flag("compacted")
            plan = await self._plan_step(step, system, base_messages, tools, options, last=step == max_steps - 1)
            await self.emit({"type": "start-step"})
            schemas = [t.schema() for t in plan.offered.values()]
            self.tracer.model_call(plan.model.model, step, sent(plan.model, plan.sent, schemas,
                                                                plan.options).summary(len(schemas)))
            outcome = await self._stream(plan, schemas, step)
            self._add_usage(outcome)
            self._persist()  # a kernel killed while tools run leaves parts the next turn repairs
            results, paused = await self._run_tools(plan, outcome, step)
            await self.emit({"type": "finish-step"})
            finish = self.finish_reason = FINISH_REASONS.get(outcome.finish_reason or "stop", "other")
            self._persist()
            await self._step_finished(step, finish, outcome, results)
            if not outcome.tool_calls or paused or parked(results) or self.output is not None:  # parked: durable pause
                break
            if await stop.should_stop(stop_when, self.steps):  # Think's stopWhen, after a step with calls
                break
            if any(call.name in EXTENSION_CHANGERS for call in outcome.tool_calls):
                tools = await self._tools_again(config)  # Think: a loaded extension's tools, from the next step
        if self.final is not None and self.output is None and not paused:
            raise self.final.failure(len(self.steps), self.final_error)
        await self.emit({"type": "finish", "finishReason": finish, "messageMetadata": self._metadata()})

    async def _stream(self, plan: _Step, schemas: list[dict], step: int) -> StepOutcome:
        """The step's model call (`stream_step`), its output kept for the turn's record; a forked
        turn's step before its fork point is played back from the record instead."""
        recorded = self.fork.step_model(step) if self.fork is not None else None
        self.capture.chunks = []
        try:
            outcome = await stream_step(recorded or plan.model, plan.sent, schemas, self.emit, emit_run=self.emit_run,
                                        **plan.options)
            self.capture.step(self.capture.chunks, outcome.usage, outcome.finish_reason)
        finally:
            self.capture.chunks = None
        return outcome

    def _structure(self, config: TurnConfig, system: str, tools: dict, options: dict) -> tuple[str, dict]:
        """For a structured turn (an `output_type`): set `self.final`, the hidden final-answer
        tool, and return the system prompt with Think's instruction and the options with its
        forced `tool_choice` (unless the turn's config chose one). Otherwise returns them as they are."""
        output_type = config.output_type if config.output_type is not None else self.output_type
        if output_type is None:
            return system, options
        self.final = structured.FinalAnswer.for_turn(output_type, tools)
        system = "\n\n".join(text for text in (system, structured.instruction(self.final.name)) if text)
        if config.tool_choice is None:
            options = {**options, "tool_choice": self.final.default_choice(bool(tools))}
        return system, options

    async def _plan_step(self, step: int, system: str, base_messages: list[dict], tools: dict, options: dict,
                         last: bool) -> _Step:
        """What step `step` sends: the turn's model, prompt, messages, tools and options, changed for
        this step only by what `before_step` returns (fired when the class overrides it), and, in a
        structured turn, with the final-answer tool offered (on the `last` step alone and forced,
        unless `before_step` chose a `tool_choice`, as Think's safety net does)."""
        assert self.model is not None  # resolved by _prepare
        messages = base_messages + to_model_messages([self.acc.message])
        plan = _Step(self.model, system, messages, tools, dict(options))
        chosen = False
        stepper = self.hooks.stepper
        if self.host.overrides("before_step") or (stepper is not None and stepper.pauses("before_step")):
            from think_nb.turns.steps import PrepareStepContext, StepConfig  # loads with the first before_step

            ctx = PrepareStepContext(step, list(self.steps), messages, self.model.model, system, dict(tools),
                                     list(tools), self.request_id)
            config = StepConfig.coerce(await self.hooks.fire("before_step", ctx, step=step))
            if stepper is not None:  # what the user changed while paused there (a fork point)
                _edited_step(plan, ctx, messages)
            self._apply_step(plan, config)
            chosen = config.tool_choice is not None
        plan.offered = dict(plan.tools)
        if self.final is not None:
            if last and not chosen:
                plan.tools, plan.offered = {}, {}
                plan.options["tool_choice"] = self.final.forced
            plan.offered[self.final.name] = self.final.tool
        plan.sent = ([{"role": "system", "content": plan.system}] if plan.system else []) + plan.messages
        # images and files as this model takes them, old ones evicted (the stored messages never change)
        plan.sent = media.for_model(plan.sent, plan.model, MediaEviction.coerce(self.host.media_eviction))
        return plan

    def _apply_step(self, plan: _Step, config: StepConfig) -> None:
        """Change `plan` by `before_step`'s `config` (a model string resolved as `get_model()`'s)."""
        self.secrets |= secrets_of(config)
        try:
            if config.model is not None:
                plan.model = resolve_model(config.model)
        except Exception as exc:
            raise HookError("before_step", f"returned an unusable StepConfig: {exc}") from exc
        self.secrets |= secrets_of(plan.model)
        system = config.instructions or config.system
        if system is not None:
            plan.system = system
        if config.messages is not None:
            plan.messages = config.messages
        if config.active_tools is not None:
            plan.tools = {name: t for name, t in plan.tools.items() if name in config.active_tools}
        plan.options = {**plan.options, **config.litellm_options()}

    async def _run_tools(self, plan: _Step, outcome: StepOutcome, step: int) -> tuple[list[dict], bool]:
        """Run the step's tool calls (`StepTools`); a call of the final-answer tool is the turn's
        own: validated into `self.output`, never shown to the tool hooks (Think's final tool is
        not wrapped for them). Returns (results in call order, paused)."""
        final = self.final.name if self.final is not None else None
        runner = StepTools(self.hooks, plan.tools, self.emit, plan.sent, step, fork=self.fork)
        results, paused = await runner.run([call for call in outcome.tool_calls if call.name != final])
        for call in outcome.tool_calls:
            if call.name == final:
                results.append(await self._final_answer(call))
        return results, paused

    async def _final_answer(self, call: Any) -> dict:
        """Take a final-answer call: its validated input becomes the turn's `output`, or its
        validation error is the call's `output-error` (the model reads it in the next step)."""
        assert self.final is not None
        base = {"toolCallId": call.id, "toolName": call.name}
        if call.error is not None:  # not a JSON object: already a tool-input-error
            self.final_error = call.error
            return {**base, "errorText": call.error}
        value, error = self.final.validate(call.input)
        if error is not None:
            self.final_error = error
            await self.emit({"type": "tool-output-error", "toolCallId": call.id, "errorText": error})
            return {**base, "errorText": error}
        self.output = value
        await self.emit({"type": "tool-output-available", "toolCallId": call.id, "output": structured.RECORDED})
        return {**base, "output": structured.RECORDED}

    async def _tools_again(self, config: TurnConfig) -> dict:
        """The turn's tools merged again (after the model loaded an extension), with the
        `before_turn` config's extra tools and `active_tools` filter applied as at the start."""
        tools = rpc_client.merge(await assemble.tools(self.host), self.engine.rpc_tools.get(self.request_id))
        if self.policy is not None:
            tools = self.policy.tools(tools)
        tools = _configured(tools, resolve_tools(config.tools), config)
        self.engine.resolved_tools = tools
        return tools

    def _watch_stalls(self, config: TurnConfig) -> None:
        """Start the stall watchdog when this turn has a stall timeout (`turns/watchdog.py`)."""
        from think_nb.turns import watchdog

        timeout = config.chat_stream_stall_timeout
        if timeout is None:
            timeout = getattr(self.host, "chat_stream_stall_timeout", None)
        if timeout and timeout > 0 and self.hooks.stepper is None and self._watchdog is None:
            self._watchdog = watchdog.watch(self, timeout)

    async def _step_finished(self, step: int, finish: str, outcome: StepOutcome, results: list[dict]) -> None:
        calls = [{"toolCallId": c.id, "toolName": c.name, "input": c.input} for c in outcome.tool_calls]
        usage = usage_model.turn_usage(usage_model.add_step({}, outcome.usage, outcome.usage_source))
        ctx = StepContext(step, finish, outcome.text, calls, results, usage,
                          step_type="initial" if step == 0 else "tool-result")
        events.emit("chat:step:finish", {"step": step, "finish_reason": finish,
                                         "tool_calls": [c.name for c in outcome.tool_calls], "usage": dict(usage)})
        self.steps.append(ctx)
        await self.hooks.fire("on_step_finish", ctx, step=step)

    def _add_usage(self, outcome: StepOutcome) -> None:
        """Add a step's usage to the turn's (`think_nb.models.usage.add_step`: a step the provider did
        not report makes the turn's counts unknown, never 0; litellm's estimate is kept apart)."""
        self.usage = usage_model.add_step(self.usage, outcome.usage, outcome.usage_source)

    def _metadata(self) -> dict:
        """The finished message's metadata: `{model, usage: {prompt_tokens, completion_tokens,
        total_tokens, source}, requestId, cost_usd?}`; `cost_usd` (US dollars) only when known."""
        usage = usage_model.turn_usage(self.usage)
        metadata: dict[str, Any] = {"model": self.model.model if self.model else None, "usage": usage,
                                    "requestId": self.request_id, "finishReason": self.finish_reason}
        cost = _cost_usd(metadata["model"], usage)
        if cost is not None:
            metadata["cost_usd"] = cost
        if self.fork is not None:  # the versions switcher's label, and what compare() reports
            metadata["fork"] = self.fork.metadata()
        if self.reply_attachments:  # Think's reply attachments (`ActionContext.attach_reply`)
            metadata["attachments"] = list(self.reply_attachments)
        return metadata

    # -- endings ----------------------------------------------------------------------------
    async def _report_error(self, exc: BaseException, stage: str = "turn") -> str:
        """End the turn on `exc`: the error naming its source (`think_nb.turns.blame`: the model,
        user code or think_nb itself; an internal error's traceback is logged) goes to
        `on_chat_error`, then out as the `error` chunk. Returns its text (credentials scrubbed),
        or the text of what `on_chat_error` returned instead. Emits `chat:request:failed` (stage
        `stream` for the model's failure, with `message:error`; else `stage`)."""
        error = blame.classify(exc, self.host.agent)
        text = scrub(str(error), self.secrets)
        if isinstance(error, ModelError):
            stage = "stream"
            events.emit("message:error", {"error": text})
        events.emit("chat:request:failed", {"request_id": self.request_id, "stage": stage,
                                            "messages_persisted": True, "error": text})
        if isinstance(error, InternalError):
            log.error("turn %s: %s", self.request_id, text, exc_info=exc)
        try:
            replaced = await self.hooks.fire("on_chat_error", error, step=self.step)
        except HookError as hook_exc:
            cause = hook_exc.__cause__ or hook_exc
            replaced = f"{text} ({hook_exc.qualify(self.host).who} also raised {type(cause).__name__}: {cause})"
        if replaced is not None:
            text = scrub(str(replaced), self.secrets)
        await self._safe_emit({"type": "error", "errorText": text})
        return text

    async def _settle_open_calls(self) -> None:
        """Before a failed turn is persisted: every call of its message still without a result
        (`input-streaming`, e.g. the model failed mid-arguments, or `input-available`, e.g. a
        turn hook raised before the tool ran) becomes an `output-error` saying so
        (`UNSETTLED_TEXT`), streamed like any result, so the stored turn holds no call in a
        non-terminal state. A client tool's call waiting for the browser's result is left to it."""
        for part in list(self.acc.parts):
            if not is_tool_part(part) or part.get("state") not in ("input-streaming", "input-available"):
                continue
            if part["state"] == "input-available" and tool_name_of(part) in self.engine.client_tool_names:
                continue
            await self._safe_emit({"type": "tool-output-error", "toolCallId": part.get("toolCallId"),
                                   "errorText": UNSETTLED_TEXT})

    async def _safe_emit(self, chunk: dict) -> None:
        with contextlib.suppress(Exception, asyncio.CancelledError):  # a failing on_chunk must not hide the outcome
            await self.emit(chunk)

    def _try_persist(self) -> Exception | None:
        """`_persist` on a path that must go on when storing fails (the turn is ending): returns the failure."""
        try:
            self._persist()
        except Exception as exc:  # e.g. sqlite3.OperationalError: disk full, locked
            log.exception("could not store the message of turn %s", self.request_id)
            return exc
        return None

    def _persist(self) -> dict:
        message = self.acc.message
        for part in message["parts"]:
            if part.get("state") == "streaming":
                part["state"] = "done"
        stored = self._stored_form()
        self.engine.save_assistant(stored, self.generation)  # nothing after a clear under this turn
        return stored

    def save_record(self) -> None:
        """Store the turn's record (`think_nb.store.records`), unless its reply was not stored
        (the conversation was cleared under it)."""
        from think_nb.store.records import RecordRow

        reply = self._stored_form() if self.acc.parts else None
        if reply is not None and self.engine.conversation.get(reply["id"]) is None:
            return
        record = self.capture.finish(reply)
        if self.fork is not None:
            record["fork"] = self.fork.metadata()
        if self.secrets:  # the turn's credential values, wherever user code put them (a hook's options)
            text = jsonsafe.dumps_plain(record, jsonsafe.STORED_DEPTH)
            if any(secret in text for secret in self.secrets):
                record = jsonsafe.loads_stored(scrub(text, self.secrets))
        self.engine.store.records.save(RecordRow(self.request_id, self.conversation_key, self.parent_id,
                                                 reply["id"] if reply else None,
                                                 class_version(type(self.host.agent)), record))

    def _stored_form(self) -> dict:
        """The turn's message as stored and reported: without the final-answer calls' parts
        (Think's `_stripInternalFinalAnswerParts`) and, with `send_reasoning` off, without reasoning."""
        message = self.acc.message
        parts = message["parts"]
        final = self.final.name if self.final is not None else None
        keep = [p for p in parts if (self.send_reasoning or p.get("type") != "reasoning")
                and not (final is not None and is_tool_part(p) and tool_name_of(p) == final)]
        return message if len(keep) == len(parts) else {**message, "parts": keep}


@dataclass
class _Step:
    """What one step sends (`Turn._plan_step`): `tools` run its calls, `offered` are declared to the
    model (with a structured turn's final-answer tool), `sent` is the system message + `messages`."""

    model: ModelConfig
    system: str
    messages: list[dict]
    tools: dict
    options: dict
    offered: dict = field(default_factory=dict)
    sent: list[dict] = field(default_factory=list)


def _emitted_by_tool(chunk: dict) -> bool:
    """A chunk a running tool emitted besides its result: a `data-*` part (a sub-agent's progress)
    or a streaming tool's preliminary output."""
    kind = str(chunk.get("type", ""))
    return CURRENT_TOOL_CALL.get() is not None and (
        (kind.startswith("data-") and kind != "data-tool-decision") or bool(chunk.get("preliminary")))


def _edited_step(plan: _Step, ctx: PrepareStepContext, messages: list[dict]) -> None:
    """Apply to `plan` what the user changed in a paused `before_step`'s context: the system
    prompt, the messages, the model, the active tools."""
    if ctx.system != plan.system:
        plan.system = ctx.system
    if ctx.messages != messages:
        plan.messages = ctx.messages
    if ctx.model != plan.model.model:
        plan.model = resolve_model(ctx.model)
    if list(ctx.active_tools) != list(plan.tools):
        plan.tools = {name: t for name, t in plan.tools.items() if name in ctx.active_tools}


def _ledger_input(inputs: dict[str, Any], part: dict) -> tuple[dict, bool]:
    """`(input, edited)` an approved call runs with: the ledger's (`Approvals.claim`), the edited
    input when the user edited it; never the part's own `approval.input`."""
    value, edited = inputs[part["toolCallId"]]
    return (value if isinstance(value, dict) else {}), bool(edited)


def _configured(tools: dict, extra: dict, config: TurnConfig) -> dict:
    """A turn's tools: the merged tools plus the `before_turn` config's extra tools, kept to its
    `active_tools` when it names them. An extra tool over a gated tool of the same name serves it,
    needing approval (`think_nb.tools.collisions.keep_gates`)."""
    tools = {**tools, **keep_gates(tools, extra, "before_turn")}
    if config.active_tools is not None:
        tools = {name: t for name, t in tools.items() if name in config.active_tools}
    return tools


def _cost_usd(model: str | None, usage: dict) -> float | None:
    """The turn's price in US dollars from litellm's price table; None (unknown, never 0) when the
    usage is unknown (litellm's estimate is never priced) or the model has no price (the in-process
    models have none)."""
    if not model or model.split("/", 1)[0] in IN_PROCESS_PROVIDERS:
        return None
    if usage.get("prompt_tokens") is None or usage.get("completion_tokens") is None:
        return None
    try:
        prompt, completion = get_litellm().cost_per_token(model=model, prompt_tokens=usage["prompt_tokens"],
                                                          completion_tokens=usage["completion_tokens"])
    except Exception:  # noqa: BLE001 - unknown model: no price
        return None
    return prompt + completion


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
