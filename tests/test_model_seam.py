"""The model seam (think_nb/models/client.py): in-process models called directly give the same
UIMessageChunk stream as through litellm's custom-provider path, and never import litellm."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from agents import add, scripted_agent
from think_nb import ModelConfig, Think
from think_nb.errors import ModelError
from think_nb.models.client import as_deltas
from think_nb.models.inprocess import BATCH, InProcessClient
from think_nb.models.litellm_client import LitellmClient
from think_nb.models.stream import client_for, stream_step
from think_nb.testing import ScriptedModel as S

TOOLS = [{"type": "function", "function": {"name": "add", "description": "Add.",
                                           "parameters": {"type": "object", "properties": {}}}}]

SCRIPTS: dict[str, list] = {
    "text": [S.text("Hello there, how are you today?", chunk_size=4), S.usage(12, 7)],
    "exact deltas": [S.deltas(["a", "bc", " ", "déf", "😀", "\n\n", "end"]), S.usage(1, 2)],
    "one tool call": [S.tool_call("add", {"a": 2, "b": 40}, id="call_x"), S.usage(30, 9)],
    "text then two tool calls": [S.text("Adding."), S.tool_call("add", {"a": 1, "b": 2}, id="c1"),
                                 S.tool_call("add", {"a": 3, "b": 4}, id="c2", chunk_size=3), S.usage(5, 5)],
    "invalid tool arguments": [S.tool_call("add", "{not json", id="bad"), S.usage(3, 3)],
    "array tool arguments": [S.tool_call("add", "[1, 2]", id="arr"), S.usage(3, 3)],
    "empty tool arguments": [S.tool_call("add", "", id="empty"), S.usage(3, 3)],
    "cut at the token limit": [S.text("A long answer that was cut"), S.finish("length"), S.usage(9, 9)],
}


def _normalise(chunks: list[dict]) -> list[dict]:
    """Part ids are random per call (`new_id`): number them in order of appearance."""
    ids: dict[str, str] = {}
    out = []
    for chunk in chunks:
        chunk = dict(chunk)
        if "id" in chunk:
            chunk["id"] = ids.setdefault(chunk["id"], f"part-{len(ids)}")
        out.append(chunk)
    return out


async def _run(items: list, via_litellm: bool) -> tuple[list[dict], Any, Exception | None]:
    script = S([list(items)])
    chunks: list[dict] = []

    async def emit(chunk: dict) -> None:
        chunks.append(chunk)

    try:
        outcome = await stream_step(ModelConfig(script.model, via_litellm=via_litellm),
                                    [{"role": "user", "content": "go"}], TOOLS, emit)
    except Exception as exc:  # noqa: BLE001 - compared below
        return _normalise(chunks), None, exc
    return _normalise(chunks), outcome, None


async def test_the_in_process_client_hands_a_fast_stream_over_in_lists() -> None:
    """A model's chunks that were ready together reach the translator in lists of at most `BATCH`
    (one generator step per list, not per chunk), every piece in order, the finish last."""
    texts = [f"{n} " for n in range(200)]
    script = S([[S.deltas(texts)]])
    items = [item async for item in InProcessClient().stream(ModelConfig(script.model),
                                                             [{"role": "user", "content": "go"}], [], {})]
    assert all(isinstance(item, list) and 0 < len(item) <= BATCH for item in items)
    assert len(items) == -(-(len(texts) + 1) // BATCH)  # the 200 texts and the finish, in full lists
    deltas = [delta for item in items for delta in as_deltas(item)]
    assert [d.content for d in deltas] == [*texts, None]
    assert deltas[-1].finish_reason == "stop"


def test_the_seam_picks_the_direct_client_for_in_process_models_only() -> None:
    script = S([])
    assert isinstance(client_for(ModelConfig(script.model)), InProcessClient)
    assert isinstance(client_for(ModelConfig("think-local/smollm2-135m-instruct")), InProcessClient)
    assert isinstance(client_for(ModelConfig(script.model, via_litellm=True)), LitellmClient)
    assert isinstance(client_for(ModelConfig("openai/gpt-4o-mini")), LitellmClient)


@pytest.mark.parametrize("name", list(SCRIPTS))
async def test_a_script_streams_the_same_chunks_directly_and_through_litellm(name: str) -> None:
    direct, direct_outcome, direct_error = await _run(SCRIPTS[name], via_litellm=False)
    litellm, litellm_outcome, litellm_error = await _run(SCRIPTS[name], via_litellm=True)
    assert direct_error is None and litellm_error is None
    assert direct == litellm
    assert len(direct) >= 2
    assert direct_outcome == litellm_outcome  # text, tool calls, finish reason, usage and its source


async def test_a_model_error_mid_stream_streams_the_same_chunks_first() -> None:
    items = [S.text("Partial answer"), S.error("upstream exploded")]
    direct, _, direct_error = await _run(items, via_litellm=False)
    litellm, _, litellm_error = await _run(items, via_litellm=True)
    assert direct == litellm
    assert [c["type"] for c in direct] == ["text-start"] + ["text-delta"] * 5
    # both raise a ModelError; its cause is the model's own exception on the direct path, litellm's
    # typed error through litellm
    assert isinstance(direct_error, ModelError) and isinstance(litellm_error, ModelError)
    assert type(direct_error.__cause__).__name__ == "RuntimeError"
    assert type(litellm_error.__cause__).__module__.startswith("litellm")
    assert "upstream exploded" in str(direct_error) and "upstream exploded" in str(litellm_error)


async def test_whole_turns_store_the_same_transcript_either_way(tmp_path: Any) -> None:
    """Two turns with a tool exchange: the stored messages (ids aside) and what the model was sent."""
    def steps() -> list:
        return [[S.text("Let me add."), S.tool_call("add", {"a": 2, "b": 40}, id="call_1"), S.usage(20, 8)],
                [S.text("It is 42."), S.usage(30, 4)],
                [S.text("Still 42."), S.usage(40, 3)]]

    transcripts, sent = [], []
    for via in (False, True):
        script = S(steps())
        model = ModelConfig(script.model, via_litellm=via)
        cls = type("Seam", (Think,), {"get_model": lambda self, m=model: m, "get_tools": lambda self: [add]})
        agent = cls("seam", db=tmp_path / f"{via}.sqlite")
        assert (await agent.send("2 + 40?")).status == "completed"
        assert (await agent.send("again?")).status == "completed"
        transcripts.append(_strip(agent.messages, script.model))
        sent.append([r["messages"] for r in script.requests])
    assert transcripts[0] == transcripts[1]
    assert sent[0] == sent[1]
    assert [p["type"] for p in transcripts[0][1]["parts"]] == ["step-start", "text", "tool-add", "step-start", "text"]


def _strip(messages: list[dict], model: str) -> list[dict]:
    text = json.dumps(messages).replace(model, "MODEL")
    out = json.loads(text)
    for message in out:
        message["id"] = "ID"
        message.get("metadata", {}).pop("requestId", None)
    return out


def test_an_in_process_turn_never_imports_litellm(tmp_path: Any) -> None:
    """A fresh process: import, a scripted turn with a tool and token-counted context, no litellm."""
    code = textwrap.dedent(f"""
        import asyncio, sys
        from think_nb import Think
        from think_nb.testing import ScriptedModel as S

        script = S([[S.tool_call("add", {{"a": 2, "b": 40}})], [S.text("42."), S.usage(5, 2)]])

        def add(a: float, b: float) -> float:
            \"\"\"Add two numbers.\"\"\"
            return a + b

        class Calc(Think):
            def get_model(self):
                return script.model
            def get_tools(self):
                return [add]
            def configure_session(self, session):
                return session.with_context("notes", description="Facts.").compact_after(10_000)

        async def main():
            agent = Calc("c", db={str(tmp_path / "c.sqlite")!r})
            result = await agent.send("2 + 40?")
            print(result.status, result.error, agent.messages[-1]["parts"][-1].get("text"), "litellm" in sys.modules)
        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["completed", "None", "42.", "False"]


