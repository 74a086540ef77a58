"""A real OpenAI-compatible server: llama-cpp-python's own (`python -m llama_cpp.server`, its
`server` extra) on 127.0.0.1 with the embedded SmolLM2 GGUF, reached as `openai/smollm2` with
`api_base` — the code path of OpenAI, vLLM, LM Studio or Ollama's OpenAI endpoint.

llama-cpp-python's server cannot stream with `tool_choice="auto"` ("Automatic streaming tool choice
is not supported", docs/platform-facts.md §8), so the tool turn forces the tool and stops after
one step, and the next turn answers with `tool_choice="none"`.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from agents import add, eventually
from think_nb import ModelConfig, Think
from think_nb.binding import runtime_of
from think_nb.messages.convert import provider_call_id
from think_nb.models.local import gguf_path
from think_nb.turns.hooks import TurnConfig
from think_nb.turns.signal import AbortController

pytestmark = pytest.mark.localmodel
ALIAS = "smollm2"


@dataclass
class LlamaServer:
    port: int
    process: subprocess.Popen
    log: list[str] = field(default_factory=list)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model(self, **options: object) -> ModelConfig:
        return ModelConfig(f"openai/{ALIAS}", {"api_base": self.api_base, "api_key": "none", "temperature": 0,
                                               "max_tokens": 48, **options})


@pytest.fixture(scope="module")
def llama_server() -> Iterator[LlamaServer]:
    """llama_cpp.server on a free loopback port (ready when uvicorn says so); stopped after the module."""
    with socket.socket() as probe:  # a free port: bound by the OS, released for the server to take
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", ALIAS,
         "--chat_format", "chatml-function-calling", "--n_ctx", "4096", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    server = LlamaServer(port, process)
    assert process.stdout is not None
    for line in process.stdout:  # blocks until the server says it listens, or exits
        server.log.append(line)
        if "Uvicorn running on" in line:
            break
    else:
        raise AssertionError("llama_cpp.server exited:\n" + "".join(server.log[-20:]))
    drain = threading.Thread(target=lambda: server.log.extend(process.stdout or []), daemon=True)
    drain.start()
    yield server
    process.terminate()
    process.wait(timeout=30)


class OnServer(Think):
    # Only `add`: the server's model is not the embedded one by name, so Think's seven workspace tools would be
    # offered too, and their schemas make the first prompt 1,065 tokens (~50 s of prompt evaluation on 2 loaded
    # cores); this file tests the OpenAI-compatible path, not those tools.
    include_workspace_tools = False
    server: LlamaServer
    choice: object = "auto"
    max_steps_now: int | None = None
    server_options: dict = {}  # noqa: RUF012 - replaced per instance, never mutated

    def get_model(self) -> ModelConfig:
        return self.server.model(**self.server_options)

    def get_tools(self) -> list:
        return [add]

    def before_turn(self, ctx: object) -> TurnConfig:
        self.seen = ctx.messages  # type: ignore[attr-defined]
        return TurnConfig(tool_choice=self.choice, max_steps=self.max_steps_now)


def listener(chunks: list) -> object:
    """A listener (turns/broadcast.py) that keeps every chunk."""
    return type("Listener", (), {"on_chunk": lambda self, request_id, chunk, continuation: chunks.append(chunk)})()


def agent_on(server: LlamaServer, name: str) -> OnServer:
    return type("OnServer", (OnServer,), {"server": server})(name)


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THINK_NB_ALLOW_MODEL_REQUESTS", "1")


async def test_tool_call_then_a_streamed_answer_with_the_exchange_in_history(llama_server: LlamaServer) -> None:
    chunks: list[dict] = []
    agent = agent_on(llama_server, "tools")
    runtime_of(agent).subscribe(listener(chunks))
    agent.choice, agent.max_steps_now = {"type": "function", "function": {"name": "add"}}, 1
    first = await agent.send("What is 2 plus 40? Use the add tool.")
    assert (first.status, first.error) == ("completed", None)
    [call] = [p for p in agent.messages[-1]["parts"] if p["type"] == "tool-add"]
    assert (call["state"], call["input"], call["output"]) == ("output-available", {"a": 2, "b": 40}, 42)
    usage = agent.messages[-1]["metadata"]["usage"]
    # llama-cpp-python's server streams no usage: unknown (never 0), litellm's count kept apart as an estimate
    assert (usage["source"], usage["prompt_tokens"], usage["total_tokens"]) == (None, None, None)
    assert usage["estimated_tokens"]["prompt_tokens"] > 0
    assert "cost_usd" not in agent.messages[-1]["metadata"]  # a local alias has no price: unknown, not $0.00

    chunks.clear()
    agent.choice, agent.max_steps_now = "none", None
    second = await agent.send("What did the add tool return?")
    assert (second.status, second.error) == ("completed", None)
    # the first turn's exchange went to the server (the server's 57-character call id, shortened for any provider)
    assert len(call["toolCallId"]) > 40
    assert {"role": "tool", "tool_call_id": provider_call_id(call["toolCallId"]), "content": "42.0"} in agent.seen
    assert sum(c["type"] == "text-delta" for c in chunks) >= 2  # streamed, not one block
    assert agent.messages[-1]["parts"][-1]["type"] == "text" and agent.messages[-1]["parts"][-1]["text"].strip()
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]


async def test_abort_mid_stream_closes_the_http_request(llama_server: LlamaServer) -> None:
    chunks: list[dict] = []
    agent = agent_on(llama_server, "abort")
    agent.choice = "none"
    runtime_of(agent).subscribe(listener(chunks))
    controller = AbortController()
    before = len(llama_server.log)
    agent.server_options = {"max_tokens": 400}
    task = asyncio.ensure_future(agent.save_messages(
        [{"role": "user", "parts": [{"type": "text", "text": "Write a long story about a lighthouse keeper."}]}],
        signal=controller.signal))
    await eventually(lambda: sum(c["type"] == "text-delta" for c in chunks) >= 2, what="the answer started streaming")
    controller.abort("enough")
    result = await task
    assert result.status == "aborted"
    assert agent.messages[-1]["parts"][-1]["state"] == "done"  # the partial is kept, not "streaming"
    await eventually(lambda: any("Disconnected from client" in line for line in llama_server.log[before:]),
                     what="the server saw the request closed")


async def test_regenerate_replaces_the_answer_on_a_new_branch(llama_server: LlamaServer) -> None:
    agent = agent_on(llama_server, "regen")
    agent.choice = "none"
    first = await agent.send("Say hello.")
    assert first.status == "completed"
    again = await agent.regenerate()
    assert (again.status, again.error) == ("completed", None)
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]
    assert len(agent.get_branches(agent.messages[-1]["id"])) == 2
