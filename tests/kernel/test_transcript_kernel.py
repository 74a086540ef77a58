"""The transcript by message id over a real kernel (issue 29 §2): every view converges to exactly the
stored branch — two panels of one agent, a view that opened on the first panel from the start, one that
opens later (a page reloaded: the widget's state read again), one that scrolls back through older pages —
through turns, an approval, regenerate, a branch switch, a clear and a session switch; and what each
turn costs on IOPub is the new messages, not the transcript.

The test plays the front end (tests/kernel/harness.py); `View` applies the frames as the panel's reducer
does (js/src/transcript.ts, in Python: tests/panels.py `apply_patch`), and the branch is read back from
the agent with a cell.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from harness import FakeFrontend
from panels import apply_patch
from think_nb.panel import protocol
from think_nb.panel.transcript import WINDOW

SETUP = textwrap.dedent('''
    import json
    from think_nb import Think, tool
    from think_nb.binding import runtime_of
    from think_nb.testing import ScriptedModel as S

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    script = S([[S.text("one")], [S.text("two")], [S.text("two, again")],
                [S.tool_call("delete_file", {"path": "a.txt"}, id="call-1")], [S.text("Deleted.")],
                [S.text("after the clear")]])

    class Keeper(Think):
        def get_model(self):
            return script.model
        def get_tools(self):
            return [delete_file]

    agent = Keeper("keeper")
    history = []
    for i in range(75):  # a stored history longer than a window
        history += [{"id": f"hu{i}", "role": "user", "parts": [{"type": "text", "text": f"q{i}"}]},
                    {"id": f"ha{i}", "role": "assistant",
                     "parts": [{"type": "text", "text": f"a{i}", "state": "done"}]}]
    runtime_of(agent).conversation.attach(history, None)
    a = agent.panel(); display(a)
    b = agent.panel(); display(b)

    def branch():
        print(json.dumps(agent.messages))
''')


class View:
    """One view of a panel: what it holds, as the reducer applies the frames it hears (in order)."""

    def __init__(self, fe: FakeFrontend, comm: str, probe: str, state: dict, since: int) -> None:
        self.fe, self.comm, self.probe, self.read = fe, comm, probe, since
        self.held: list[dict] = list(state["messages"])
        self.rev, self.more = state["transcript"]["rev"], state["transcript"]["more"]

    def hear(self) -> None:
        frames = self.fe.custom_frames(self.comm, self.read)
        self.read = len(self.fe.log)
        for frame in frames:
            mine = frame.get("probeId") == self.probe
            if frame["type"] == protocol.TRANSCRIPT_PATCH and (mine or not frame.get("probeId")):
                assert mine or frame["base"] == self.rev, f"patch {frame['rev']} on {frame['base']}, view at {self.rev}"
                at = [m["id"] for m in self.held].index(frame["after"]) if frame["after"] in [
                    m["id"] for m in self.held] else -1
                self.more = bool(frame.get("more")) if frame["after"] is None else (at < 0 or self.more)
                self.held, self.rev = apply_patch(self.held, frame), frame["rev"]
            elif frame["type"] == protocol.TRANSCRIPT_PAGE and mine:
                assert frame["rev"] == self.rev and frame["before"] == self.held[0]["id"]
                self.held, self.more = frame["messages"] + self.held, frame["more"]

    def scroll_back(self) -> None:
        """Ask for older pages until none is left."""
        while self.more:
            start = len(self.fe.log)
            self.fe.send_custom(self.comm, {"type": protocol.TRANSCRIPT_REQUEST, "probeId": self.probe,
                                            "before": self.held[0]["id"], "limit": 50})
            self.fe.wait_for(self.fe.is_custom(self.comm, lambda f: f["type"] == protocol.TRANSCRIPT_PAGE), since=start)
            self.hear()


def comm_ids(fe: FakeFrontend, since: int) -> list[str]:
    return [o["comm_id"] for o in fe.anywidget_opens(since=since)]


def branch(fe: FakeFrontend) -> list[dict]:
    return json.loads(fe.execute("branch()").check().stdout)


def reload_state(fe: FakeFrontend, comm: str) -> tuple[dict, int]:
    """A reloaded page: the widget's state read again (`request_state`), as JupyterLab's manager does."""
    start = len(fe.log)
    fe._send_comm(comm, {"method": "request_state"})
    fe.wait_for(fe.is_update(comm, lambda s: "messages" in s), since=start)
    state = fe.state_updates(comm, since=start)[-1]
    return state, len(fe.log)


def settle(fe: FakeFrontend, comm: str, status: str, since: int) -> None:
    fe.wait_for(fe.is_update(comm, lambda s: s.get("status") == status), timeout=60, since=since)
    fe.execute("pass").check()  # the turn's end has been handled: its patches are on IOPub before this reply


def send(fe: FakeFrontend, comm: str, rid: str, text: str, **extra: Any) -> None:
    message = {"id": f"u-{rid}", "role": "user", "parts": [{"type": "text", "text": text}]}
    fe.send_custom(comm, {"type": protocol.USE_CHAT_REQUEST, "id": rid, "trigger": protocol.SUBMIT_MESSAGE,
                          "messages": [message], **extra})


def test_every_view_converges_to_the_stored_branch(frontend: FakeFrontend) -> None:
    fe = frontend
    start = len(fe.log)
    fe.execute(SETUP).check()
    comm_a, comm_b = comm_ids(fe, start)
    views = [View(fe, comm_a, "a1", fe.opened_state(comm_a), len(fe.log)),
             View(fe, comm_b, "b1", fe.opened_state(comm_b), len(fe.log))]
    assert [len(v.held) for v in views] == [WINDOW, WINDOW] and all(v.more for v in views)
    for view in views:  # the views attach (their resume probe), on the revision they opened on
        fe.send_custom(view.comm, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": view.probe, "transcriptRev": 0})

    def converged(label: str) -> None:
        stored = branch(fe)
        for view in views:
            view.hear()
            assert view.held == stored[len(stored) - len(view.held):], f"{label}: view {view.probe}"
            assert len(view.held) >= min(len(stored), WINDOW) and view.more == (len(view.held) < len(stored)), label

    steps = [
        ("a turn", lambda: send(fe, comm_a, "r1", "first")),
        ("a turn from the other panel", lambda: send(fe, comm_b, "r2", "second")),
        ("regenerate", lambda: fe.send_custom(comm_a, {
            "type": protocol.USE_CHAT_REQUEST, "id": "r3", "trigger": protocol.REGENERATE_MESSAGE,
            "messages": [{"id": "u-r2", "role": "user", "parts": [{"type": "text", "text": "second"}]}]})),
    ]
    for label, act in steps:
        mark = len(fe.log)
        act()
        settle(fe, comm_a, "ready", mark)
        converged(label)

    # a page reloaded: the widget's state as it is now, then the patches that follow
    state, since = reload_state(fe, comm_a)
    assert state["transcript"]["rev"] == views[0].rev and state["messages"] == views[0].held[-WINDOW:]
    views.append(View(fe, comm_a, "a2", state, since))

    # a view that opened on the first state and heard none of the patches since (a model created from a
    # stale state: marimo re-rendering its element, frames passing before the model listened): its resume
    # probe names the revision it opened on, and the kernel sends it the newest window first
    stale = View(fe, comm_a, "a3", fe.opened_state(comm_a), len(fe.log))
    assert stale.rev == 0 != views[0].rev
    mark = len(fe.log)
    fe.send_custom(comm_a, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "a3", "transcriptRev": 0})
    fe.wait_for(fe.is_custom(comm_a, lambda f: f.get("type") == protocol.STREAM_RESUME_NONE), since=mark)
    views.append(stale)
    converged("a stale view attached")
    mark = len(fe.log)
    fe.send_custom(comm_a, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "a4", "transcriptRev": views[0].rev})
    fe.wait_for(fe.is_custom(comm_a, lambda f: f.get("type") == protocol.STREAM_RESUME_NONE), since=mark)
    assert not [f for f in fe.custom_frames(comm_a, mark) if f["type"] == protocol.TRANSCRIPT_PATCH]  # current

    versions = [m for m in branch(fe) if m["role"] == "assistant"][-1]["id"]
    first_reply = json.loads(fe.execute(f"print(json.dumps([m['id'] for m in agent.get_branches({versions!r})]))")
                             .check().stdout)[0]
    mark = len(fe.log)
    fe.send_custom(comm_b, {"type": protocol.SWITCH_BRANCH, "messageId": first_reply})
    fe.wait_for(fe.is_custom(comm_a, lambda f: f["type"] == protocol.TRANSCRIPT_PATCH), since=mark)
    converged("switch back to the first reply")

    mark = len(fe.log)
    send(fe, comm_a, "r4", "delete a.txt")
    settle(fe, comm_a, "awaiting-approval", mark)
    converged("awaiting approval")
    mark = len(fe.log)
    fe.send_custom(comm_b, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-1", "approved": True})
    settle(fe, comm_a, "ready", mark)
    converged("approved and continued (the call's message changed in place)")

    for view in views[:2]:  # scrolled back to the first message: the whole stored branch
        view.scroll_back()
    converged("scrolled back")
    assert views[0].held == branch(fe) and len(views[0].held) > 150

    mark = len(fe.log)
    fe.send_custom(comm_a, {"type": protocol.CHAT_CLEAR})
    fe.wait_for(fe.is_custom(comm_b, lambda f: f["type"] == protocol.TRANSCRIPT_PATCH and f["after"] is None),
                since=mark)
    converged("clear")
    assert all(v.held == [] and not v.more for v in views)
    mark = len(fe.log)
    send(fe, comm_b, "r5", "hello again")
    settle(fe, comm_a, "ready", mark)
    converged("a turn after the clear")
    assert [m["parts"][-1]["text"] for m in views[2].held] == ["hello again", "after the clear"]
    assert views[3].held == views[2].held


def test_a_turn_sends_its_new_messages_once_not_the_transcript(frontend: FakeFrontend) -> None:
    fe = frontend
    start = len(fe.log)
    fe.execute(textwrap.dedent('''
        script2 = S([[S.text("x" * 50)]])
        class Long(Think):
            def get_model(self):
                return script2.model
        long_agent = Long("long")
        rows = []
        for i in range(1000):
            rows += [{"id": f"lu{i}", "role": "user", "parts": [{"type": "text", "text": "q" * 100}]},
                     {"id": f"la{i}", "role": "assistant",
                      "parts": [{"type": "text", "text": "a" * 100, "state": "done"}]}]
        runtime_of(long_agent).conversation.attach(rows, None)
        display(long_agent.panel())
    ''')).check()
    [comm] = comm_ids(fe, start)
    fe.send_custom(comm, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "v1", "transcriptRev": 0})
    mark = len(fe.log)
    send(fe, comm, "r1", "hi")
    settle(fe, comm, "ready", mark)
    sent = fe.custom_frames(comm, mark)
    patches = [f for f in sent if f["type"] == protocol.TRANSCRIPT_PATCH]
    assert [[m["id"] for m in p["messages"]] for p in patches] == [["u-r1"], [patches[-1]["messages"][0]["id"]]]
    assert not [s for s in fe.state_updates(comm, mark) if "messages" in s]  # never the transcript trait
    assert sum(len(json.dumps(p)) for p in patches) < 2_000  # two short messages, of a 2,000-message branch
