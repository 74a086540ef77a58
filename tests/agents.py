"""Small helpers shared by the turn-engine tests: scripted agents and transcript matchers."""

from dirty_equals import IsStr

from think_nb import Think, tool
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
                   **attrs: object) -> Think:
    """An instance of a fresh Think subclass on `script` with `attrs` as class attributes (hooks...)."""
    cls = type("Scripted", (base,), {"get_model": lambda self: script.model,
                                     "get_tools": lambda self: tools if tools is not None else [add, mul], **attrs})
    return cls(name)


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
