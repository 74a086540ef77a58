"""Context-overflow recovery (`think_nb.turns.overflow`, Think's `contextOverflow` +
`classifyChatError`): reactive compact-and-retry, the proactive guard before a step, the default
classifier, the setting's validation, and what the views, the trace and the events see.

Real turns on real SQLite files; only the model is scripted (its overflow is a scripted error with
a provider's words, or a real 400 from a local OpenAI/Anthropic-format server through litellm).
The compaction function is the session's (`on_compaction`), deterministic as Think's tests' mock:
it summarises every message before the turn's user message (or, `NOOP`, nothing).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from dirty_equals import IsStr

from agents import add, scripted_agent, texts
from helpers_comm import from_js, state_updates
from panels import chat_request, chunk_types, responses, streamed_text, until, user_msg
from providers.agents import hosted_agent, server  # noqa: F401 - the fixture
from providers.server import FakeProvider, Reply
from think_nb import ContextOverflow, Think, UserError, default_context_overflow_classifier, events
from think_nb.errors import ModelError
from think_nb.names import OVERRIDABLE, SETTINGS
from think_nb.panel.widget import ChatPanel
from think_nb.testing import ScriptedModel as S
from think_nb.turns import overflow

ANTHROPIC_OVERFLOW = "prompt is too long: 213450 tokens > 200000 maximum"
MARKER = "SEED-MARKER"
SUMMARY = "## Topic\nThe seeded conversation (summarised)."


def summarise_all_but_last(messages: list[dict], ctx: Any) -> dict | None:
    """Cover every message between the first (kept: a history starts with the user, as Anthropic
    requires) and the last user message (the turn's) with one summary."""
    last_user = max(n for n, m in enumerate(messages) if m["role"] == "user")
    middle = [m for m in messages[1:last_user] if not m["id"].startswith("compaction_")]
    if not middle:
        return None
    return {"summary": SUMMARY, "from_message_id": middle[0]["id"], "to_message_id": middle[-1]["id"]}


def summarise_first(messages: list[dict], ctx: Any) -> dict | None:
    """Collapse the first message not summarised yet (Think's mock collapses `messages[0]`; a
    later overlay extends back over the earlier one)."""
    first = next(m for m in messages[1:] if not m["id"].startswith("compaction_"))
    return {"summary": SUMMARY, "from_message_id": first["id"], "to_message_id": first["id"]}


@contextlib.contextmanager
def compactions() -> Iterator[list[events.Event]]:
    """The `chat:context:compacted` events of the block."""
    seen: list[events.Event] = []
    with events.subscribe(seen.append, names="chat:context:*"):
        yield seen


def noop(messages: list[dict], ctx: Any) -> None:
    return None


class Counted:
    """A compaction function that counts its calls."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.calls = fn, 0

    def __call__(self, messages: list[dict], ctx: Any) -> dict | None:
        self.calls += 1
        return self.fn(messages, ctx)


def overflow_agent(script: S, compact: Any = summarise_all_but_last, config: Any = True, **attrs: Any) -> Think:
    """A scripted agent with `context_overflow = config`, `compact` as its session's compaction
    function, and `errors` / `continuations` recording what `on_chat_error` / `before_turn` saw."""
    errors: list[Exception] = []
    continuations: list[bool] = []
    attrs.setdefault("on_chat_error", lambda self, error: errors.append(error))
    attrs.setdefault("before_turn", lambda self, ctx: continuations.append(ctx.continuation))
    agent = scripted_agent(script, context_overflow=config,
                           configure_session=lambda self, session: session.on_compaction(compact), **attrs)
    agent.errors, agent.continuations = errors, continuations  # type: ignore[attr-defined]
    return agent


async def seed(agent: Think, pairs: int = 2) -> None:
    """Earlier exchanges whose answers mention `MARKER` (what compaction takes out of the prompt)."""
    messages = []
    for n in range(pairs):
        messages += [{"id": f"seed-u{n}", "role": "user", "parts": [{"type": "text", "text": f"question {n}"}]},
                     {"id": f"seed-a{n}", "role": "assistant",
                      "parts": [{"type": "text", "text": f"{MARKER} answer {n}"}]}]
    await agent.add_messages(messages)


def prompt_text(request: dict) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"])


def seeded_transcript(*tail: tuple[str, str]) -> list[tuple[str, str]]:
    return [("user", "question 0"), ("assistant", f"{MARKER} answer 0"),
            ("user", "question 1"), ("assistant", f"{MARKER} answer 1"), *tail]


def overflow_then(*steps: list) -> S:
    return S([[S.text("partial answer before overflow"), S.error(ANTHROPIC_OVERFLOW)], *steps])


# -- reactive ----------------------------------------------------------------------------------
async def test_reactive_retry_recovers_without_an_orphan_partial() -> None:
    """Think (assistant-agent-loop.test.ts): "recovers a context overflow on the programmatic
    (saveMessages) path" and "does not leave an orphan truncated assistant message after a reactive
    retry": compacted once, two model calls, the retry's prompt without the compacted messages,
    `before_turn` sees `continuation=False` both times, one `chat:context:compacted` event."""
    script = overflow_then([S.text("recovered after compaction")])
    compact = Counted(summarise_all_but_last)
    agent = overflow_agent(script, compact)
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("trigger overflow")
    assert (result.status, result.error) == ("completed", None)
    assert (script.calls, compact.calls, agent.continuations) == (2, 1, [False, False])
    assert [MARKER in prompt_text(r) for r in script.requests] == [True, False]
    expected = seeded_transcript(("user", "trigger overflow"), ("assistant", "recovered after compaction"))
    assert texts(agent) == expected
    assert texts(type(agent)(agent.name)) == expected, "what is stored (a new agent object reads the file)"
    assert agent.messages[-1]["id"] == result.message["id"]
    assert [m["id"] for m in agent.session.history()] == ["seed-u0", IsStr(regex="compaction_.*"), IsStr(), IsStr()]
    assert [(e.name, e.payload) for e in seen] == [
        ("chat:context:compacted", {"reason": "reactive", "shortened": True, "request_id": result.request_id,
                                    "attempt": 1})]
    trace = agent.trace()
    rows = trace[trace["kind"] == "compaction"]
    assert list(rows["hook"]) == ["reactive"]
    assert rows["summary"].iloc[0].startswith("compacted to fit (reactive, attempt 1)")
    assert list(trace[trace["hook"] == "classify_chat_error"]["summary"].str.endswith("→ context_overflow")) == [True]
    assert agent.errors == []


async def test_disabled_recovery_stays_terminal() -> None:
    """Think: "stays terminal when disabled (no compaction, surfaces the error)"; the classifier is
    not even asked, and the error carries no classification."""
    script = overflow_then([S.text("never sent")])
    compact = Counted(summarise_all_but_last)
    asked: list[Any] = []
    agent = overflow_agent(script, compact, config=None,
                           classify_chat_error=lambda self, error, ctx: asked.append(error))
    await seed(agent)
    result = await agent.send("trigger overflow")
    assert result.status == "error" and ANTHROPIC_OVERFLOW in result.error
    assert (script.calls, compact.calls, asked) == (1, 0, [])
    assert [e.classification for e in agent.errors] == [None]
    assert texts(agent) == seeded_transcript(("user", "trigger overflow"),
                                             ("assistant", "partial answer before overflow"))


async def test_a_compaction_that_changes_nothing_ends_the_turn_classified() -> None:
    """Think: "falls through to a terminal error (via onChatError) when compaction can't shorten":
    one compaction attempt (reported once, not shortened), no retry, `on_chat_error` given the
    error classified `context_overflow`; the partial is kept as any failed turn's."""
    script = overflow_then([S.text("never sent")])
    agent = overflow_agent(script, noop)
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("trigger overflow")
    assert result.status == "error" and ANTHROPIC_OVERFLOW in result.error
    assert script.calls == 1
    [error] = agent.errors
    assert isinstance(error, ModelError) and error.classification == "context_overflow"
    assert [e.payload for e in seen] == [{"reason": "reactive", "shortened": False,
                                          "request_id": result.request_id, "attempt": 1}]
    assert texts(agent) == seeded_transcript(("user", "trigger overflow"),
                                             ("assistant", "partial answer before overflow"))
    assert agent.messages[-1]["metadata"]["error"] == result.error


async def test_max_retries_bounds_the_retries() -> None:
    """Think: "stops after contextOverflow.maxRetries when the overflow persists (no infinite
    loop)": two model calls, one compaction, then the classified terminal error."""
    script = S([[S.error(ANTHROPIC_OVERFLOW)], [S.error(ANTHROPIC_OVERFLOW)], [S.text("never sent")]])
    compact = Counted(summarise_all_but_last)
    agent = overflow_agent(script, compact, config={"max_retries": 1})
    await seed(agent)
    result = await agent.send("trigger overflow")
    assert result.status == "error"
    assert (script.calls, compact.calls) == (2, 1)
    assert [e.classification for e in agent.errors] == ["context_overflow"]
    assert [MARKER in prompt_text(r) for r in script.requests] == [True, False]


async def test_more_retries_when_allowed() -> None:
    """`max_retries=2`: a second overflow is compacted and retried too (each compaction shortens)."""
    script = S([[S.error(ANTHROPIC_OVERFLOW)], [S.error(ANTHROPIC_OVERFLOW)], [S.text("third time")]])
    compact = Counted(summarise_first)
    agent = overflow_agent(script, compact, config={"reactive": True, "max_retries": 2})
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("trigger overflow")
    assert result.status == "completed"
    assert (script.calls, compact.calls) == (3, 2)
    assert [e.payload["attempt"] for e in seen] == [1, 2]


async def test_an_aborted_turn_is_never_compacted_or_retried() -> None:
    """Think: "does not compact or retry an aborted turn (abort lands during recovery)" and "... on
    the programmatic path": the classifier aborts the turn at the overflow seam."""
    script = overflow_then([S.text("never sent")])
    compact = Counted(summarise_all_but_last)

    def classify(self: Think, error: Exception, ctx: Any) -> str:
        self.abort_request(ctx.request_id)
        return "context_overflow"

    agent = overflow_agent(script, compact, classify_chat_error=classify)
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("trigger overflow")
    assert result.status == "aborted"
    assert (script.calls, compact.calls, seen) == (1, 0, [])


async def test_a_raising_classifier_counts_as_no_overflow(caplog: pytest.LogCaptureFixture) -> None:
    """Think: a throwing `classifyChatError` is logged and treated as non-overflow; the original
    error ends the turn."""
    script = overflow_then([S.text("never sent")])
    agent = overflow_agent(script, classify_chat_error=lambda self, error, ctx: 1 / 0)
    result = await agent.send("trigger overflow")
    assert result.status == "error" and ANTHROPIC_OVERFLOW in result.error
    assert script.calls == 1
    assert "classify_chat_error() raised ZeroDivisionError" in caplog.text


async def test_a_non_overflow_error_is_not_retried() -> None:
    """Think: the default classifier's negatives end the turn as before (no compaction)."""
    script = S([[S.error("rate limit exceeded")], [S.text("never sent")]])
    compact = Counted(summarise_all_but_last)
    agent = overflow_agent(script, compact)
    result = await agent.send("hi")
    assert result.status == "error" and (script.calls, compact.calls) == (1, 0)
    assert [e.classification for e in agent.errors] == [None]


async def test_the_classifier_sees_the_model_error_and_its_context() -> None:
    """`classify_chat_error(error, ctx)`: the turn's `ModelError` (the model's exception its
    cause) and `ChatErrorContext(stage="stream", request_id=...)` (Think's ctx)."""
    seen: list[tuple[Any, Any]] = []

    def classify(self: Think, error: Exception, ctx: Any) -> str | None:
        seen.append((error, ctx))
        return default_context_overflow_classifier(error)

    agent = overflow_agent(overflow_then([S.text("ok")]), classify_chat_error=classify)
    await seed(agent)
    result = await agent.send("trigger overflow")
    [(error, ctx)] = seen
    assert isinstance(error, ModelError) and isinstance(error.__cause__, RuntimeError)
    assert (ctx.stage, ctx.request_id) == ("stream", result.request_id)


async def test_a_panel_turn_recovers_and_says_it_compacted_to_fit(recording_comm: Any) -> None:
    """Think: "recovers a context overflow on the WebSocket turn path": no error frame, one final
    done frame, the retried text streamed. The panel's status detail says "compacting to fit…"
    while it compacts and "compacted to fit" for the rest of the turn."""
    agent = overflow_agent(overflow_then([S.text("recovered after compaction")]))
    await seed(agent)
    panel = ChatPanel(agent)
    from_js(panel, chat_request("req-ovf", user_msg("trigger overflow")))
    await until(lambda: not agent.is_running and panel.status == "ready", "the turn ends")
    frames = responses(panel, "req-ovf")
    assert [f for f in frames if f.get("error")] == [] and "error" not in chunk_types(frames)
    assert [f for f in frames if f.get("done")] == [IsPartialDone()]
    assert streamed_text(frames) == "partial answer before overflowrecovered after compaction", \
        "what streamed live (Think: the transcript then reconciles the views)"
    assert panel_texts(panel)[-1] == ("assistant", "recovered after compaction")
    details: list[tuple[str, str]] = []
    status, detail = "ready", ""
    for update in state_updates(panel):
        status, detail = update.get("status", status), update.get("status_detail", detail)
        if not details or details[-1] != (status, detail):
            details.append((status, detail))
    assert (("submitted", overflow.COMPACTING) in details and ("streaming", overflow.COMPACTED) in details), details
    assert details.index(("submitted", overflow.COMPACTING)) < details.index(("streaming", overflow.COMPACTED))
    assert details[-1] == ("ready", "")
    assert texts(agent)[-1] == ("assistant", "recovered after compaction")


def panel_texts(panel: ChatPanel) -> list[tuple[str, str]]:
    """(role, text) per message of the transcript the panel holds (its synced `messages`)."""
    return [(m["role"], "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text")) for m in panel.messages]


