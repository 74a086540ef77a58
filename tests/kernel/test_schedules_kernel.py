"""A scheduled task in a real kernel (issue 12): a 1-second interval task runs twice on the
kernel's event loop, between cells, while the kernel keeps answering."""

from __future__ import annotations

import textwrap

from harness import FakeFrontend

SETUP = textwrap.dedent(
    '''
    from think_nb import Think
    from think_nb.models.litellm_env import get_litellm
    from think_nb.testing import ScriptedModel as S

    get_litellm()  # imported before the clock starts: seconds (a minute on a loaded machine) of the first turn

    script = S([[S.text(f"pong {n}")] for n in range(10)])

    class Pinger(Think):
        def get_model(self):
            return script.model

        def on_chat_response(self, result):
            print("scheduled turn:", result.status, flush=True)

    agent = Pinger("pinger")
    agent.schedule_every(1, "ping", id="ping")
    '''
)


def test_a_one_second_interval_task_runs_twice_in_a_live_kernel(frontend: FakeFrontend) -> None:
    frontend.execute("%load_ext think_nb").check()
    start = len(frontend.log)
    frontend.execute(SETUP, timeout=300).check()  # returns once litellm is imported; the schedule runs on the loop
    try:
        first = frontend.wait_for(lambda m: m["msg_type"] == "stream" and "scheduled turn: completed" in
                                  m["content"]["text"], timeout=300, since=start)
    except TimeoutError:
        printed = "".join(m["content"]["text"] for m in frontend.log[start:] if m["msg_type"] == "stream")
        raise AssertionError(f"no scheduled turn completed; the kernel printed:\n{printed[-3000:]}") from None
    assert frontend.execute("print(1 + 1)", timeout=60).check().stdout == "2\n"  # the kernel answers between runs
    frontend.wait_for(lambda m: m["msg_type"] == "stream" and "scheduled turn: completed" in m["content"]["text"],
                      timeout=60, since=frontend.log.index(first) + 1)
    out = frontend.execute("agent.cancel_schedule('ping')\n"
                           "turns = agent.turns()\n"
                           "print([t['trigger'] for t in turns][:2], [t['status'] for t in turns][:2])\n"
                           "print([m['parts'][-1]['text'] for m in agent.messages][:4])").check()
    assert out.stdout.splitlines() == ["['scheduled', 'scheduled'] ['completed', 'completed']",
                                       "['ping', 'pong 0', 'ping', 'pong 1']"]
