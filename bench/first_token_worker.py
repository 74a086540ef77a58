"""The worker `bench_first_turn.py` counts for its first-token measure: a fresh process that imports
asyncio and one framework, runs a text turn and ends at its first token, nothing more.

It is imported (so its bytecode is cached, as a library's is), never run as a script, and it imports
no harness of its own (no argparse, json, statistics, tempfile): what a process running it costs
above the bare interpreter is the framework's work to a first token (asyncio included: every async
agent needs it). Every side gets the same reply ("hello there") from a model that needs no network
and no tool of the user's; the process ends with `os._exit(0)` when the first text delta reaches
the consumer, so neither the rest of the turn nor the interpreter's shutdown is counted.

    python -c "import first_token_worker as w; w.main()" FRAMEWORK FOLDER
    (bench/ and the think_nb checkout on PYTHONPATH; FOLDER: an empty directory for think_nb's store)
"""

from __future__ import annotations

import asyncio
import os
import sys


def _first_token() -> None:
    """The first text delta reached the consumer: end here (the measure is start -> first token)."""
    sys.stdout.flush()
    os._exit(0)


async def _think_nb(folder: str) -> None:
    """think_nb as a user runs it: a `Think` subclass on a scripted model (the litellm provider seam's
    stand-in), a listener subscribed as the panel would be; its workspace tools offered, as by default."""
    from think_nb import Think
    from think_nb.binding import runtime_of
    from think_nb.testing import ScriptedModel

    script = ScriptedModel([[ScriptedModel.text("hello there")]], record=False)

    class Bench(Think):
        def get_model(self):  # type: ignore[no-untyped-def]
            return script.model

    class Mark:
        def on_chunk(self, request_id: str, chunk: dict, continuation: bool) -> None:
            if chunk.get("type") == "text-delta":
                _first_token()

    agent = Bench("bench", db=os.path.join(folder, "bench.sqlite"))
    runtime_of(agent).subscribe(Mark())
    await agent.send("hi")


async def _pydantic_ai(folder: str) -> None:
    """pydantic-ai: an `Agent` on a `FunctionModel` streaming the same text, read with `stream_text`."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    async def hello(messages, info):  # type: ignore[no-untyped-def]
        yield "hello there"

    agent = Agent(FunctionModel(stream_function=hello))
    async with agent.run_stream("hi") as run:
        async for _ in run.stream_text(delta=True, debounce_by=None):
            _first_token()


async def _agno(folder: str) -> None:
    """agno: an `Agent` whose `Model` subclass yields the same text, read from `arun(stream=True)`."""
    from agno.agent import Agent
    from agno.models.base import Model
    from agno.models.response import ModelResponse

    class Scripted(Model):
        def invoke(self, *a, **k): ...  # type: ignore[no-untyped-def]
        async def ainvoke(self, *a, **k): ...  # type: ignore[no-untyped-def]
        def invoke_stream(self, *a, **k): ...  # type: ignore[no-untyped-def]

        async def ainvoke_stream(self, messages, assistant_message, *a, **k):  # type: ignore[no-untyped-def]
            yield self._parse_provider_response_delta("hello there")

        def _parse_provider_response(self, response, **k):  # type: ignore[no-untyped-def]
            return self._parse_provider_response_delta(response)

        def _parse_provider_response_delta(self, item):  # type: ignore[no-untyped-def]
            return ModelResponse(role="assistant", content=item)

    agent = Agent(model=Scripted(id="scripted"))
    async for event in agent.arun("hi", stream=True):
        if getattr(event, "event", None) == "RunContent" and event.content:
            _first_token()


async def _asyncio(folder: str) -> None:
    """The floor of any async agent: the event loop started, a first token at once (no framework)."""
    _first_token()


WORKERS = {"asyncio": _asyncio, "think_nb": _think_nb, "pydantic_ai": _pydantic_ai, "agno": _agno}


def main() -> None:
    """`sys.argv[1:]`: FRAMEWORK FOLDER. Exits 0 at the first token; 3 if the turn ended without one."""
    framework, folder = sys.argv[1], sys.argv[2]
    asyncio.run(WORKERS[framework](folder))
    sys.stderr.write(f"{framework}: the turn ended without a text delta\n")
    sys.stderr.flush()
    os._exit(3)