class IsPartialDone:
    """Matches the final done frame (whatever else it carries), without `error`."""

    def __eq__(self, frame: object) -> bool:
        return isinstance(frame, dict) and frame.get("done") is True and not frame.get("error")


# -- proactive ---------------------------------------------------------------------------------
def tool_steps(n: int, input_tokens: int) -> list[list]:
    return [[S.tool_call("add", {"a": k, "b": 1}), S.usage(input_tokens, 5)] for k in range(n)]


async def test_proactive_compaction_before_a_step_over_budget() -> None:
    """Think: "proactive guard compacts mid-turn before the budget is exceeded": the step after
    one whose input tokens reached max_input_tokens × headroom is sent the compacted history with
    this turn's tool call and result on top; at most `max_compactions` (1) per turn."""
    script = S([*tool_steps(2, 100), [S.text("done"), S.usage(40, 2)]])
    compact = Counted(summarise_all_but_last)
    agent = overflow_agent(script, compact, config={"proactive": {"max_input_tokens": 100}}, tools=[add])
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("use the add tool")
    assert result.status == "completed"
    assert (script.calls, compact.calls) == (3, 1)
    assert [e.payload for e in seen] == [{"reason": "proactive", "shortened": True, "request_id": result.request_id}]
    first, second, third = script.requests
    assert MARKER in prompt_text(first) and MARKER not in prompt_text(second)
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert second["messages"][2]["content"] == SUMMARY
    assert second["messages"][4]["tool_calls"][0]["function"]["name"] == "add"
    assert [m["role"] for m in third["messages"]][-4:] == ["assistant", "tool", "assistant", "tool"]
    assert texts(agent) == seeded_transcript(("user", "use the add tool"), ("assistant", "done"))
    parts = [p["type"] for p in agent.messages[-1]["parts"]]
    assert parts.count("tool-add") == 2, "the turn's own message was never compacted"


