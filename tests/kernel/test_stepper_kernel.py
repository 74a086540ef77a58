"""Step mode in a real kernel: a plain `stepper.next()` (no await) drives the kernel's own loop."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from harness import FakeFrontend

SETUP = textwrap.dedent(
    '''
    from think_nb import Think
    from think_nb.tools.demo import add
    from think_nb.testing import ScriptedModel as S

    script = S([[S.tool_call("add", {"a": 2, "b": 40})], [S.text("It is 42.")]], delay=0.01)

    class Stepped(Think):
        def get_model(self):
            return script.model

        def get_tools(self):
            return [add]

    agent = Stepped("stepped")
    '''
)


def test_plain_next_in_cells_then_await_then_run(frontend: FakeFrontend) -> None:
    frontend.execute(SETUP).check()
    frontend.execute('stepper = agent.step("What is 2 plus 40?")').check()
    first = frontend.execute("event = stepper.next()\nprint(event.hook)").check()
    assert first.stdout.strip() == "before_turn"
    frontend.execute('event.ctx.system = "Edited in a cell."').check()
    second = frontend.execute("event = stepper.next()\nprint(event.hook, event.tool, event.ctx.input)").check()
    assert second.stdout.strip() == "before_tool_call add {'a': 2, 'b': 40}"
    frontend.execute("event.substitute(99)").check()
    third = frontend.execute("event = await stepper.next()\nprint(event.hook, event.ctx.output)").check()
    assert third.stdout.strip() == "after_tool_call 99"
    done = frontend.execute("print(stepper.run().status)").check()
    assert done.stdout.strip() == "completed"
    check = frontend.execute(
        "print(script.requests[0]['messages'][0]['content'])\n"
        "print([p.get('output') for p in agent.messages[-1]['parts'] if p['type'] == 'tool-add'])").check()
    assert check.stdout.strip().splitlines() == ["Edited in a cell.", "[99]"]
    # the kernel is still healthy: background turns and plain cells work after nested stepping
    frontend.execute("task = agent.submit('again')").check()
    assert frontend.execute("print(type(task).__name__)").check().stdout.strip() == "TurnTask"
    assert frontend.execute("print((await task).request_id == task.request_id)").check().stdout.strip() == "True"


def printed(text: str) -> Callable[[dict], bool]:
    """An IOPub predicate: a stream message (a background task's print) containing `text`."""
    return lambda m: m["msg_type"] == "stream" and text in m["content"]["text"]


def test_kernel_interrupt_aborts_a_background_turn_and_keeps_the_partial(frontend: FakeFrontend) -> None:
    frontend.execute(textwrap.dedent(
        '''
        slow = S([[S.text("z" * 400, chunk_size=1)], [S.text("fine")]], delay=0.02)

        class Slow(Think):
            def get_model(self):
                return slow.model

            def on_chunk(self, chunk):
                if chunk["type"] == "text-delta" and not getattr(self, "said_streaming", False):
                    self.said_streaming = True
                    print("streaming", flush=True)

            def on_chat_response(self, response):
                print("turn ended:", response.status, flush=True)

        slow_agent = Slow("slow")
        task = slow_agent.submit("go")
        '''
    )).check()
    # The cell has returned; the turn streams in the background and says so on IOPub.
    frontend.wait_for(printed("streaming"), timeout=60)
    frontend.km.interrupt_kernel()
    frontend.wait_for(printed("turn ended: aborted"), timeout=30)
    out = frontend.execute(
        "import asyncio\nresult = await task\n"
        "print(result.status, 0 < len(slow_agent.messages[-1]['parts'][-1]['text']) < 400)").check()
    assert out.stdout.strip() == "aborted True"
    again = frontend.execute("print((await slow_agent.send('after')).status)", timeout=60).check()
    assert again.stdout.splitlines() == ["turn ended: completed", "completed"]  # usable after the interrupt
