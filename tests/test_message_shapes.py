"""`plain_message` (think_nb.messages.validate) takes a message without the pydantic models of
`think_nb.messages.shapes`; it may only ever accept what those models accept, over any message."""

from __future__ import annotations

from typing import Any

import pydantic
from hypothesis import given, settings
from hypothesis import strategies as st

from think_nb.messages import shapes
from think_nb.messages.validate import check_message, plain_message

edge = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3),
                 st.sampled_from(["", "x" * 256, "x" * 257, "user", "system", "text", "reasoning", "step-start",
                                  "done", "streaming", "file", "data-x", "tool-x", "dynamic-tool"]),
                 st.lists(st.none(), max_size=1), st.dictionaries(st.integers(), st.none(), min_size=1, max_size=1),
                 st.dictionaries(st.text(max_size=2), st.none(), max_size=1))
"""Values for any field: good ones, wrong types, edge lengths, non-string keys."""

plain_part = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "reasoning"]), "text": st.text(max_size=3)},
                          optional={"state": st.sampled_from([None, "done", "streaming"])}),
    st.just({"type": "step-start"}))
plain = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system"]), "parts": st.lists(plain_part, max_size=3)},
    optional={"id": st.text(min_size=1, max_size=3), "metadata": st.none() | st.dictionaries(st.text(max_size=2), edge,
                                                                                              max_size=2)})


@st.composite
def messages(draw: st.DrawFn) -> dict:
    """A plain message with one or two fields (of the message, a part or its metadata) set to any value,
    or given a non-string key: the edge a too-lenient `plain_message` would cross."""
    message = draw(plain)
    for _ in range(draw(st.integers(1, 2))):
        parts = message["parts"] if isinstance(message.get("parts"), list) else []
        targets = [message] + [p for p in parts if isinstance(p, dict)]
        if isinstance(message.get("metadata"), dict):
            targets.append(message["metadata"])
        target = draw(st.sampled_from(targets))
        key = draw(st.sampled_from(["id", "role", "parts", "metadata", "type", "text", "state", 0, "more"]))
        target[key] = draw(edge)
    return message


def accepted_by_models(message: Any) -> bool:
    try:
        shapes.Message.model_validate(message)
        for part in message["parts"]:
            model = shapes.part_model(part["type"])
            if model is not None:
                model.model_validate(part)
    except (pydantic.ValidationError, TypeError, KeyError):
        return False
    return True


@settings(max_examples=1500, deadline=None)
@given(messages())
def test_a_plain_message_is_one_the_models_accept(message: dict) -> None:
    if plain_message(message):
        assert accepted_by_models(message), message


def test_plain_messages_are_the_common_ones_and_the_rest_still_goes_to_the_models() -> None:
    assert plain_message({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]})
    assert plain_message({"role": "assistant", "metadata": {"a": 1}, "parts": [
        {"type": "step-start"}, {"type": "reasoning", "text": "so", "state": "done"}, {"type": "text", "text": "ok"}]})
    for other in ({"role": "user", "parts": [{"type": "text", "text": 3}]},  # the models refuse these
                  {"id": "", "role": "user", "parts": []},
                  {"role": "user", "parts": [{"type": "data-x", "data": 1}]}):  # and take this one
        assert not plain_message(other)
    check_message({"role": "user", "parts": [{"type": "data-x", "data": 1}]}, "m")
