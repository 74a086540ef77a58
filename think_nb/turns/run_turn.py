"""`Think.run_turn`: one entry point over the turn entry points, by mode (Think's `runTurn`).

    await agent.run_turn("hi")                          # wait: save_messages → TurnResult
    await agent.run_turn(continuation=True)             # wait: continue_last_turn → TurnResult
    await agent.run_turn("later", mode="submit")        # submit_messages → inspection dict
    await agent.run_turn("hi", mode="stream", callback=cb)  # chat(input, cb) → None

The rules are Think's (`_validateRunTurnAdmission`), each broken one a `UserError` naming it.
Nested calls from inside the agent's own turn are refused by the entry points it delegates to
(`TurnEngine.refuse_nested`); "submit" is the one allowed there, as in Think.
"""

from __future__ import annotations

from typing import Any

from think_nb import channels
from think_nb.aio import call_method
from think_nb.errors import UserError
from think_nb.messages import new_id, user_message
from think_nb.turns.result import SKIPPED, TurnResult

MODES = ("wait", "submit", "stream")


def check(mode: str, has_input: bool, continuation: bool, callback: Any, output_type: Any = None) -> None:
    """Raise `UserError` for a combination Think's `runTurn` rejects (its words), or an
    `output_type` outside a "wait" turn with input (ours: the structured answer is its result)."""
    if mode not in MODES:
        raise UserError(f'run_turn: mode must be "wait", "submit" or "stream", not {mode!r}.')
    if output_type is not None and (mode != "wait" or continuation):
        raise UserError('run_turn: output_type is only supported with mode="wait" and input (its TurnResult.output '
                        "is the answer); for other turns return TurnConfig(output_type=...) from before_turn.")
    if continuation and mode != "wait":
        raise UserError('run_turn: continuation is only supported with mode="wait".')
    if mode == "stream" and callback is None:
        raise UserError('run_turn: mode "stream" requires callback (on_start / on_event / on_done / on_error).')
    if mode == "wait":
        if has_input and continuation:
            raise UserError("run_turn: supply either input or continuation=True, not both.")
        if not has_input and not continuation:
            raise UserError("run_turn: supply either input or continuation=True.")
    elif not has_input:
        raise UserError(f'run_turn: mode "{mode}" requires input.')


def as_messages(input: Any) -> list[dict]:
    """Static input as UIMessages: text → one user message ("" → none), a UIMessage → [it], a list as is."""
    if isinstance(input, str):
        return [user_message(input)] if input else []
    return list(input) if isinstance(input, list | tuple) else [input]


async def run_turn(agent: Any, input: Any, *, mode: str, continuation: bool, body: dict | None, signal: Any,
                   submission_id: str | None, idempotency_key: str | None, metadata: Any,
                   callback: Any, output_type: Any = None, channel: str | None = None) -> TurnResult | dict | None:
    """`agent.run_turn(...)` (see `Think.run_turn`)."""
    check(mode, input is not None, continuation, callback, output_type)
    if mode == "wait" and continuation:
        if channel is not None or metadata is not None:
            raise UserError("run_turn: a continuation runs on the channel and metadata stamped on the last user "
                            "message; leave channel= and metadata= out.")
        return await agent.continue_last_turn(body, signal=signal)
    if mode == "submit":
        if callable(input):
            raise UserError('run_turn(mode="submit") does not support function input: the messages are stored '
                            "before the turn runs; pass them.")
        return await agent.submit_messages(as_messages(input), submission_id=submission_id,
                                           idempotency_key=idempotency_key, metadata=metadata, channel=channel)
    messages = input if callable(input) else as_messages(input)
    if mode == "stream":
        if not callable(messages) and not messages:
            await call_method(callback, "on_start", {"request_id": new_id("req")})
            await call_method(callback, "on_done")
            return None
        await agent.chat(messages if callable(messages) else list(messages), callback, signal=signal,
                         channel=channel, metadata=metadata)
        return None
    if not callable(messages) and not messages:
        return TurnResult("", "skipped", reason=SKIPPED["no-new-messages"])
    return await agent.save_messages(channels.for_turn(agent, messages, channel, metadata, "run_turn"), signal=signal,
                                     output_type=output_type)
