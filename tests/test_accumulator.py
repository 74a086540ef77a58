"""Chunk → UIMessage accumulation (think_nb.messages.accumulator)."""

from think_nb.messages import MessageAccumulator


def build(chunks: list[dict]) -> dict:
    acc = MessageAccumulator("m1")
    for chunk in chunks:
        acc.apply(chunk)
    return acc.message


def test_text_reasoning_and_tool_parts_in_stream_order() -> None:
    message = build([
        {"type": "start", "messageId": "m9", "messageMetadata": {"model": "x"}},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": "r1"}, {"type": "reasoning-delta", "id": "r1", "delta": "hmm"},
        {"type": "reasoning-end", "id": "r1"},
        {"type": "text-start", "id": "t1"}, {"type": "text-delta", "id": "t1", "delta": "Hel"},
        {"type": "text-delta", "id": "t1", "delta": "lo"}, {"type": "text-end", "id": "t1"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "add"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a": 1'},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": ', "b": 2}'},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "add", "input": {"a": 1, "b": 2}},
        {"type": "tool-output-available", "toolCallId": "c1", "output": 3},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop", "messageMetadata": {"usage": {"total_tokens": 5}}},
    ])
    assert message == {
        "id": "m9", "role": "assistant", "metadata": {"model": "x", "usage": {"total_tokens": 5}},
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "hmm", "state": "done"},
            {"type": "text", "text": "Hello", "state": "done"},
            {"type": "tool-add", "toolCallId": "c1", "state": "output-available", "input": {"a": 1, "b": 2},
             "output": 3},
        ],
    }


def test_streamed_tool_input_text_never_becomes_the_parts_input() -> None:
    """Think keeps a partial JSON string off the stored part; `input` comes with `tool-input-available`."""
    acc = MessageAccumulator("m1")
    acc.apply({"type": "tool-input-start", "toolCallId": "c1", "toolName": "add"})
    acc.apply({"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a": 1}'})
    assert acc.parts == [{"type": "tool-add", "toolCallId": "c1", "state": "input-streaming"}]
    acc.apply({"type": "tool-input-available", "toolCallId": "c1", "toolName": "add", "input": {"a": 1}})
    assert acc.parts == [{"type": "tool-add", "toolCallId": "c1", "state": "input-available", "input": {"a": 1}}]


def test_settled_tool_parts_never_regress_and_chunks_are_idempotent() -> None:
    message = build([
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "add", "input": {}},
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": "boom"},
        {"type": "tool-output-available", "toolCallId": "c1", "output": 1},   # replay: ignored
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "add", "input": {"x": 1}},
    ])
    assert message["parts"] == [{"type": "tool-add", "toolCallId": "c1", "state": "output-error", "input": {},
                                 "errorText": "boom"}]


def test_delta_without_start_opens_a_part_and_data_parts_update_in_place() -> None:
    message = build([
        {"type": "text-delta", "id": "t", "delta": "x"},
        {"type": "data-progress", "id": "p", "data": {"n": 1}},
        {"type": "data-progress", "id": "p", "data": {"n": 2}},
        {"type": "data-note", "data": "transient", "transient": True},
        {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c2"},
        {"type": "something-new"},
    ])
    assert message["parts"] == [
        {"type": "text", "text": "x", "state": "streaming"},
        {"type": "data-progress", "id": "p", "data": {"n": 2}},
    ]  # an approval request for a call the message does not hold changes nothing


def test_continuation_appends_to_a_copy_of_the_base_message() -> None:
    base = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Hi", "state": "done"}]}
    acc = MessageAccumulator("ignored", base=base)
    acc.apply({"type": "start", "messageId": "other"})
    acc.apply({"type": "text-delta", "id": "t", "delta": "!"})
    assert acc.message == {"id": "a1", "role": "assistant", "parts": [
        {"type": "text", "text": "Hi", "state": "done"}, {"type": "text", "text": "!", "state": "streaming"}]}
    assert base["parts"] == [{"type": "text", "text": "Hi", "state": "done"}]


def test_an_approved_call_is_not_reopened_by_a_replayed_approval_request() -> None:
    base = {"id": "a1", "role": "assistant", "parts": [
        {"type": "tool-rm", "toolCallId": "c1", "state": "approval-responded", "input": {},
         "approval": {"id": "ap", "approved": True}}]}
    acc = MessageAccumulator("ignored", base=base)
    acc.apply({"type": "tool-approval-request", "approvalId": "ap", "toolCallId": "c1"})
    assert acc.parts[0]["state"] == "approval-responded"
    acc.apply({"type": "tool-output-available", "toolCallId": "c1", "output": "removed"})
    assert acc.parts[0] == {"type": "tool-rm", "toolCallId": "c1", "state": "output-available", "input": {},
                            "approval": {"id": "ap", "approved": True}, "output": "removed"}


def test_metadata_merges_into_a_new_dict_the_chunks_do_not_share() -> None:
    start = {"type": "start", "messageMetadata": {"usage": {"input": 1}}}
    acc = MessageAccumulator("m1")
    acc.apply(start)
    acc.apply({"type": "finish", "messageMetadata": {"usage": {"output": 2}}})
    assert acc.message["metadata"] == {"usage": {"input": 1, "output": 2}}
    assert start["messageMetadata"] == {"usage": {"input": 1}}


def test_an_approved_call_asking_again_opens_a_new_round_only_with_a_new_approval_id() -> None:
    def part(state: str, approval: dict) -> dict:
        return {"type": "tool-execute", "toolCallId": "c1", "state": state, "input": {"code": "x"},
                "approval": approval}

    def after(stored: dict, approval_id: str) -> dict:
        acc = MessageAccumulator("m", base={"id": "m", "role": "assistant", "parts": [stored]})
        acc.apply({"type": "tool-approval-request", "approvalId": approval_id, "toolCallId": "c1",
                   "approvalDescriptor": {"call": "second"}})
        return acc.parts[0]

    approved = part("approval-responded", {"id": "ap1", "approved": True})
    assert after(approved, "ap2") == part("approval-requested", {"id": "ap2", "descriptor": {"call": "second"}})
    assert after(approved, "ap1") == approved  # a replayed request never reopens it
    denied = part("output-denied", {"id": "ap1", "approved": False})
    assert after(denied, "ap2") == denied  # settled parts never move back
    asking = part("approval-requested", {"id": "ap1"})
    assert after(asking, "ap2") == asking  # one open round at a time (the first request stands)