def test_a_compaction_with_an_in_process_model_never_imports_litellm(tmp_path: Any) -> None:
    """A compaction's summary goes through the model seam like a turn (issue 29 §6): with a
    scripted model, litellm stays unimported (importing it on the loop froze the kernel 6-24 s)."""
    code = textwrap.dedent(f"""
        import asyncio, sys
        from think_nb import Think
        from think_nb.session import create_compact_function
        from think_nb.testing import ScriptedModel as S

        script = S([[S.text(f"Answer {{n}}, about topic {{n}}.")] for n in range(6)] + [[S.text("## Topics 0-3")]])

        class Notes(Think):
            include_workspace_tools = False
            def get_model(self):
                return script.model
            def configure_session(self, session):
                return session.on_compaction(create_compact_function(tail_token_budget=30))

        async def main():
            agent = Notes("n", db={str(tmp_path / "n.sqlite")!r})
            for n in range(6):
                await agent.send(f"Question {{n}} about topic {{n}}")
            result = await agent.compact()
            print(result["summary"].replace(" ", "_"), "litellm" in sys.modules)
        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["##_Topics_0-3", "False"], out.stderr[-2000:]


def test_import_think_nb_leaves_the_heavy_libraries_for_later() -> None:
    """`import think_nb` (what every script and `%load_ext` pays) imports none of litellm, pandas,
    the workspace's fsspec/httpx, the MCP SDK, the sandbox, llama-cpp or Ray (`map(engine="ray")`):
    each loads on first use."""
    heavy = ["litellm", "pandas", "fsspec", "httpx", "mcp", "pydantic_monty", "llama_cpp", "anywidget", "ray",
             "pyarrow"]
    code = f"import sys, think_nb; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("given", "counts"), [
    ({"prompt_tokens": 3, "completion_tokens": 4}, {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
    ({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 9},
     {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 9}),
    ({"completion_tokens": 5}, None), ({"prompt_tokens": 5, "completion_tokens": None}, None), ({}, None), (None, None),
])
def test_usage_is_whole_or_unknown_never_a_made_up_zero(given: Any, counts: Any) -> None:
    from think_nb.models.client import usage_counts

    assert usage_counts(given) == counts
    # litellm fills a missing count with 0: on its path a prompt of 0 tokens is unknown
    assert usage_counts({"prompt_tokens": 0, "completion_tokens": 5, "total_tokens": 5},
                        zero_prompt_is_missing=True) is None


@pytest.mark.parametrize("via_litellm", [False, True])
async def test_a_partial_usage_report_is_unknown_on_both_paths(via_litellm: bool) -> None:
    from think_nb.testing import _Item

    _, outcome, error = await _run([S.text("Hi."), _Item("usage", {"completion_tokens": 5})], via_litellm)
    assert error is None
    assert outcome.usage is None or outcome.usage_source == "estimated"  # litellm may estimate; never 0
    assert not outcome.usage or outcome.usage["prompt_tokens"] > 0


def test_a_script_that_does_not_record_keeps_nothing_and_numbers_its_calls_the_same() -> None:
    """`ScriptedModel(record=False)` (benchmarks): `requests` stays empty, tool-call ids and the
    transcript are those of a recording script."""
    def transcript(record: bool) -> tuple[list, list]:
        script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("42")]], record=record)
        agent = scripted_agent(script, tools=[add], name=f"r{record}")
        agent.run("add")
        return [[{k: v for k, v in p.items() if k != "providerMetadata"} for p in m["parts"]]
                for m in agent.messages], script.requests

    recorded, sent = transcript(True)
    unrecorded, nothing = transcript(False)
    assert unrecorded == recorded and len(sent) == 2 and nothing == []
