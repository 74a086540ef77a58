"""Context-overflow recovery: a turn that outgrows the model's context window is compacted and
goes on (Think's `contextOverflow` and `classifyChatError`, `think.ts`).

Off unless the agent sets `context_overflow` (a `ContextOverflow`, or a dict of its fields):

    class Researcher(Think):
        context_overflow = {"reactive": True, "max_retries": 1,
                            "proactive": {"max_input_tokens": 120_000, "headroom": 0.9, "max_compactions": 1}}

Two layers, each with its own budget, both through the session's compaction (`Session.compact`:
`configure_session(s).on_compaction(fn)`, else the built-in summariser on the agent's model):

- **reactive** (`reactive`, `max_retries`): a model call fails with an error that
  `Think.classify_chat_error(error, ctx)` classifies `"context_overflow"` (by default
  `default_context_overflow_classifier`: litellm's `ContextWindowExceededError` and the
  providers' phrases). The partial reply is discarded (taken out of the store: the turn starts
  again from scratch), the session is compacted, and the same turn runs again (its `before_turn`
  fires again, `continuation` unchanged) on the compacted history, at most `max_retries` times.
  A compaction that shortens nothing, a spent budget or an abort ends the turn with the error,
  `on_chat_error` given it with `error.classification == "context_overflow"`; its last partial
  is kept, as any failed turn's. An aborted turn is never compacted or retried.
- **proactive** (`proactive`): before each step after the first, when the previous step's input
  tokens (`usage.prompt_tokens`, else `total_tokens`; nothing when neither was reported) reached
  `max_input_tokens × headroom`, the session is compacted and the step sends the compacted
  history with this turn's steps so far on top (they are the turn's own message, never
  compacted). At most `max_compactions` attempts per turn, a no-op one included (Think counts the
  attempt, so a compaction that cannot help is not retried on every step). Not when
  `before_turn` gave the turn its own `messages`.

Each compaction emits `chat:context:compacted` (`reason` "reactive" | "proactive", `shortened`,
`request_id`, `attempt` for reactive ones), adds a `compaction` row to the turn's trace, shows
"compacting to fit…" as the panel's status detail while it runs (a `think_nb.models.progress`
wait), and "compacted to fit" for the rest of the turn once it shortened the history.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

from think_nb import events
from think_nb.errors import HookError, ModelError, UserError
from think_nb.models import progress
from think_nb.turns.hooks import call_hook

if TYPE_CHECKING:
    from think_nb.turns.result import StepContext

__all__ = ["CONTEXT_OVERFLOW", "ChatErrorClassification", "ChatErrorContext", "ContextOverflow", "Proactive",
           "default_context_overflow_classifier"]

log = logging.getLogger("think_nb")

ChatErrorClassification = Literal["context_overflow", "rate_limit", "transient", "fatal", "unknown"]
"""What `classify_chat_error` may return (Think's `ChatErrorClassification`); only
`"context_overflow"` is acted on, as in Think."""
CONTEXT_OVERFLOW = "context_overflow"
COMPACTING = "compacting to fit…"
"""The status detail while an overflow compaction runs (a `think_nb.models.progress` wait)."""
COMPACTED = "compacted to fit"
"""The status detail for the rest of a turn whose history an overflow compaction shortened."""

OVERFLOW_PATTERN = re.compile(
    r"prompt is too long|context[_ ]length[_ ]exceeded|maximum context length|exceeds the maximum number of tokens"
    r"|input token count|reduce the length of|input is too long|too many (?:input )?tokens|context window",
    re.IGNORECASE)
"""Think's `CONTEXT_OVERFLOW_PATTERN`: Anthropic ("prompt is too long"), OpenAI
("context_length_exceeded", "maximum context length", "reduce the length of the messages"),
Google ("exceeds the maximum number of tokens", "input token count"), Bedrock ("input is too
long"), others ("too many tokens", "context window"; llama.cpp's "Requested tokens (5000) exceed
context window of 4096")."""
LITELLM_OVERFLOW = "ContextWindowExceededError"
"""litellm's exception class for an overflow it recognised (matched by name: no litellm import)."""


@dataclass(frozen=True)
class Proactive:
    """The proactive layer of `ContextOverflow` (Think's `proactive`).

    Attributes:
        max_input_tokens: the model's input budget in tokens (> 0).
        headroom: the fraction of it (0 < headroom <= 1) at which to compact before the next step.
        max_compactions: compaction attempts per turn (>= 1).
    """

    max_input_tokens: int
    headroom: float = 0.9
    max_compactions: int = 1

    def __post_init__(self) -> None:
        _check(_whole(self.max_input_tokens, 1), "proactive max_input_tokens", self.max_input_tokens,
               "a whole number of tokens > 0, e.g. 120000")
        _check(_number(self.headroom) and 0 < self.headroom <= 1, "proactive headroom", self.headroom,
               "a fraction, 0 < headroom <= 1, e.g. 0.9")
        _check(_whole(self.max_compactions, 1), "proactive max_compactions", self.max_compactions,
               "a whole number >= 1")

    @property
    def threshold(self) -> float:
        """Input tokens at which the layer compacts (`max_input_tokens × headroom`)."""
        return self.max_input_tokens * self.headroom


@dataclass(frozen=True)
class ContextOverflow:
    """`Think.context_overflow` (Think's `ContextOverflowConfig`); see the module docstring.

    Attributes:
        reactive: compact and run the turn again when its model call overflows. Default False
            (Think's), but a dict that gives `max_retries` without `reactive` turns it on (the
            budget means nothing without it).
        max_retries: compact-and-retry attempts per turn (>= 0; Think's `maxRetries`, 1).
        proactive: a `Proactive` (or a dict of its fields), or None for no proactive layer.

    Raises:
        UserError: a field out of range or of the wrong type (one line naming it and what it takes).
    """

    reactive: bool = False
    max_retries: int = 1
    proactive: Proactive | None = None

    def __post_init__(self) -> None:
        _check(isinstance(self.reactive, bool), "reactive", self.reactive, "True or False")
        _check(_whole(self.max_retries, 0), "max_retries", self.max_retries, "a whole number >= 0, e.g. 1")
        if isinstance(self.proactive, Mapping):
            given = _fields_of(Proactive, self.proactive, "proactive")
            if "max_input_tokens" not in given:
                raise UserError("context_overflow: proactive needs max_input_tokens (the model's input budget in "
                                'tokens), e.g. {"proactive": {"max_input_tokens": 120000}}.')
            object.__setattr__(self, "proactive", Proactive(**given))
        _check(self.proactive is None or isinstance(self.proactive, Proactive), "proactive", self.proactive,
               'None, Proactive(...) or {"max_input_tokens": N, "headroom": 0.9, "max_compactions": 1}')

    @classmethod
    def coerce(cls, value: Any) -> ContextOverflow | None:
        """The config `value` stands for: None/False (off), True (reactive, Think's defaults), a
        `ContextOverflow`, or a dict of its fields. Raises `UserError` for anything else."""
        if value is None or value is False:
            return None
        if value is True:
            return cls(reactive=True)
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            given = _fields_of(cls, value, "context_overflow")
            if "max_retries" in given and "reactive" not in given:
                given["reactive"] = True
            return cls(**given)
        raise UserError(f"context_overflow = {value!r:.60} is not a value it takes; context_overflow is None, True, "
                        'ContextOverflow(...) or a dict such as {"reactive": True, "max_retries": 1, "proactive": '
                        '{"max_input_tokens": 120000}}.')


def problem(value: object, where: str) -> str | None:
    """The one-line refusal of `value` as `context_overflow` (at `where`, e.g. "class Calc"), or
    None when the agent can take it (`think_nb.names.setting_problem`)."""
    try:
        ContextOverflow.coerce(value)
    except UserError as exc:
        return f"{where}: {exc}"
    return None


@dataclass
class ChatErrorContext:
    """What `classify_chat_error(error, ctx)` is told besides the error (Think's `ChatErrorContext`).

    Attributes:
        stage: where the turn failed: "stream" (its model call; the only stage consulted now).
        request_id: the turn's request id.
        messages_persisted: whether the turn's messages are stored (None: not said).
        classification: the classification already given, or None.
    """

    stage: str = "stream"
    request_id: str | None = None
    messages_persisted: bool | None = None
    classification: ChatErrorClassification | None = None


def default_context_overflow_classifier(error: Any, ctx: ChatErrorContext | None = None) -> str | None:
    """`"context_overflow"` when `error` says the prompt exceeded the model's context window, else
    None (Think's `defaultContextOverflowClassifier`; `Think.classify_chat_error`'s default).

    `error` may be an exception (its chain is read: a `ModelError`'s `__cause__` is the provider's
    exception; litellm's `ContextWindowExceededError` counts whatever its text), a string (an
    in-stream error's text) or any JSON-able value. Favours recall: a false positive only costs a
    compaction and one retry that fails the same way."""
    for item in _chain(error):
        if isinstance(item, BaseException):
            if any(cls.__name__ == LITELLM_OVERFLOW for cls in type(item).__mro__):
                return CONTEXT_OVERFLOW
            text = str(item)
        elif isinstance(item, str):
            text = item
        elif item is None:
            continue
        else:
            try:
                text = json.dumps(item, default=str)
            except (TypeError, ValueError):
                text = repr(item)
        if OVERFLOW_PATTERN.search(text):
            return CONTEXT_OVERFLOW
    return None


class Recovery:
    """One turn's context-overflow recovery (see the module docstring): its config, read when the
    turn starts, and the budgets it has used (`retries`, `compactions`).

    Args:
        turn: the running `think_nb.turns.runner.Turn`.
    """

    def __init__(self, turn: Any) -> None:
        self.turn = turn
        self.config = ContextOverflow.coerce(getattr(turn.host, "context_overflow", None))
        self.retries = 0
        self.compactions = 0

    async def retry_after(self, error: BaseException) -> bool:
        """After the turn's attempt failed with `error`: True when the reactive layer discarded its
        partial and compacted the history, so the turn runs again. A classified overflow that is
        not retried gets `error.classification = "context_overflow"` (what `on_chat_error` sees)."""
        config = self.config
        if config is None or not config.reactive or self.turn.aborted or not isinstance(error, ModelError):
            return False
        if not await self._is_overflow(error):
            return False
        error.classification = CONTEXT_OVERFLOW
        if self.turn.aborted:  # the classifier (or a view) aborted the turn: its cancellation lands here
            await asyncio.sleep(0)
            self.turn.check_aborted()
        if self.retries >= config.max_retries:
            return False
        self.retries += 1
        self.turn.discard_partial()
        shortened = await self.compact("reactive", attempt=self.retries)
        return shortened and not self.turn.aborted

    async def before_step(self, steps: list[StepContext]) -> bool:
        """Before a step after the first: True when the proactive layer compacted the history
        (the step must read it again)."""
        proactive = self.config.proactive if self.config is not None else None
        if proactive is None or not steps or self.compactions >= proactive.max_compactions:
            return False
        usage = steps[-1].usage or {}
        used = next((usage[k] for k in ("prompt_tokens", "total_tokens") if _number(usage.get(k))), None)
        if used is None or float(used) < proactive.threshold:
            return False
        self.compactions += 1  # the attempt counts, shortened or not (Think)
        return await self.compact("proactive", leaf_id=self._before_own_message())

    async def compact(self, reason: str, *, attempt: int | None = None, leaf_id: str | None = None) -> bool:
        """Compact the session for an overflow (`Session.compact`, up to `leaf_id` when given);
        True when it shortened the history. A failing compaction is logged and counts as not
        shortened (Think). The one place that reports it: event, trace row, status detail."""
        turn = self.turn
        started = turn.tracer.now_ms()
        result: dict | None = None
        failure = ""
        try:
            session = await turn.host.session_ready()
            with progress.waiting(COMPACTING):
                result = await session.compact(leaf_id, tail_token_budget=self._tail_budget())
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - Think: a failed compaction is a no-op, the error stands
            failure = f"{type(exc).__name__}: {exc}"
            log.warning("context-overflow compaction of turn %s failed: %s", turn.request_id, failure)
        shortened = bool(result)
        events.emit("chat:context:compacted", {"reason": reason, "shortened": shortened,
                                               "request_id": turn.request_id,
                                               **({"attempt": attempt} if attempt is not None else {})})
        turn.tracer.compaction(reason, turn.step, _summary(reason, attempt, result, failure), started)
        if shortened:
            turn.engine.notify("on_note", turn.request_id, COMPACTED)
        return shortened

    async def _is_overflow(self, error: ModelError) -> bool:
        """`classify_chat_error(error, ctx)` says `"context_overflow"`; a hook that raises counts
        as not (logged, Think's rule), and the original error stands."""
        turn = self.turn
        ctx = ChatErrorContext("stream", turn.request_id)
        started = turn.tracer.now_ms()
        try:
            value = await call_hook(turn.host.agent, "classify_chat_error", error, ctx)
        except HookError as exc:
            log.warning("%s; treating the error as no context overflow", exc.qualify(turn.host.agent))
            value = None
        turn.tracer.hook("classify_chat_error", turn.step, None, f"{error} → {value}", started)
        return value == CONTEXT_OVERFLOW

    def _tail_budget(self) -> int | None:
        """The verbatim tail the built-in summariser may keep: half the proactive budget (a
        20,000-token tail would make compacting for a smaller window a no-op), else its default."""
        proactive = self.config.proactive if self.config is not None else None
        return max(1, proactive.max_input_tokens // 2) if proactive is not None else None

    def _before_own_message(self) -> str | None:
        """The branch message before this turn's own (stored) message: compaction reads the history
        up to it, so the turn's steps so far are never summarised. None when it is not stored."""
        ids = [m["id"] for m in self.turn.engine.conversation.messages]
        own = self.turn.acc.message["id"]
        if own not in ids:
            return None
        index = ids.index(own)
        return ids[index - 1] if index else None


def _summary(reason: str, attempt: int | None, result: dict | None, failure: str) -> str:
    what = f"{reason}{f', attempt {attempt}' if attempt is not None else ''}"
    if failure:
        return f"compaction failed ({what}): {failure}"
    if not result:
        return f"compaction shortened nothing ({what})"
    before, after = result.get("tokens_before"), result.get("tokens_after")
    tokens = f": {before} → {after} tokens" if before is not None and after is not None else ""
    return f"{COMPACTED} ({what}){tokens}"


def _chain(error: Any) -> list[Any]:
    """`error`, then its causes (`original_exception`, `__cause__`, `__context__`), once each."""
    out: list[Any] = []
    seen: set[int] = set()
    current = error
    while current is not None and id(current) not in seen and len(out) < 8:
        seen.add(id(current))
        out.append(current)
        if not isinstance(current, BaseException):
            break
        current = getattr(current, "original_exception", None) or current.__cause__ or current.__context__
    return out


def _fields_of(cls: type, value: Mapping, what: str) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = sorted(str(k) for k in value if k not in names)
    if unknown:
        raise UserError(f"context_overflow: {what} has no field {unknown[0]!r}; its fields are "
                        f"{', '.join(sorted(names))}.")
    return dict(value)


def _check(ok: bool, field: str, value: object, takes: str) -> None:
    if not ok:
        raise UserError(f"context_overflow: {field} = {value!r:.40} is not a value it takes; {field} is {takes}.")


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least
