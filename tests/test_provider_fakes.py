"""The provider-shaped fakes refuse what the real providers refuse (so the history matrix means something)."""

from __future__ import annotations

import pytest

from providers import anthropic_format, openai_format

CALL = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
OPENAI_BAD = {
    "unanswered tool call": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None,
                                                                  "tool_calls": [CALL]},
                             {"role": "user", "content": "next"}],
    "orphan tool result": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "1"}],
    "null content": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}],
    "id too long": [{"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "c" * 41}]},
                    {"role": "tool", "tool_call_id": "c" * 41, "content": "1"}],
}
USE = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1"}
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