async def test_proactive_guard_under_budget_does_nothing() -> None:
    """Below max_input_tokens × headroom (89 < 90) nothing is compacted."""
    script = S([*tool_steps(1, 89), [S.text("done")]])
    compact = Counted(summarise_all_but_last)
    agent = overflow_agent(script, compact, config={"proactive": {"max_input_tokens": 100, "headroom": 0.9}},
                           tools=[add])
    await seed(agent)
    assert (await agent.send("use the add tool")).status == "completed"
    assert compact.calls == 0 and MARKER in prompt_text(script.requests[1])


async def test_proactive_guard_fires_twice_with_max_compactions_2() -> None:
    """Think: "proactive guard fires twice in one turn (maxCompactions:2) without corrupting the
    spliced prompt": each later step keeps every tool call paired with its result, the head
    prepended once, and the turn ends with one final answer."""
    script = S([*tool_steps(2, 100), [S.text("done after two tools")]])
    compact = Counted(summarise_first)
    agent = overflow_agent(script, compact, tools=[add],
                           config={"proactive": {"max_input_tokens": 100, "max_compactions": 2}})
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("use the add tool")
    assert result.status == "completed"
    assert (script.calls, len(seen)) == (3, 2)
    for request, calls in zip(script.requests, (0, 1, 2), strict=True):
        messages = request["messages"]
        made = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
        assert len(made) == calls and sorted(made) == sorted(answered)
        assert sum(1 for m in messages if m.get("content") == "use the add tool") == 1
    assert script.requests[1]["messages"][2]["content"] == SUMMARY
    assert [t for r, t in texts(agent) if t == "done after two tools"] == ["done after two tools"]


