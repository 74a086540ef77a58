"""The provider-shaped fakes refuse what the real providers refuse (so the history matrix means something)."""

from __future__ import annotations

import pytest

from providers import anthropic_format, openai_format
from providers.anthropic_format import signature_for

CALL = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
OPENAI_BAD = {
    "unanswered tool call": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None,
                                                                  "tool_calls": [CALL]},
                             {"role": "user", "content": "next"}],
    "orphan tool result": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "1"}],
    "null content": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}],
    "unknown message field": [{"role": "user", "content": "hi"},
                              {"role": "assistant", "content": "a", "thinking_blocks": [{"type": "thinking"}]},
                              {"role": "user", "content": "b"}],
    "id too long": [{"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "c" * 41}]},
                    {"role": "tool", "tool_call_id": "c" * 41, "content": "1"}],
}
USE = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1"}
THINKING = {"type": "thinking", "thinking": "Add them.", "signature": signature_for("Add them.")}
THINKING_ON = {"type": "enabled", "budget_tokens": 1024}
ANTHROPIC_BAD = {
    "unanswered tool_use": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
                            {"role": "user", "content": "next"}],
    "tool_result after text": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
                               {"role": "user", "content": [{"type": "text", "text": "x"}, RESULT]}],
    "orphan tool_result": [{"role": "user", "content": [RESULT]}],
    "two assistants in a row": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"},
                                {"role": "assistant", "content": "b"}],
    "assistant first": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "hi"}],
    "empty text block": [{"role": "user", "content": [{"type": "text", "text": ""}]}],
    "empty content": [{"role": "user", "content": []}, {"role": "assistant", "content": "a"},
                      {"role": "user", "content": "b"}],
    "invalid id": [{"role": "user", "content": "hi"},
                   {"role": "assistant", "content": [{**USE, "id": "functions.add:0"}]},
                   {"role": "user", "content": [{**RESULT, "tool_use_id": "functions.add:0"}]}],
    "duplicate id": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
                     {"role": "user", "content": [RESULT]}, {"role": "assistant", "content": [USE]},
                     {"role": "user", "content": [RESULT]}],
    "thinking with another block's signature": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": signature_for("other")}]},
        {"role": "user", "content": "b"}],
    "thinking after text": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, THINKING]},
        {"role": "user", "content": "b"}],
    "unsigned thinking": [{"role": "user", "content": "hi"},
                          {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
                          {"role": "user", "content": "b"}],
}


@pytest.mark.parametrize("case", list(OPENAI_BAD))
def test_openai_fake_refuses(case: str) -> None:
    assert openai_format.problem({"model": "m", "messages": OPENAI_BAD[case]})


@pytest.mark.parametrize("case", list(ANTHROPIC_BAD))
def test_anthropic_fake_refuses(case: str) -> None:
    assert anthropic_format.problem({"model": "m", "max_tokens": 10, "messages": ANTHROPIC_BAD[case]})


def test_fakes_accept_a_well_formed_tool_exchange() -> None:
    assert openai_format.problem({"messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1"}, {"role": "user", "content": "next"}]}) is None
    assert anthropic_format.problem({"max_tokens": 10, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "x"}, USE]},
        {"role": "user", "content": [RESULT, {"type": "text", "text": "next"}]}]}) is None


def test_with_thinking_enabled_the_answered_tool_use_must_come_after_its_thinking_block() -> None:
    def request(assistant: list[dict], thinking: dict | None = THINKING_ON, max_tokens: int = 5120) -> dict:
        return {"max_tokens": max_tokens, "thinking": thinking, "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": assistant},
            {"role": "user", "content": [RESULT]}]}

    refusal = anthropic_format.problem(request([USE]))
    assert refusal == anthropic_format.THINKING_FIRST.format(n=1, found="tool_use")
    assert refusal.startswith("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                              "`tool_use`. When `thinking` is enabled, a final `assistant` message must start")
    text_first = request([{"type": "text", "text": "x"}, USE])
    assert anthropic_format.problem(text_first) == anthropic_format.THINKING_FIRST.format(n=1, found="text")
    assert anthropic_format.problem(request([THINKING, USE])) is None
    assert anthropic_format.problem(request([USE], thinking=None)) is None  # thinking off: no requirement
    assert anthropic_format.problem(request([THINKING, USE], max_tokens=1024)) == (
        "`max_tokens` must be greater than `thinking.budget_tokens`.")
    # a new user message after a finished exchange: earlier thinking blocks may be left out
    assert anthropic_format.problem({"max_tokens": 5120, "thinking": THINKING_ON, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": [USE]},
        {"role": "user", "content": [RESULT]}, {"role": "assistant", "content": "2."},
        {"role": "user", "content": "and now?"}]}) is None
