"""The ways a hosted provider fails, over real HTTP, each with one clear outcome.

One parametrised test: failure kind × {OpenAI chat completions, Anthropic messages}, through
litellm's real `openai/` and `anthropic/` providers pointed at a `FakeProvider`. Each turn is sent
from a real `ChatPanel` (its `use_chat_request` frame, as the front end sends it). Every case ends
the turn `error` (or succeeds after the documented retries), with the partial answer persisted,
listeners told the turn ended exactly once, the panel out of "streaming" (its status `error` with
the error shown, or `ready`), `on_chat_error` called once for an error, and a message naming the
provider and the fix. None may hang: the stalls end by the call's `timeout`, and the whole turn
is bounded. A provider that reports no usage gives unknown usage (never 0 tokens or $0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pytest

from agents import eventually
from helpers_comm import from_js
from panels import chat_request, chunks_of, responses, statuses, until
from providers.agents import hosted_agent
from providers.server import Call, FakeProvider, Reply, closed_port
from think_nb.binding import runtime_of
from think_nb.errors import ModelError
from think_nb.panel.widget import ChatPanel

PRICED = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
RETRY_NOW = {"retry-after": "0"}


@dataclass
class Case:
    replies: list[Reply]
    # regex of the error after "Model '<model>' failed: " (or one per format); {p}: the provider, {env}: its key
    # variable; the provider's own words may follow in parentheses. None: the turn succeeds.
    error: str | dict[str, str] | None
    requests: int = 1
    partial: str = ""  # text the persisted partial answer starts with
    options: dict[str, Any] = field(default_factory=dict)
    refused: bool = False  # point the agent at a port nothing listens on
    disconnect: bool = False  # the server must see the client close the request


CASES = {
    "401 bad key": Case([Reply.fail(401, "Incorrect API key provided: sk-test***key.")],
                        r"authentication failed for {p}; set {env} or pass api_key in ModelConfig options\. "
                        r"\(Incorrect API key provided: sk-test\*\*\*key\.\)"),
    "404 model": Case([Reply.fail(404, "model: no-such-model")],
                      r"{p} has no model 'no-such-model' at http://127\.0\.0\.1:\d+(/v1)?; check the model name "
                      r"get_model\(\) returns\. \(model: no-such-model\)"),
    "429, retried, then success": Case([Reply.fail(429, "Rate limit reached", RETRY_NOW), Reply(text="Fine.")],
                                       None, requests=2),
    "429 until the retries run out": Case([Reply.fail(429, "Rate limit reached", RETRY_NOW)] * 3,
                                          r"{p} rate-limited the request after 3 attempts; wait a minute and retry, "
                                          r"or pick another model\. \(Rate limit reached\)", requests=3),
    "500": Case([Reply.fail(500, "The server had an error", RETRY_NOW)] * 3,
                r"{p} had a server error \(500\) after 3 attempts; try again later\. \(The server had an error\)",
                requests=3),
    "connection refused": Case([], r"could not connect to {p} at http://127\.0\.0\.1:\d+(/v1)?; check that the "
                                   r"server is running and api_base is right, or pick another model in get_model\(\)\.",
                               requests=0, refused=True),
    "timeout before the first byte": Case([Reply(text="Never sent.", fault="stall_first_byte")],
                                          r"{p} did not answer within 0\.5 s at http://127\.0\.0\.1:\d+(/v1)?; check "
                                          r"the server, or raise the timeout option of ModelConfig\.",
                                          options={"timeout": 0.5}, disconnect=True),
    "timeout between chunks": Case([Reply(text="The first half, then silence.", fault="stall_between")],
                                   r"{p} did not answer within 0\.5 s at http://127\.0\.0\.1:\d+(/v1)?; check the "
                                   r"server, or raise the timeout option of ModelConfig\.",
                                   partial="The first", options={"timeout": 0.5}, disconnect=True),
    "stream cut mid-way": Case([Reply(text="Half an answer, then the line drops.", fault="cut")],
                               r"the connection to {p} broke mid-answer; the partial answer is kept, regenerate to "
                               r"try again\.", partial="Half an"),
    "stream ended early, cleanly": Case(
        [Reply(text="Half an answer, then a clean but early end.", fault="truncated")],
        r"{p} ended the stream before the answer finished \(no finish reason\); the partial answer is kept, "
        r"regenerate to try again\.", partial="Half an"),
    "stream ended before any content": Case(
        [Reply(text="Never sent.", fault="empty")] * 3,  # nothing streamed: retried like a 500
        r"{p} ended the stream before the answer finished \(no finish reason\) after 3 attempts; the partial answer "
        r"is kept, regenerate to try again\.", requests=3),
    "malformed SSE": Case([Reply(text="Half an answer, then garbage.", fault="malformed")],
                          {"openai": r"openai sent a malformed or incomplete stream; the partial answer is kept, "
                                     r"regenerate to try again\.",
                           # litellm's Anthropic parser skips the broken event, then misses the finish reason
                           "anthropic": r"anthropic ended the stream before the answer finished \(no finish "
                                        r"reason\); the partial answer is kept, regenerate to try again\."},
                          partial="Half an"),
    "tool call with invalid JSON arguments": Case(
        [Reply(tool_calls=[Call("add", '{"a": 2, "b": ')]), Reply(text="Sorry, my arguments were cut.")],
        None, requests=2),
    "usage only in a final choice-less chunk": Case([Reply(text="Counted.", usage_mode="final_only")], None),
    "no usage at all": Case([Reply(text="Not counted.", usage_mode="none")], None),
}


class Listener:
    def __init__(self) -> None:
        self.chunks: list[dict] = []
        self.ends: list[tuple[str, str | None]] = []

    def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
        self.chunks.append(chunk)

    def on_turn_end(self, request_id: str, status: str, error: str | None) -> None:
        self.ends.append((status, error))


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
async def test_a_provider_failure_ends_the_turn_with_one_clear_outcome(fmt: str, kind: str, recording_comm: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    case = CASES[kind]
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")
    name = "no-such-model" if kind == "404 model" else PRICED[fmt]
    async with FakeProvider(fmt, name) as server, closed_port() as port:
        server.replies += case.replies
        errors: list[BaseException] = []
        agent = hosted_agent(server, name=f"{fmt}-{len(kind)}", options=case.options,
                             on_chat_error=lambda self, error: errors.append(error))
        if case.refused:
            agent.model.options["api_base"] = server.api_base.replace(str(server.port), str(port))  # type: ignore[attr-defined]
        listener = Listener()
        runtime_of(agent).subscribe(listener)
        panel = ChatPanel(agent)
        from_js(panel, chat_request("r1"))  # the user sends "What is 2 + 40?" from the panel
        assert await agent.wait_until_stable(timeout=60), "the turn hung"  # a hang fails, it never blocks CI
        ending = "ready" if case.error is None else "error"
        await until(lambda: panel.status == ending, f"the panel's {ending} status")
        [turn] = agent.turns()
        where = f"{fmt}: {kind}"
        assert len(server.requests) == case.requests, where
        assert server.rejections == [], where
        stored = type(agent)(agent.name).messages[-1]  # read back from SQLite by a new object
        assert stored == agent.messages[-1] == panel.messages[-1], where
        assert not any(p.get("state") == "streaming" for p in stored["parts"]), where
        assert listener.ends == [(turn["status"], turn["error"])], where  # told once that the turn ended
        assert not agent.is_running and runtime_of(agent).streaming_turns() == [], where
        assert statuses(panel) == ["submitted", "streaming", ending], where  # out of "streaming", once
        frames = responses(panel, "r1")
        assert (frames[-1]["done"], frames[-1].get("error")) == (True, True if case.error else None), where
        if case.disconnect:
            await eventually(lambda: server.disconnects == 1, what="the server saw the request closed")
        if case.error is None:
            assert (turn["status"], turn["error"], errors, panel.error) == ("completed", None, [], ""), where
            check_success(kind, stored, server, agent)
            return
        error = case.error if isinstance(case.error, str) else case.error[fmt]
        pattern = f"Model '{fmt}/{name}' failed: " + error.format(p=fmt, env=ENV[fmt]) + r"( \(.+\))?"
        assert turn["status"] == "error", where
        assert re.fullmatch(pattern, turn["error"] or ""), (where, turn["error"])
        assert panel.error == turn["error"], where  # the panel shows the error
        assert chunks_of(frames)[-1] == {"type": "error", "errorText": turn["error"]}, where
        assert len(errors) == 1, where  # on_chat_error once, a ModelError caused by the provider's exception
        assert isinstance(errors[0], ModelError) and str(errors[0]) == turn["error"], where
        assert type(errors[0].__cause__).__module__.startswith(("litellm", "openai", "anthropic", "httpx")), where
        assert listener.chunks[-1] == {"type": "error", "errorText": turn["error"]}, where
        assert stored["metadata"]["error"] == turn["error"], where
        text = "".join(p.get("text", "") for p in stored["parts"] if p["type"] == "text")
        assert text.startswith(case.partial) and (bool(text) == bool(case.partial)), (where, text)


def check_success(kind: str, stored: dict, server: FakeProvider, agent: Any) -> None:
    metadata = stored["metadata"]
    usage = metadata["usage"]
    if kind == "no usage at all":  # unknown, never 0 tokens nor $0; litellm's count kept apart as an estimate
        estimate = usage.pop("estimated_tokens")
        assert usage == {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None, "source": None}
        assert estimate["prompt_tokens"] > 0 and estimate["completion_tokens"] > 0
        assert "cost_usd" not in metadata
        [row] = agent.usage_df().to_dict("records")
        assert row["usage_source"] is None and row["estimated_tokens"] == estimate["total_tokens"]
        assert all(pd.isna(row[k]) for k in ("prompt_tokens", "completion_tokens", "total_tokens", "cost_usd"))
    else:
        assert usage == {"prompt_tokens": 24 if kind.startswith("tool") else 12,
                         "completion_tokens": 10 if kind.startswith("tool") else 5,
                         "total_tokens": 34 if kind.startswith("tool") else 17, "source": "reported"}
        assert metadata["cost_usd"] > 0
    if kind.startswith("tool"):
        [part] = [p for p in stored["parts"] if p["type"] == "tool-add"]
        assert part["state"] == "output-error" and part["errorText"].startswith("The tool arguments are not valid JSON")
        assert "The tool arguments are not valid JSON" in str(server.requests[-1]["messages"])