async def test_a_noop_proactive_compaction_uses_its_one_slot() -> None:
    """Think: "proactive no-op compaction consumes its single slot and does not re-attempt on
    later steps": one attempt, one event, the turn completes uncompacted."""
    script = S([*tool_steps(2, 100), [S.text("done")]])
    compact = Counted(noop)
    agent = overflow_agent(script, compact, config={"proactive": {"max_input_tokens": 100}}, tools=[add])
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("use the add tool")
    assert result.status == "completed"
    assert (script.calls, compact.calls) == (3, 1)
    assert [e.payload["shortened"] for e in seen] == [False]


async def test_proactive_reads_total_tokens_when_input_tokens_are_unknown() -> None:
    """Think: the guard falls back to `totalTokens`; with neither reported it does nothing."""
    script = S([[S.tool_call("add", {"a": 1, "b": 1}), S.usage(None, 5)], [S.text("done")]])
    compact = Counted(summarise_all_but_last)
    agent = overflow_agent(script, compact, config={"proactive": {"max_input_tokens": 100}}, tools=[add])
    await seed(agent)
    assert (await agent.send("use the add tool")).status == "completed"
    assert compact.calls == 0, "usage unknown: nothing to compare"


async def test_both_layers_in_one_turn() -> None:
    """Think: "recovers a context overflow with BOTH layers (proactive guard + reactive
    backstop)": proactive compaction before step 2, step 2 still overflows, the reactive layer
    compacts again and the retried turn answers: 3 model calls, events of both reasons."""
    script = S([[S.tool_call("add", {"a": 2, "b": 40}), S.usage(100, 5)], [S.error(ANTHROPIC_OVERFLOW)],
                [S.text("recovered")]])
    compact = Counted(summarise_first)
    agent = overflow_agent(script, compact, tools=[add],
                           config={"reactive": True, "proactive": {"max_input_tokens": 100}})
    await seed(agent)
    with compactions() as seen:
        result = await agent.send("trigger overflow")
    assert result.status == "completed"
    assert (script.calls, compact.calls) == (3, 2)
    assert sorted(e.payload["reason"] for e in seen) == ["proactive", "reactive"]
    assert texts(agent)[-2:] == [("user", "trigger overflow"), ("assistant", "recovered")]
    assert [p["type"] for p in agent.messages[-1]["parts"]] == ["step-start", "text"], \
        "the first attempt's tool step was discarded with it"


