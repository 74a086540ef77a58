"""Running an action call through the durable idempotency ledger (Think's `_runLedgeredAction`).

The call's key is `action:<name>:<key>` when the action declares `idempotency_key` (an input
field's value, or what its function returns), else `tool:<toolCallId>`. Then, in the agent's
SQLite file (`think_nb.store.actions.ActionRows.claim`):

- no row: a `pending` row is written and the function runs; its prepared output settles the row
  (stored as JSON), a failure deletes it (a later attempt runs again) and becomes the error
  envelope;
- a settled row with the same action and input hash: its stored result is returned, the function
  does not run (a replay; also in a new process);
- the same key with another input (or action): the `ActionKeyConflict` envelope, nothing runs;
- a pending row (another attempt, or one whose process died): the `ActionPendingError` envelope,
  nothing runs, unless the key is explicit and the row is older than the agent's
  `action_ledger_pending_retry_lease` (seconds, Think's 5 minutes; False: never): then it is
  reclaimed and the function runs again (the explicit key is the promise that a retry is safe).

Two calls of one key in one process at once share one run (the second awaits the first).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from think_nb import events, jsonsafe
from think_nb.actions import output
from think_nb.actions.authorize import call_policy
from think_nb.actions.context import ActionContext

log = logging.getLogger("think_nb.actions")


def input_hash(value: Any) -> str:
    """A stable hash of a call's input (strict JSON, keys sorted)."""
    text = json.dumps(jsonsafe.to_json_value(value), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


async def ledger_key(action: Any, value: Any, ctx: ActionContext) -> str | None:
    """The call's ledger key, or None (no explicit key and no call id: the call runs unledgered).
    Raises `ValueError` for an empty key, `UserError` for a key function returning a non-string."""
    spec = action.idempotency_key
    if spec is None:
        return f"tool:{ctx.tool_call_id}" if ctx.tool_call_id else None
    key = value.get(spec) if isinstance(spec, str) else await call_policy(spec, value, ctx)
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        from think_nb.errors import UserError

        raise UserError(f"action {action.name!r}: the idempotency key is {key!r:.40}; it must be a string.")
    if key == "":
        raise ValueError(f'Action "{action.name}" returned an empty idempotency key')
    return f"action:{action.name}:{key}"


class Ledger:
    """The ledger runs of one agent: `await Ledger(store.actions, lease).run(...)`.

    Args:
        rows: the agent's `ActionRows`.
        lease: `fn() -> seconds | None`, the pending-row reclaim lease read at each claim.
    """

    def __init__(self, rows: Any, lease: Callable[[], float | None]) -> None:
        self.rows = rows
        self.lease = lease
        self.inflight: dict[str, tuple[asyncio.Future, str]] = {}  # key -> (its run's outcome, input hash)

    async def run(self, action: Any, value: Any, ctx: ActionContext, run: Callable[[], Awaitable[Any]],
                  undo: Callable[[], None] = lambda: None) -> Any:
        """The call's output (see the module docstring). `run()` runs the function once and returns
        its prepared output; `undo()` drops the reply attachments a failed run added."""
        try:
            key = await ledger_key(action, value.copy() if isinstance(value, dict) else value, ctx.without_reply())
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the model reads it, as Think's envelope
            return output.error(exc)
        if key is None:
            return await _guarded(run, undo)
        digest = input_hash(value)
        active = self.inflight.get(key)
        if active is not None:  # the same key running now, in this process: share its outcome
            if active[1] != digest:
                events.emit("action:ledger:conflict", {"action": action.name, "key": key, "input_hash": digest})
                return output.conflict(action.name, key)
            return await asyncio.shield(active[0])
        explicit = action.idempotency_key is not None
        outcome, row = self.rows.claim(key, action.name, ctx.request_id, ctx.tool_call_id, digest,
                                       reclaim_after=self.lease() if explicit else None)
        event = {"action": action.name, "key": key, "input_hash": digest}
        if outcome == "replay":
            events.emit("action:ledger:replayed", event)
            return output.decode(row["result"] if row else None)
        if outcome == "pending":
            events.emit("action:ledger:pending", event)
            return output.pending()
        if outcome == "conflict":
            events.emit("action:ledger:conflict", event)
            return output.conflict(action.name, key)
        if outcome == "reclaimed":
            events.emit("action:ledger:reclaimed", event)
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self.inflight[key] = (future, digest)
        try:
            result = await self._settled(key, run, undo, event)  # raises only when stopped
        except BaseException:
            future.cancel()
            raise
        finally:
            self.inflight.pop(key, None)
        future.set_result(result)
        return result

    async def _settled(self, key: str, run: Callable[[], Awaitable[Any]], undo: Callable[[], None],
                       event: dict) -> Any:
        try:
            result = await run()
        except (asyncio.CancelledError, KeyboardInterrupt):
            self.rows.release(key)
            undo()
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit & co. from the action: its envelope
            self.rows.release(key)
            undo()
            return output.error(exc)
        stored = output.encode(result)
        if stored is None:
            self.rows.release(key)
            log.debug("action:ledger:serialize_failed %s", event)
            return result
        self.rows.settle(key, stored)
        events.emit("action:ledger:settled", event)
        return result


async def _guarded(run: Callable[[], Awaitable[Any]], undo: Callable[[], None]) -> Any:
    try:
        return await run()
    except (asyncio.CancelledError, KeyboardInterrupt):
        undo()
        raise
    except BaseException as exc:  # noqa: BLE001 - the model reads it
        undo()
        return output.error(exc)
