"""Self-test of the kernel harness on a tiny echo anywidget (no think_nb needed)."""

from __future__ import annotations

import textwrap

from harness import FakeFrontend

ECHO_WIDGET = textwrap.dedent(
    """
    import anywidget, traitlets
    class Echo(anywidget.AnyWidget):
        _esm = "export default { render() {} }"
        heard = traitlets.List().tag(sync=True)
        def __init__(self):
            super().__init__()
            self.on_msg(self._on)
        def _on(self, widget, content, buffers):
            self.send({"echo": content})
            self.heard = self.heard + [content]
    w = Echo()
    w
    """
)


def test_fake_frontend_round_trip(frontend: FakeFrontend) -> None:
    fe = frontend
    res = fe.execute("print('hi'); import sys; print(sys.executable)").check()
    assert res.stdout.startswith("hi\n")

    start = len(fe.log)
    fe.execute(ECHO_WIDGET).check()
    (opened,) = fe.anywidget_opens(since=start)
    comm_id = opened["comm_id"]

    fe.send_custom(comm_id, {"type": "ping", "n": 1})
    fe.wait_for(fe.is_custom(comm_id, lambda c: c == {"echo": {"type": "ping", "n": 1}}), timeout=10)
    fe.wait_for(fe.is_update(comm_id, lambda s: s.get("heard") == [{"type": "ping", "n": 1}]),
                timeout=10)
    assert fe.custom_frames(comm_id, since=start) == [{"echo": {"type": "ping", "n": 1}}]


def test_errors_are_collected(frontend: FakeFrontend) -> None:
    res = frontend.execute("1/0")
    assert res.errors and res.errors[0]["ename"] == "ZeroDivisionError"