# -- the classifier and the setting ------------------------------------------------------------
OVERFLOWS = [
    "AI_APICallError: prompt is too long: 213450 tokens > 200000 maximum",  # Anthropic
    "This model's maximum context length is 128000 tokens",  # OpenAI
    "context_length_exceeded",  # OpenAI code
    "The input token count exceeds the maximum number of tokens allowed",  # Google
    "Input is too long for requested model",  # Bedrock
    "too many tokens",
    "Please reduce the length of the messages or completion.",  # OpenAI
    "Requested tokens (5000) exceed context window of 4096",  # llama-cpp-python (n_ctx)
]
NOT_OVERFLOWS = ["rate limit exceeded", "network timeout", "401 Unauthorized: invalid api key",
                 "Internal server error (500)", "tool execution failed: ECONNREFUSED", "could not reduce the length"]


def test_default_classifier_positives_and_negatives() -> None:
    """Think: "defaultContextOverflowClassifier classifies common provider context-overflow errors"
    and "returns undefined for unrelated errors"; plus llama.cpp's own error, litellm's class by
    name, and the cause of a `ModelError`."""
    for message in OVERFLOWS:
        assert default_context_overflow_classifier(Exception(message)) == "context_overflow", message
        assert default_context_overflow_classifier(message) == "context_overflow", message
    for message in NOT_OVERFLOWS:
        assert default_context_overflow_classifier(Exception(message)) is None, message
    assert default_context_overflow_classifier(None) is None
    assert default_context_overflow_classifier({"weird": "object"}) is None

    class ContextWindowExceededError(Exception):  # litellm's class name, whatever its text
        pass

    assert default_context_overflow_classifier(ContextWindowExceededError("400")) == "context_overflow"
    wrapped = ModelError("Model 'x' failed: RuntimeError: boom")
    wrapped.__cause__ = RuntimeError(OVERFLOWS[0])
    assert default_context_overflow_classifier(wrapped) == "context_overflow"


