"""Small helpers shared by the turn-engine tests: scripted agents, transcript matchers, and
`eventually` to wait for a condition instead of a fixed sleep."""

import asyncio
from collections.abc import Callable

from dirty_equals import IsStr

from think_nb import ModelConfig, Think, tool
from think_nb.testing import ScriptedModel


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
def mul(a: float, b: float) -> float:
    """Multiply two numbers."""
    return a * b


def scripted_agent(script: ScriptedModel, tools: list | None = None, name: str = "t", base: type = Think,
                   via_litellm: bool = False, **attrs: object) -> Think:
    """An instance of a fresh Think subclass on `script` with `attrs` as class attributes (hooks...).
    The default workspace tools are left out (`include_workspace_tools=False`) unless `attrs` asks
    for them, so a test sees exactly the tools it passes. `via_litellm=True`: the script runs through
    litellm's custom-provider path, as a hosted model does (import wait, stream wrapper)."""
    attrs.setdefault("include_workspace_tools", False)
    model = ModelConfig(script.model, via_litellm=True) if via_litellm else script.model
    cls = type("Scripted", (base,), {"get_model": lambda self: model,
                                     "get_tools": lambda self: tools if tools is not None else [add, mul], **attrs})
    return cls(name)


async def eventually(condition: Callable[[], object], timeout: float = 60.0, what: str = "") -> None:
    """Wait until `condition()` is true, checking every few milliseconds (other tasks run in
    between); fail after `timeout` seconds. For what no event or future announces: text that
    has streamed, a file another process writes. The timeout only bounds a failure: the
    process's first turn imports litellm first (6 s here, more on a loaded machine)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"not true after {timeout} s: {what or condition}")
        await asyncio.sleep(0.005)


_warm: list[bool] = []


async def warm_litellm() -> None:
    """Run one scripted turn in this process (once): litellm's first call does seconds of lazy set-up
    on a loaded machine, which a stall test's 0.2 s timeout would count as a stall. The import
    itself is excluded by the watchdog; this first-call set-up is not (a real stall timeout is tens
    of seconds)."""
    if not _warm:
        await scripted_agent(ScriptedModel([[ScriptedModel.text("warm")]]), name="warm-litellm").send("hi")
        _warm.append(True)


def streamed(chunks: list) -> Callable[[object, dict], None]:
    """An `on_chunk` hook that records each chunk's type in `chunks`."""
    return lambda self, chunk: chunks.append(chunk["type"])


def user(text: str) -> dict:
    return {"id": IsStr(), "role": "user", "parts": [{"type": "text", "text": text}]}


def texts(agent: Think) -> list[tuple[str, str]]:
    """(role, concatenated text) per message of the current branch."""
    return [(m["role"], "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text")) for m in agent.messages]


def calc_setup(answer: str, delay: float) -> str:
    """Notebook/kernel source of a `Calc` agent on a ScriptedModel that adds 2 + 40 and answers `answer`;
    `delay` seconds between streamed chunks (kernel-level and browser tests run it in a real kernel)."""
    return f'''
from think_nb import Think, tool
from think_nb.testing import ScriptedModel

@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b

script = ScriptedModel(
    [
        [ScriptedModel.text("Let me add those. "),
         ScriptedModel.tool_call("add", {{"a": 2, "b": 40}})],
        [ScriptedModel.text({answer!r})],
    ],
    delay={delay},
)

class Calc(Think):
    def get_model(self):
        return script.model

    def get_tools(self):
        return [add]
'''
