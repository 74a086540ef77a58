"""Child of tests/test_native_exit.py: an agent loads an extension, calls its tool and shuts down,
and the program ends while the Rust thread that completed the last Monty call is still inside
that call into Python (what a loaded machine does by chance, made certain here: the thread
stays in Python for 2 s after it woke the event loop, taking the GIL back every millisecond)."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

from think_nb import Think
from think_nb.binding import runtime_of

MAIN = threading.get_ident()
LINGER = {"on": False}
wake = asyncio.selector_events.BaseSelectorEventLoop._write_to_self  # type: ignore[attr-defined]


def lingering_wake(self: asyncio.AbstractEventLoop) -> None:
    wake(self)
    if LINGER["on"] and threading.get_ident() != MAIN:
        # a foreign thread, still in Python after the loop resumed: it takes the GIL back every
        # millisecond for 2 s, so if the interpreter finalizes meanwhile it meets that at once
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            time.sleep(0.001)


asyncio.selector_events.BaseSelectorEventLoop._write_to_self = lingering_wake  # type: ignore[attr-defined]

SOURCE = ("def add(a, b):\n    return a + b\n"
          "tools = {'add': {'description': 'Add', 'parameters': {}, 'function': add}}\n")


class Ext(Think):
    include_workspace_tools = False

    def get_model(self) -> str:
        return "openai/never-called"


async def main(folder: Path) -> None:
    agent = Ext("native-exit", db=folder / "x.sqlite")
    info = await agent.load_extension({"name": "m", "version": "1"}, SOURCE)
    assert info["state"] == "loaded", info
    tools = await runtime_of(agent).extension_tools()
    assert await tools["m_add"].invoke({"a": 2, "b": 40}) == 42
    LINGER["on"] = True
    await agent.shutdown()  # closes the Monty pool: its completion lingers
    print("done", flush=True)


asyncio.run(main(Path(sys.argv[1])))