def test_the_names_are_declared() -> None:
    assert "context_overflow" in SETTINGS and "classify_chat_error" in OVERRIDABLE


@pytest.mark.parametrize(("value", "message"), [
    ({"max_retries": -1}, ("context_overflow: max_retries = -1 is not a value it takes; max_retries is a whole "
                           "number >= 0, e.g. 1.")),
    ({"reactive": "yes"}, "reactive = 'yes' is not a value it takes; reactive is True or False."),
    ({"proactive": {"max_input_tokens": 0}}, "proactive max_input_tokens = 0 is not a value it takes"),
    ({"proactive": {"max_input_tokens": 100, "headroom": 1.5}},
     "proactive headroom = 1.5 is not a value it takes; proactive headroom is a fraction, 0 < headroom <= 1"),
    ({"proactive": {"max_input_tokens": 100, "max_compactions": 0}}, "proactive max_compactions = 0"),
    ({"proactive": {"headroom": 0.5}}, "proactive needs max_input_tokens"),
    ({"proactive": {"maxInputTokens": 100}}, "proactive has no field 'maxInputTokens'"),
    ({"retries": 1}, "context_overflow has no field 'retries'; its fields are max_retries, proactive, reactive."),
    ("on", "context_overflow = 'on' is not a value it takes"),
])
def test_bad_settings_are_refused_in_one_line(value: Any, message: str) -> None:
    with pytest.raises(UserError, match=r"^class Bad: ") as info:
        type("Bad", (Think,), {"context_overflow": value})
    assert message in str(info.value) and "\n" not in str(info.value)
    agent = scripted_agent(S([]))
    with pytest.raises(UserError, match=r"^Scripted\(\.\.\.\): ") as info:
        agent.context_overflow = value
    assert message in str(info.value)


