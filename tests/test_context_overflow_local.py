"""Context-overflow recovery on the embedded SmolLM2 model (llama-cpp-python, `n_ctx=4096`): a
history longer than its window makes llama-cpp raise `ValueError("Requested tokens (N) exceed
context window of 4096")` before it reads the prompt; the default classifier calls that an
overflow, the session is compacted and the same turn runs again on the real model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from think_nb import LOCAL_MODEL, ContextOverflow, Think, TurnConfig, default_context_overflow_classifier, events
from think_nb.errors import ModelError

pytestmark = pytest.mark.localmodel

LONG = " ".join(f"word{n}" for n in range(2_500))  # ~5,000 SmolLM2 tokens: two of them exceed 4096


def summarise_answers(messages: list[dict], ctx: Any) -> dict:
    """Cover the earlier answers (everything between the first message and the turn's)."""
    return {"summary": "Earlier, the assistant listed many words.", "from_message_id": messages[1]["id"],
            "to_message_id": messages[-2]["id"]}


async def test_the_embedded_model_recovers_a_history_longer_than_its_window(tmp_path: Path) -> None:
    """Think's context-overflow-recovery e2e ("reactive success"), on the embedded model: one
    overflowing call classified from llama-cpp's own error, one compaction, the retried call
    answers within the window."""
    seen: list[ModelError] = []

    class Local(Think):
        context_overflow = ContextOverflow(reactive=True)

        def get_tools(self) -> list:
            return []

        def configure_session(self, session: Any) -> Any:
            return session.on_compaction(summarise_answers)

        def before_turn(self, ctx: Any) -> TurnConfig:
            return TurnConfig(max_output_tokens=8)

        def classify_chat_error(self, error: Exception, ctx: Any) -> str | None:
            seen.append(error)  # type: ignore[arg-type]
            return default_context_overflow_classifier(error, ctx)

    agent = Local("local", db=tmp_path / "local.sqlite")
    await agent.add_messages([
        {"id": "u0", "role": "user", "parts": [{"type": "text", "text": "List some words."}]},
        {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": LONG}]},
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "More words."}]},
        {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": LONG}]},
    ])
    compacted: list[events.Event] = []
    with events.subscribe(compacted.append, names="chat:context:compacted"):
        result = await agent.send("Say hello.")
    assert result.status == "completed", result.error
    [error] = seen
    assert isinstance(error.__cause__, ValueError)
    assert "exceed context window of 4096" in str(error.__cause__)
    assert [e.payload["shortened"] for e in compacted] == [True]
    reply = agent.messages[-1]
    assert reply["role"] == "assistant" and reply["metadata"]["model"] == LOCAL_MODEL
    assert "".join(p.get("text", "") for p in reply["parts"] if p["type"] == "text").strip()
    assert reply["metadata"]["usage"]["prompt_tokens"] < 4096
    assert [m["id"] for m in agent.messages[:4]] == ["u0", "a0", "u1", "a1"], "the originals are kept"
