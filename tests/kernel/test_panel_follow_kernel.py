"""A panel drawn for an older class follows the redefined one (issue 27 §3), in a real kernel over ZMQ
with this test as the front end: `%think Demo`, redefine `class Demo`, `%think Demo` again, then a
message sent from the first panel runs on the new class and both panels get its stream; a turn of the
old class that runs while the class is redefined is not cut, and the panel follows once it ends."""

from __future__ import annotations

import json
import textwrap

from harness import FakeFrontend
from think_nb.panel import protocol

V1 = textwrap.dedent('''
    import asyncio, json
    from think_nb import Think
    from think_nb.testing import ScriptedModel as S
    gate = asyncio.Event()
    s1 = S([[S.text("first Demo, "), S.wait(gate), S.text("done")]] + [[S.text("from the first Demo")]] * 3)
    class Demo(Think):
        def get_model(self):
            return s1.model
''')
V2 = textwrap.dedent('''
    s2 = S([[S.text("from the second Demo")]] * 3)
    class Demo(Think):
        def get_model(self):
            return s2.model
''')


def show(fe: FakeFrontend, line: str, probe: str) -> str:
    start = len(fe.log)
    fe.execute(line).check()
    comm_id = fe.anywidget_opens(since=start)[-1]["comm_id"]
    fe.send_custom(comm_id, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": probe})
    return comm_id


def send_user(fe: FakeFrontend, comm_id: str, rid: str, text: str) -> None:
    message = {"id": f"u-{rid}", "role": "user", "parts": [{"type": "text", "text": text}]}
    fe.send_custom(comm_id, {"type": protocol.USE_CHAT_REQUEST, "id": rid, "trigger": protocol.SUBMIT_MESSAGE,
                             "messages": [message], "clientId": "view-1"})


def streamed_text(fe: FakeFrontend, comm_id: str, rid: str, since: int) -> str:
    frames = [f for f in fe.custom_frames(comm_id, since) if f.get("type") == protocol.USE_CHAT_RESPONSE
              and f.get("id") == rid]
    return "".join(c.get("delta", "") for f in frames for c in f["chunks"] if c.get("type") == "text-delta")


def wait_done(fe: FakeFrontend, comm_id: str, rid: str, since: int) -> None:
    fe.wait_for(fe.is_custom(comm_id, lambda f: f.get("type") == protocol.USE_CHAT_RESPONSE and f.get("id") == rid
                             and f.get("done") is True), timeout=60, since=since)


def stored_texts(fe: FakeFrontend) -> list[str]:
    out = fe.execute('print(json.dumps([p.get("text") for m in Demo("default").messages for p in m["parts"] '
                     'if p["type"] == "text"]))').check().stdout
    return json.loads(out)


def test_a_panel_of_the_older_class_follows_the_redefined_class(frontend: FakeFrontend) -> None:
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    fe.execute(V1).check()
    first = show(fe, "%think Demo", "view-1")

    # a turn of the first class is streaming (it waits on the gate) when the class is redefined
    start = len(fe.log)
    send_user(fe, first, "r1", "hello")
    fe.wait_for(fe.is_custom(first, lambda f: f.get("type") == protocol.USE_CHAT_RESPONSE and any(
        c.get("delta") == "first Demo, " for c in f["chunks"])), timeout=180, since=start)
    # (the kernel's first turn imports the turn machinery: past 60 s at load 10 on 2 cores, CI of ci-fast)
    fe.execute(V2).check()
    second = show(fe, "%think Demo", "view-2")
    fe.execute("gate.set()").check()
    wait_done(fe, first, "r1", start)
    assert streamed_text(fe, first, "r1", start) == "first Demo, done"  # not cut: it ran to its end

    start = len(fe.log)
    send_user(fe, first, "r2", "which Demo are you?")
    wait_done(fe, first, "r2", start)
    assert streamed_text(fe, first, "r2", start) == "from the second Demo"
    wait_done(fe, second, "r2", start)
    assert streamed_text(fe, second, "r2", start) == "from the second Demo"  # one agent, every view
    assert stored_texts(fe) == ["hello", "first Demo, done", "which Demo are you?", "from the second Demo"]

    # `%%think` on the new class streams into the panels already open (no third panel)
    start = len(fe.log)
    fe.execute("%%think Demo\nand now?").check()
    assert fe.anywidget_opens(since=start) == []
    fe.wait_for(fe.is_custom(first, lambda f: f.get("type") == protocol.USE_CHAT_RESPONSE and f.get("done") is True),
                timeout=60, since=start)
    assert stored_texts(fe)[-2:] == ["and now?", "from the second Demo"]


def test_the_same_class_again_or_another_name_does_not_move_panels(frontend: FakeFrontend) -> None:
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    fe.execute(V2.replace("class Demo", "class Other")).check()
    first = show(fe, "%think Other", "view-a")
    show(fe, "%think Other", "view-b")  # the same class object: the same agent
    show(fe, "%think Other other-name", "view-c")  # another agent of the class
    start = len(fe.log)
    send_user(fe, first, "o1", "hi")
    wait_done(fe, first, "o1", start)
    out = fe.execute('from think_nb.frontends.magic.base import SHOWN\n'
                     'print(json.dumps(sorted(a.name for (c, _, _), a in SHOWN.items() if c.__name__ == "Other")))')
    assert json.loads(out.check().stdout) == ["default", "other-name"]
    texts = fe.execute('print(json.dumps([len(Other(n).messages) for n in ("default", "other-name")]))').check().stdout
    assert json.loads(texts) == [2, 0]


QUICKSTART_V1 = textwrap.dedent('''
    import json
    from think_nb import Think
    from think_nb.testing import ScriptedModel as S
    s1 = S([[S.text("from the first Calc")]] * 3)
    class Calc(Think):
        def get_model(self):
            return s1.model
    agent = Calc("q")
''')
QUICKSTART_V2 = textwrap.dedent('''
    s2 = S([[S.text("from the second Calc")]] * 3)
    class Calc(Think):
        def get_model(self):
            return s2.model
    agent = Calc("q")
''')


def test_a_panel_follows_when_the_cell_that_defines_the_class_and_makes_the_agent_runs_again(
        frontend: FakeFrontend) -> None:
    """The quickstart's shape (a stranger's run in Lab, issue 27 §3): one cell defines `Calc` and makes
    `agent = Calc("q")`, another shows `%think agent`. Editing and re-running the class cell, with no
    `%think` after it, moves the panel above to the new class; a second `%think agent` panel and the
    first show the same turns and `agent.messages` is what the file holds."""
    fe = frontend
    fe.execute("%load_ext think_nb").check()
    fe.execute(QUICKSTART_V1).check()
    first = show(fe, "%think agent", "view-1")
    start = len(fe.log)
    send_user(fe, first, "r1", "hello")
    wait_done(fe, first, "r1", start)
    assert streamed_text(fe, first, "r1", start) == "from the first Calc"

    fe.execute(QUICKSTART_V2).check()
    start = len(fe.log)
    send_user(fe, first, "r2", "which Calc are you?")
    wait_done(fe, first, "r2", start)
    assert streamed_text(fe, first, "r2", start) == "from the second Calc"

    second = show(fe, "%think agent", "view-2")
    start = len(fe.log)
    send_user(fe, first, "r3", "and now?")
    wait_done(fe, first, "r3", start)
    wait_done(fe, second, "r3", start)
    assert streamed_text(fe, second, "r3", start) == "from the second Calc"
    out = fe.execute('print(json.dumps([[p.get("text") for p in m["parts"] if p["type"] == "text"] '
                     'for m in agent.messages]))').check().stdout
    assert json.loads(out) == [["hello"], ["from the first Calc"], ["which Calc are you?"], ["from the second Calc"],
                               ["and now?"], ["from the second Calc"]]