def test_good_settings_are_taken() -> None:
    coerce = ContextOverflow.coerce
    assert coerce(None) is None and coerce(False) is None
    assert coerce(True) == ContextOverflow(reactive=True, max_retries=1, proactive=None)
    assert coerce({"max_retries": 2}) == ContextOverflow(reactive=True, max_retries=2)
    assert coerce({"proactive": {"max_input_tokens": 1000}}) == ContextOverflow(
        reactive=False, proactive=overflow.Proactive(1000, 0.9, 1))
    config = ContextOverflow(reactive=True, proactive={"max_input_tokens": 10, "headroom": 1})  # type: ignore[arg-type]
    assert config.proactive == overflow.Proactive(10, 1, 1) and coerce(config) is config
    agent = scripted_agent(S([]))
    agent.context_overflow = {"reactive": True, "proactive": {"max_input_tokens": 10}}


# -- a hosted provider's real overflow, through litellm over HTTP ------------------------------
OVERFLOW_BODIES = {
    "openai": {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                                    "resulted in 130517 tokens. Please reduce the length of the messages.",
                         "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}},
    "anthropic": {"type": "error", "error": {"type": "invalid_request_error",
                                             "message": "prompt is too long: 213450 tokens > 200000 maximum"}},
}


def hosted_overflow_agent(server: FakeProvider, compact: Any, causes: list[str],  # noqa: F811
                          config: Any = True) -> Think:
    """An agent on `server` whose classifier records the class of each error's cause."""
    errors: list[Exception] = []

    def classify(self: Think, error: Exception, ctx: Any) -> str | None:
        causes.append(type(error.__cause__).__name__)
        return default_context_overflow_classifier(error, ctx)

    agent = hosted_agent(server, tools=[], context_overflow=config, classify_chat_error=classify,
                         on_chat_error=lambda self, error: errors.append(error),
                         configure_session=lambda self, session: session.on_compaction(compact))
    agent.errors = errors  # type: ignore[attr-defined]
    return agent


async def test_a_providers_real_overflow_400_is_compacted_and_retried(
        server: FakeProvider) -> None:  # noqa: F811
    """The provider answers the first call 400 with its real context-overflow body; litellm raises
    its `ContextWindowExceededError`, the turn compacts and the retry, sent without the compacted
    messages, answers."""
    server.replies += [Reply(status=400, error="overflow", body=OVERFLOW_BODIES[server.format]),
                       Reply(text="Recovered.")]
    causes: list[str] = []
    agent = hosted_overflow_agent(server, summarise_all_but_last, causes)
    await seed(agent)
    result = await agent.send("trigger overflow")
    assert (result.status, result.error) == ("completed", None), (result.error, causes)
    assert causes == ["ContextWindowExceededError"]
    assert len(server.requests) == 2 and server.rejections == []
    assert [MARKER in json.dumps(r["messages"]) for r in server.requests] == [True, False]
    assert texts(agent) == seeded_transcript(("user", "trigger overflow"), ("assistant", "Recovered."))


async def test_a_providers_overflow_compaction_cannot_fix_is_reported_classified(
        server: FakeProvider) -> None:  # noqa: F811
    """No-op compaction: one request, the error names the overflow in the provider's words, and
    `on_chat_error` gets it classified `context_overflow`."""
    server.replies += [Reply(status=400, error="overflow", body=OVERFLOW_BODIES[server.format])]
    causes: list[str] = []
    agent = hosted_overflow_agent(server, noop, causes)
    await seed(agent)
    result = await agent.send("trigger overflow")
    assert result.status == "error" and len(server.requests) == 1
    message = OVERFLOW_BODIES[server.format]["error"]["message"]  # type: ignore[index]
    assert result.error == (f"Model '{server.format}/{server.model_name}' failed: the conversation is longer than "
                            f"the context window of {server.format}/{server.model_name}; compact it (agent.compact()) "
                            f"or start a new session. ({message})")
    assert [e.classification for e in agent.errors] == ["context_overflow"]
