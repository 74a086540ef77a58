"""UIMessage history → model messages (think_nb.messages.convert)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from think_nb.messages import to_model_messages, user_message


def test_steps_become_assistant_and_tool_messages() -> None:
    assistant = {"id": "a", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "text", "text": "Adding.", "state": "done"},
        {"type": "tool-add", "toolCallId": "c1", "state": "output-available", "input": {"a": 1}, "output": 2},
        {"type": "tool-div", "toolCallId": "c2", "state": "output-error", "input": {}, "errorText": "ZeroDivision"},
        {"type": "step-start"},
        {"type": "text", "text": "It is 2.", "state": "done"},
    ]}
    assert to_model_messages([user_message("1+1?", id="u"), assistant], "Be brief.") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "1+1?"},
        {"role": "assistant", "content": "Adding.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}},
            {"id": "c2", "type": "function", "function": {"name": "div", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: ZeroDivision"},
        {"role": "assistant", "content": "It is 2."},
    ]


def test_unsettled_tool_calls_and_empty_steps_are_left_out() -> None:
    assistant = {"id": "a", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-add", "toolCallId": "c1", "state": "input-available", "input": {}},
        {"type": "step-start"},
        {"type": "tool-rm", "toolCallId": "c2", "state": "output-denied", "input": {},
         "approval": {"id": "x", "approved": False, "reason": "no"}},
    ]}
    assert to_model_messages([assistant]) == [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "rm", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "The user denied this tool call. no"},
    ]


def test_signed_reasoning_goes_back_as_thinking_blocks_of_its_step_and_only_to_anthropic() -> None:
    from think_nb.models.reasoning import for_provider

    signed = {"anthropic": {"signature": "sig_1"}}
    assistant = {"id": "a", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "reasoning", "text": "Add them.", "state": "done", "providerMetadata": signed},
        {"type": "tool-add", "toolCallId": "call_1", "state": "output-available", "input": {"a": 1}, "output": 2},
        {"type": "step-start"},
        {"type": "reasoning", "text": "Unsigned (an OpenAI-compatible model's).", "state": "done"},
        {"type": "text", "text": "2.", "state": "done"}]}
    messages = to_model_messages([user_message("1+1?"), assistant])
    assert messages == [
        {"role": "user", "content": "1+1?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}}],
         "thinking_blocks": [{"type": "thinking", "thinking": "Add them.", "signature": "sig_1"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "2"},
        {"role": "assistant", "content": "2."}]
    assert for_provider(messages, "anthropic") is messages
    stripped = for_provider(messages, "openai")
    assert [m for m in stripped if "thinking_blocks" in m] == []
    assert stripped[1] == {k: v for k, v in messages[1].items() if k != "thinking_blocks"}
    assert "thinking_blocks" in messages[1]  # the caller's list is left as it was


def test_stored_history_conversion_is_remembered_but_follows_in_place_changes() -> None:
    """`stored=True` remembers each assistant message's conversion (per-turn cost flat with
    history); a part the engine settles in place, or an edit of the returned dicts, is never stale."""
    message = {"id": "a", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-add", "toolCallId": "c1", "state": "approval-requested", "input": {"a": 1},
         "approval": {"id": "ap1"}}]}
    history = [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "add"}]}, message]
    first = to_model_messages(history, stored=True)
    assert first == to_model_messages(history) == [{"role": "user", "content": "add"}]
    message["parts"][1].update(state="output-available", output=2)  # what approve + run do in place
    settled = to_model_messages(history, stored=True)
    assert settled == to_model_messages(history)
    assert [m["role"] for m in settled] == ["user", "assistant", "tool"]
    settled[1]["content"] = "edited by a hook"
    assert to_model_messages(history, stored=True) == to_model_messages(history)


def _final_user(n: int) -> dict:
    return {"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": f"question {n}"}]}


def _assistant(n: int, state: str = "output-available") -> dict:
    part: dict = {"type": "tool-add", "toolCallId": f"c{n}", "state": state, "input": {"a": n}}
    if state == "output-available":
        part["output"] = n + 1
    elif state == "approval-requested":
        part["approval"] = {"id": f"ap{n}"}
    return {"id": f"a{n}", "role": "assistant",
            "parts": [{"type": "step-start"}, part, {"type": "step-start"}, {"type": "text", "text": f"= {n + 1}"}]}


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.tuples(st.sampled_from(["turn", "gated", "settle", "replace", "rewind", "other", "edit"]),
                          st.integers(0, 1000)), max_size=40))
def test_the_remembered_prefix_converts_as_a_fresh_conversion_over_any_history_changes(ops: list) -> None:
    """Property: whatever happens to a conversation between requests (turns appended, a gated call
    left open then settled in place, a message replaced by a new version, a rewind, another
    conversation's request in between, a hook editing the returned model messages), the stored
    conversion (remembered prefix + per-message memo) equals converting the history afresh."""
    history: list[dict] = []
    other = [_final_user(9000), _assistant(9000)]
    for n, (op, k) in enumerate(ops, 1):
        if op == "turn":
            history += [_final_user(n), _assistant(n)]
        elif op == "gated":
            history += [_final_user(n), _assistant(n, "approval-requested")]
        elif op == "settle":
            open_parts = [p for m in history for p in m["parts"] if p.get("state") == "approval-requested"]
            if open_parts:
                open_parts[k % len(open_parts)].update(state="output-available", output=k)  # in place, as approve + run
        elif op == "replace" and history:
            i = k % len(history)
            history[i] = {**history[i], "parts": [*history[i]["parts"], {"type": "text", "text": f"v{k}"}]}
        elif op == "rewind" and history:
            del history[k % len(history):]
        elif op == "other":
            assert to_model_messages(other, stored=True) == to_model_messages(other)
        elif op == "edit" and history:
            got = to_model_messages(history, stored=True)
            if got:
                got[k % len(got)]["content"] = "edited by a hook"  # a hook's in-place edit of its copy
                got.append({"role": "user", "content": "added by a hook"})
        assert to_model_messages(history, stored=True) == to_model_messages(history), op
        assert to_model_messages(history, "system", stored=True) == to_model_messages(history, "system")
