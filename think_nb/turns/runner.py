"""One turn, start to finish: assemble → steps (model call + tool calls) → persist → report.

The same chunk stream feeds the accumulator (the persisted assistant UIMessage), every
subscribed listener (panels, the terminal) and `on_chunk`. The partial message is persisted at
every step boundary and whatever ends the turn (finish, error, abort), so nothing streamed is
lost and nothing stays in a "streaming" state.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

from think_nb.messages.accumulator import MessageAccumulator
from think_nb.messages.convert import to_model_messages
from think_nb.messages.ids import new_id
from think_nb.models.errors import describe_error
from think_nb.models.resolve import ModelConfig, resolve_model
from think_nb.models.stream import StepOutcome, stream_step
from think_nb.turns.result import StepContext, TurnResult
from think_nb.turns.tool_calls import run_tool_calls

if TYPE_CHECKING:
    from think_nb.agent import Think

FINISH_REASONS = {"stop": "stop", "tool_calls": "tool-calls", "function_call": "tool-calls",
                  "length": "length", "content_filter": "content-filter"}


async def maybe_await(value: Any) -> Any:
    """Hooks may be sync or async."""
    return await value if inspect.isawaitable(value) else value


class Turn:
    """Runs one admitted turn for `agent` (the caller holds the agent's queue lock)."""

    def __init__(self, agent: Think, request_id: str) -> None:
        self.agent = agent
        self.request_id = request_id
        self.acc = MessageAccumulator(new_id("msg"))
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        self.model: ModelConfig | None = None
        self._observe = agent._overrides("on_chunk")

    async def emit(self, chunk: dict) -> None:
        """Apply a chunk to the message, broadcast it, and show it to `on_chunk`."""
        self.acc.apply(chunk)
        self.agent._broadcast_chunk(self.request_id, chunk, False)
        if self._observe:
            await maybe_await(self.agent.on_chunk(chunk))

    async def run(self) -> TurnResult:
        """Run the turn; never raises for model, tool or hook failures (they end it with `error`)."""
        try:
            await self._run_steps()
            status, error = "completed", None
        except asyncio.CancelledError:
            _uncancel()
            await self._safe_emit({"type": "abort", "reason": "cancelled"})
            status, error = "aborted", None
        except Exception as exc:  # noqa: BLE001 - every failure ends the turn with an error chunk
            error = await self._report_error(exc)
            status = "error"
        if error is not None:  # kept with the message, so a reloaded view still shows it
            self.acc.message.setdefault("metadata", {})["error"] = error
        message = self._persist() if self.acc.parts else None
        return TurnResult(self.request_id, status, error, message)

    async def _run_steps(self) -> None:
        agent = self.agent
        self.model = resolve_model(await maybe_await(agent.get_model()))
        system = await agent._system_prompt_for_turn()
        tools = await agent._tools_for_turn()
        history = await agent._history_for_turn()
        await self.emit({"type": "start", "messageId": self.acc.message["id"]})
        finish = "stop"
        for step in range(max(1, int(agent.max_steps))):
            await self.emit({"type": "start-step"})
            model_messages = to_model_messages(history + [self.acc.message], system)
            outcome = await stream_step(self.model, model_messages, [t.schema() for t in tools.values()], self.emit)
            self._add_usage(outcome)
            results, paused = await run_tool_calls(outcome.tool_calls, tools, self.emit)
            await self.emit({"type": "finish-step"})
            finish = FINISH_REASONS.get(outcome.finish_reason or "stop", "other")
            self._persist()
            await self._step_finished(step, finish, outcome, results)
            if not outcome.tool_calls or paused:
                break
        await self.emit({"type": "finish", "finishReason": finish, "messageMetadata": self._metadata()})

    async def _step_finished(self, step: int, finish: str, outcome: StepOutcome, results: list[dict]) -> None:
        if self.agent._overrides("on_step_finish"):
            calls = [{"toolCallId": c.id, "toolName": c.name, "input": c.input} for c in outcome.tool_calls]
            ctx = StepContext(step, finish, outcome.text, calls, results, outcome.usage)
            await maybe_await(self.agent.on_step_finish(ctx))

    def _add_usage(self, outcome: StepOutcome) -> None:
        for key in self.usage:
            self.usage[key] += (outcome.usage or {}).get(key, 0) or 0

    def _metadata(self) -> dict:
        return {"model": self.model.model if self.model else None, "usage": dict(self.usage),
                "requestId": self.request_id}

    async def _report_error(self, exc: Exception) -> str:
        text = describe_error(exc, self.model.model if self.model else None)
        replaced = await maybe_await(self.agent.on_chat_error(exc)) if self.agent._overrides("on_chat_error") else None
        if replaced is not None:
            text = str(replaced)
        await self._safe_emit({"type": "error", "errorText": text})
        return text

    async def _safe_emit(self, chunk: dict) -> None:
        try:
            await self.emit(chunk)
        except Exception:  # noqa: BLE001 - a failing on_chunk must not hide the real outcome
            self.acc.apply(chunk)

    def _persist(self) -> dict:
        message = self.acc.message
        for part in message["parts"]:
            if part.get("state") == "streaming":
                part["state"] = "done"
        self.agent._save_assistant(message)
        return message


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
