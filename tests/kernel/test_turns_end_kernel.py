"""Issue 11 in a real kernel: a tool raising `SystemExit` (or `KeyboardInterrupt`) in a
`%%think` background turn or an awaited `agent.send` ends the turn, and the kernel goes on."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from harness import FakeFrontend

SETUP = textwrap.dedent(
    '''
    from think_nb import Think, tool
    from think_nb.testing import ScriptedModel as S

    @tool
    def exit_sync() -> str:
        """Exits."""
        raise SystemExit("bye")

    @tool
    async def exit_async() -> str:
        """Exits."""
        raise SystemExit("bye")

    @tool
    def interrupt() -> str:
        """Interrupts."""
        raise KeyboardInterrupt

    script = S([])

    class Exits(Think):
        def get_model(self):
            return script.model

        def get_tools(self):
            return [exit_sync, exit_async, interrupt]

        def on_step_finish(self, ctx):
            if ctx.text == "hook exits":
                raise SystemExit("from a hook")

        def on_chat_response(self, result):
            print("turn ended:", result.status, result.error, flush=True)
    '''
)


def printed(text: str) -> Callable[[dict], bool]:
    return lambda m: m["msg_type"] == "stream" and text in m["content"]["text"]


def alive(frontend: FakeFrontend) -> None:
    assert frontend.execute("print(1)", timeout=60).check().stdout == "1\n"


def test_a_tool_raising_system_exit_in_a_think_cell_ends_the_turn_and_the_kernel_goes_on(
        frontend: FakeFrontend) -> None:
    frontend.execute("%load_ext think_nb").check()
    frontend.execute(SETUP).check()
    frontend.execute('script.steps[:] = [[S.tool_call("exit_sync", {}), S.tool_call("exit_async", {})],'
                     ' [S.text("both failed")]]').check()
    start = len(frontend.log)
    frontend.execute("%%think Exits\nexit please").check()  # returns at once; the turn runs in the background
    frontend.wait_for(printed("turn ended: completed None"), timeout=90, since=start)
    alive(frontend)
    out = frontend.execute(
        "agent = Exits('default')\n"
        "print([(p['state'], p['errorText']) for p in agent.messages[-1]['parts'] if p['type'].startswith('tool-')])\n"
        "print(agent.turns()[-1]['status'])").check()
    assert out.stdout.splitlines() == ["[('output-error', 'SystemExit: bye'), ('output-error', 'SystemExit: bye')]",
                                       "completed"]


def test_awaited_turns_survive_system_exit_and_keyboard_interrupt(frontend: FakeFrontend) -> None:
    frontend.execute(SETUP).check()
    frontend.execute("agent = Exits('awaited')").check()
    cases = [('[[S.tool_call("exit_async", {})], [S.text("ok")]]', "completed None"),
             ('[[S.text("hook exits")]]', "error Exits.on_step_finish() raised SystemExit: from a hook"),
             ('[[S.tool_call("interrupt", {})], [S.text("never")]]', "aborted None")]
    for steps, outcome in cases:
        frontend.execute(f"script.steps[:] = {steps}").check()
        out = frontend.execute("result = await agent.send('go')\n"
                               "print('sent:', result.status, result.error, agent.turns()[-1]['status'])",
                               timeout=90).check()
        status = outcome.split()[0]
        assert out.stdout.splitlines() == [f"turn ended: {outcome}", f"sent: {outcome} {status}"]
        alive(frontend)
    # and a background turn still runs to the end
    frontend.execute('script.steps[:] = [[S.text("fine")]]').check()
    start = len(frontend.log)
    frontend.execute("task = agent.submit('again')").check()
    frontend.wait_for(printed("turn ended: completed None"), timeout=90, since=start)
    alive(frontend)
