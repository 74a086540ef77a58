"""Issue 26 in a real kernel (jupyter_client): a scripted model lists the notebook's variables,
describes a 1,000,000-row DataFrame, proposes code that is approved, edited-and-approved and
denied; prints, tables and a PNG come back and land in no cell; undo restores; the kernel's
interrupt stops `while True: pass` in a turn running outside any cell and the kernel stays
usable; hostile code (rebinding get_ipython, deleting the agent, SystemExit, 50 MB printed, a
thread that keeps printing) ends settled."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from harness import FakeFrontend, wait_until

SETUP = textwrap.dedent(
    """
    import json
    import numpy as np, pandas as pd
    from think_nb import Think
    from think_nb.testing import ScriptedModel as S

    script = S([])

    class Analyst(Think):
        include_workspace_tools = False
        include_kernel_tools = True

        def get_model(self):
            return script.model

        def on_chat_response(self, result):
            print("turn ended:", result.status, flush=True)

    class Runner(Analyst):
        include_kernel_tools = "allow"

    def part(agent, call_id):
        return next(p for m in agent.messages for p in m["parts"] if p.get("toolCallId") == call_id)

    def told(call_id):  # the tool message's text (a figure also reaches a vision model as an image part)
        content = [m["content"] for m in script.requests[-1]["messages"] if m.get("tool_call_id") == call_id][-1]
        return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)

    big = pd.DataFrame({"a": np.arange(1_000_000), "b": np.random.default_rng(0).random(1_000_000)})
    small = pd.DataFrame({"x": [1, 2, 3], "y": [10, 20, 30]})
    agent = Analyst("analyst")
    """
)


def out(frontend: FakeFrontend, code: str, timeout: float = 120) -> object:
    """Run `code` in the kernel; it prints one JSON value, returned."""
    result = frontend.execute(code, timeout=timeout).check()
    return json.loads(result.stdout.strip().splitlines()[-1])


def set_up_with_marker(frontend: FakeFrontend, name: str) -> Path:
    """Run SETUP; return the kernel's path `name` (in its working directory), absent: the file the
    kernel-side code writes when it reaches the point a test waits for."""
    frontend.execute(SETUP, timeout=120).check()
    folder = Path(out(frontend, "import os\nprint(json.dumps(os.getcwd()))"))  # type: ignore[arg-type]
    marker = folder / name
    marker.unlink(missing_ok=True)
    return marker


def alive(frontend: FakeFrontend) -> None:
    assert frontend.execute("print(40 + 2)", timeout=60).check().stdout == "42\n"


def no_leak(frontend: FakeFrontend, since: int, *texts: str) -> None:
    """None of `texts` reached IOPub (any cell's output) since `since`."""
    for msg in frontend.log[since:]:
        content = json.dumps(msg["content"])
        for text in texts:
            assert text not in content, f"{text!r} leaked into {msg['msg_type']}"


def test_the_model_sees_the_notebook_and_runs_gated_code(frontend: FakeFrontend) -> None:
    frontend.execute(SETUP, timeout=120).check()
    frontend.execute("small_total = int(small['y'].sum())\nsmall_total").check()
    frontend.execute('script.steps[:] = [[S.tool_call("list_variables", {}, id="l1"), '
                     'S.tool_call("notebook_history", {"last": 3}, id="h1"), '
                     'S.tool_call("describe_variable", {"name": "big"}, id="d1")], [S.text("seen")]]').check()
    seen = out(frontend, "r = await agent.send('what is there?')\n"
                         "print(json.dumps([r.status, part(agent, 'l1')['output'], part(agent, 'h1')['output'], "
                         "part(agent, 'd1')['output'], told('d1')]))")
    status, listed, history, described, told_d1 = seen  # type: ignore[misc]
    assert status == "completed"
    names = [v["name"] for v in listed["variables"]]
    assert names == ["big", "small", "small_total"]  # no np/pd/json, no In/Out/exit, no agent/script/classes
    assert listed["variables"][0]["shape"] == "1,000,000×2"
    # the cell that asked is the last one (IPython records a cell before running it), then the script cell
    assert history["cells"][-1]["source"].startswith("r = await agent.send('what is there?')")
    assert history["cells"][-3]["source"] == "small_total = int(small['y'].sum())\nsmall_total"
    assert history["cells"][-3]["result"] == "60"
    assert described["summary"] == "DataFrame, 1,000,000 rows × 2 columns" and described["tokens"] <= 1_500
    assert told_d1 == described["markdown"]

    # approved: a print, a table and a matplotlib figure come back; none of it lands in a cell
    plot = ("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot(small['x'], small['y'])\n"
            "print('plotted-marker')\nsmall")
    frontend.execute(f'script.steps[:] = [[S.tool_call("run_code", {{"code": {plot!r}}}, id="p1")], '
                     '[S.text("drawn")]]').check()
    assert out(frontend, "r = await agent.send('plot it')\n"
                         "print(json.dumps([r.status, [p['tool_call_id'] for p in agent.pending_approvals()], "
                         "'fig' in globals()]))") == ["completed", ["p1"], False]
    since = len(frontend.log)
    frontend.execute("r = await agent.approve('p1')", timeout=120).check()
    later = frontend.execute("1 + 1").check()  # the inline backend does not show the figure under the next cell
    assert not [m for m in later.displays if "image/png" in m["content"]["data"]]
    no_leak(frontend, since, "plotted-marker", "iVBORw0K")
    ran = out(frontend, "o = part(agent, 'p1')['output']\n"
                        "print(json.dumps([r.status, o['stdout'], [x['mime'] for x in o['outputs']], "
                        "[x['data'][:8] for x in o['outputs'] if x['mime'] == 'image/png'], "
                        "o['outputs'][-1]['data']['shape'], told('p1')]))")
    status, stdout, mimes, pngs, shape, told_p1 = ran  # type: ignore[misc]
    assert status == "completed" and stdout == "plotted-marker\n"
    assert mimes == ["image/png", "table"] and pngs == ["iVBORw0K"] and shape == [3, 2]
    assert "[image/png, " in told_p1 and "shown to the user]" in told_p1 and "plotted-marker" in told_p1

    # edited before approving; denied
    frontend.execute('script.steps[:] = [[S.tool_call("run_code", {"code": "edited = 1"}, id="e1"), '
                     'S.tool_call("run_code", {"code": "denied = 1"}, id="n1")], [S.text("ok")]]').check()
    frontend.execute("r = await agent.send('two more')").check()
    result = out(frontend, "agent.deny('n1', 'no')\nr = await agent.approve('e1', code='edited = 2')\n"
                           "print(json.dumps([r.status, edited, 'denied' in globals(), part(agent, 'e1')['output']"
                           "['edited'], 'The user edited your code' in told('e1'), part(agent, 'n1')['state']]))")
    assert result == ["completed", 2, False, True, True, "output-denied"]
    alive(frontend)


def test_the_panels_kernel_id_comes_from_the_connection_file(frontend: FakeFrontend) -> None:
    """The `kernel_id` trait is the id in the connection file's name (`kernel-<id>.json`, as Jupyter
    Server names it; tests/test_kernel_tools.py checks that form), so the panel's Stop can POST
    /api/kernels/<id>/interrupt. This harness names the file otherwise: no id, never a guess."""
    frontend.execute(SETUP, timeout=120).check()
    assert not Path(frontend.km.connection_file).name.startswith("kernel-")
    assert out(frontend, "from think_nb.panel.widget import ChatPanel\n"
                         "print(json.dumps(ChatPanel(agent).kernel_id))") == ""


def test_undo_restores_rebound_names_and_reports_in_place_changes(frontend: FakeFrontend) -> None:
    frontend.execute(SETUP, timeout=120).check()
    frontend.execute("keep_a = [1]\nframe = pd.DataFrame({'x': [1, 2], 'y': [3, 4]})\nruns = Runner('runner')").check()
    code = "keep_a = 'rebound'\nnew_name = 1\nframe.drop(columns=['x'], inplace=True)"
    frontend.execute(f'script.steps[:] = [[S.tool_call("run_code", {{"code": {code!r}}}, id="u1")], '
                     '[S.text("ok")]]').check()
    frontend.execute("r = await runs.send('change things')").check()
    result = out(frontend, "report = runs.undo('u1')\n"
                           "print(json.dumps([str(report), keep_a, 'new_name' in globals(), list(frame.columns), "
                           "part(runs, 'u1')['output']['undone'], bool(runs.tool_calls_df().iloc[-1]['undone'])]))")
    assert result == ["undo u1: restored: keep_a; removed: new_name; changed in place: frame — cannot be undone",
                      [1], False, ["y"], True, True]


def test_the_kernels_interrupt_stops_run_code_in_a_background_turn(frontend: FakeFrontend) -> None:
    marker = set_up_with_marker(frontend, "spinning.txt")
    code = "open('spinning.txt', 'w').write('1')\nwhile True: pass"
    frontend.execute(f'script.steps[:] = [[S.tool_call("run_code", {{"code": {code!r}}}, id="s1")], '
                     '[S.text("never")]]\nruns = Runner("spinner")').check()
    start = len(frontend.log)
    frontend.execute("task = runs.submit('spin')").check()  # returns at once: the turn runs outside any cell
    wait_until(marker.exists, "run_code started", timeout=90)  # the code is running (a condition, not a delay)
    frontend.km.interrupt_kernel()
    try:
        frontend.wait_for(lambda m: m["msg_type"] == "stream" and "turn ended: aborted" in m["content"]["text"],
                          timeout=60, since=start)
    except TimeoutError:
        raise AssertionError([m["content"] for m in frontend.log[start:] if m["msg_type"] == "stream"]) from None
    alive(frontend)
    result = out(frontend, "p = part(runs, 's1')\n"
                           "print(json.dumps([p['state'], p['errorText'].split(chr(10))[0], len(script.requests), "
                           "runs.turns()[-1]['status']]))")
    state, first_line, requests, status = result  # type: ignore[misc]
    assert state == "output-error" and first_line.startswith("Interrupted after ")
    assert status == "aborted" and requests == 1  # the model was not called after the interrupt
    frontend.execute('script.steps[:] = [[S.tool_call("run_code", {"code": "after = 42"}, id="s2")], '
                     '[S.text("ok")]]').check()
    assert out(frontend, "r = await runs.send('again')\nprint(json.dumps([r.status, after]))") == ["completed", 42]


HOLD_UNTIL_SIGINT = textwrap.dedent(
    """
    import signal, time

    def hold_until_sigint(marker):
        # blocks the loop (writing `marker` first, for the test to see it holding) until the
        # kernel's interrupt reached the SIGINT handler in place, chained so that handler runs
        # exactly as without this hold
        heard = []
        product = signal.getsignal(signal.SIGINT)
        assert callable(product), product

        def chained(signum, frame):
            heard.append(signum)
            product(signum, frame)

        signal.signal(signal.SIGINT, chained)
        open(marker, 'w').write('1')
        try:
            while not heard:
                time.sleep(0.01)
        finally:
            signal.signal(signal.SIGINT, product)
    """
)
"""Kernel-side code: `hold_until_sigint(marker)`, the hold both interrupt races below use."""

HELD = HOLD_UNTIL_SIGINT + textwrap.dedent(
    """
    class Held(Runner):
        def before_tool_call(self, ctx):
            # holds the call after the card showed it running and before its code runs
            hold_until_sigint('holding.txt')

    held = Held("held")
    """
)


def test_an_interrupt_between_the_card_showing_running_and_the_code_starting_stops_it(
        frontend: FakeFrontend) -> None:
    """The race of the panel's Stop: the interrupt lands after the call was announced (the card
    says running) and before run_code's own SIGINT handler is in place; the code must not run."""
    marker = set_up_with_marker(frontend, "holding.txt")
    code = "held_ran = True\nwhile True: pass"
    frontend.execute(f'script.steps[:] = [[S.tool_call("run_code", {{"code": {code!r}}}, id="h1")], '
                     '[S.text("never")]]\n' + HELD).check()
    start = len(frontend.log)
    frontend.execute("task = held.submit('spin')").check()  # the turn runs outside any cell
    wait_until(marker.exists, "the call reached before_tool_call", timeout=90)  # the hook holds it there
    frontend.km.interrupt_kernel()
    try:
        frontend.wait_for(lambda m: m["msg_type"] == "stream" and "turn ended: aborted" in m["content"]["text"],
                          timeout=60, since=start)
    except TimeoutError:
        raise AssertionError([m["content"] for m in frontend.log[start:] if m["msg_type"] == "stream"]) from None
    alive(frontend)
    result = out(frontend, "p = part(held, 'h1')\n"
                           "print(json.dumps([p['state'], p['errorText'], 'held_ran' in globals(), "
                           "len(script.requests), held.turns()[-1]['status']]))")
    state, error, ran, requests, status = result  # type: ignore[misc]
    assert [state, ran, requests, status] == ["output-error", False, 1, "aborted"]
    assert error.startswith("Interrupted before it ran: ")


def aborted_turn(frontend: FakeFrontend, start: int) -> None:
    """Wait for the agent's `on_chat_response` to say a turn ended `aborted`."""
    try:
        frontend.wait_for(lambda m: m["msg_type"] == "stream" and "turn ended: aborted" in m["content"]["text"],
                          timeout=60, since=start)
    except TimeoutError:
        raise AssertionError([m["content"] for m in frontend.log[start:] if m["msg_type"] == "stream"]) from None


def test_an_approved_call_stopped_while_it_runs_ends_interrupted_like_an_unapproved_one(
        frontend: FakeFrontend) -> None:
    """Approve, then the kernel's interrupt while the approved code loops (the continuation runs
    outside any cell, as the panel's Approve starts it): the part ends `output-error` with
    run_code's interrupted text (stored, as a call of the turn's own step), and the next turn does
    not call it "already started once"."""
    marker = set_up_with_marker(frontend, "approved-spinning.txt")
    code = "open('approved-spinning.txt', 'w').write('1')\nv0 = 7\nwhile True: pass"
    frontend.execute(f'script.steps[:] = [[S.tool_call("run_code", {{"code": {code!r}}}, id="a1")], '
                     '[S.text("next")]]').check()
    assert out(frontend, "r = await agent.send('spin')\n"
                         "print(json.dumps([r.status, part(agent, 'a1')['state']]))") == ["completed",
                                                                                         "approval-requested"]
    start = len(frontend.log)
    frontend.execute("task = agent.approve('a1')").check()  # the continuation runs outside any cell
    wait_until(marker.exists, "the approved code is running", timeout=90)
    frontend.km.interrupt_kernel()
    aborted_turn(frontend, start)
    alive(frontend)
    stored = ("from think_nb.binding import runtime_of\n"
              "def stored(call_id):\n"
              "    return next(p for m in runtime_of(agent).engine.store.messages.branch() for p in m['parts'] "
              "if p.get('toolCallId') == call_id)\n")
    frontend.execute(stored).check()
    result = out(frontend, "p, s = part(agent, 'a1'), stored('a1')\n"
                           "print(json.dumps([p['state'], s['state'], p.get('errorText') == s.get('errorText'), "
                           "(p.get('errorText') or '').split(chr(10))[0], v0, len(script.requests), "
                           "agent.turns()[-1]['status']]))")
    state, stored_state, same, first_line, v0, requests, status = result  # type: ignore[misc]
    assert [state, stored_state, same, v0, requests, status] == ["output-error", "output-error", True, 7, 1,
                                                                "aborted"]
    assert first_line.startswith("Interrupted after ")
    assert first_line.endswith(" s (KeyboardInterrupt): the user stopped the code; the turn was stopped.")
    after = out(frontend, "r = await agent.send('go on')\np = part(agent, 'a1')\n"
                          "print(json.dumps([r.status, p['state'], p['errorText'].split(chr(10))[0]]))")
    assert after == ["completed", "output-error", first_line]  # not "already started once"


HOLD_APPROVAL = HOLD_UNTIL_SIGINT + textwrap.dedent(
    """
    from think_nb import events
    from think_nb.panel import protocol

    def hold(event):
        # the panel's Approve frame is being handled (the kernel inside ipykernel's comm handler,
        # the continuation about to start): held there until the kernel's interrupt arrives
        if event.payload.get("tool_call_id") == "f1":
            hold_until_sigint('approving.txt')

    holding = events.subscribe(hold, names="tool:approval")
    framed = Analyst("framed")
    framed_panel = framed.panel()
    display(framed_panel)
    """
)


def test_a_stop_as_the_panels_approve_starts_the_continuation_is_not_lost(frontend: FakeFrontend) -> None:
    """The panel's Approve and Stop in the same instant: the interrupt lands while the kernel still
    handles the Approve frame (ipykernel raises `KeyboardInterrupt` there and drops it). It must stop
    the continuation: the approved code never runs and its part ends `output-error`."""
    from think_nb.panel import protocol

    marker = set_up_with_marker(frontend, "approving.txt")
    code = "framed_ran = True\nwhile True: pass"
    frontend.execute(f'script.steps[:] = [[S.tool_call("run_code", {{"code": {code!r}}}, id="f1")], '
                     '[S.text("next")]]').check()
    start = len(frontend.log)
    frontend.execute(HOLD_APPROVAL).check()
    comm = frontend.anywidget_opens(since=start)[-1]["comm_id"]
    frontend.send_custom(comm, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "test-view"})
    assert out(frontend, "r = await framed.send('spin')\n"
                         "print(json.dumps([r.status, part(framed, 'f1')['state']]))") == ["completed",
                                                                                          "approval-requested"]
    start = len(frontend.log)
    frontend.send_custom(comm, {"type": protocol.TOOL_APPROVAL, "toolCallId": "f1", "approved": True})
    wait_until(marker.exists, "the Approve frame is being handled", timeout=90)
    frontend.km.interrupt_kernel()
    aborted_turn(frontend, start)
    alive(frontend)
    result = out(frontend, "holding()\np = part(framed, 'f1')\n"
                           "print(json.dumps([p['state'], p.get('errorText'), 'framed_ran' in globals(), "
                           "len(script.requests), framed.turns()[-1]['status']]))")
    state, error, ran, requests, status = result  # type: ignore[misc]
    assert [state, ran, requests, status] == ["output-error", False, 1, "aborted"]
    assert error.startswith("Interrupted before it ran: ")


def test_hostile_code_ends_settled_and_the_kernel_goes_on(frontend: FakeFrontend) -> None:
    frontend.execute(SETUP, timeout=120).check()
    frontend.execute("hostile = Runner('hostile')").check()
    cases = [
        ("get_ipython = None\nprint('rebound')", "output-available"),
        ("del hostile", "output-available"),
        ("raise SystemExit(3)", "output-error"),
        ("print('z' * 50_000_000)", "output-available"),
        (("import threading, time\nspam_stop = threading.Event()\nspam_n = []\n"
          "def spam():\n    while not spam_stop.is_set():\n        print('spam-marker'); spam_n.append(1); "
          "time.sleep(0.005)\nthreading.Thread(target=spam, daemon=True).start()"), "output-available"),
    ]
    frontend.execute("keep = hostile").check()
    for i, (code, state) in enumerate(cases):
        since = len(frontend.log)
        frontend.execute(f'script.steps[:] = [[S.tool_call("run_code", {{"code": {code!r}}}, id="x{i}")], '
                         '[S.text("ok")]]').check()
        got = out(frontend, f"r = await keep.send('case {i}')\np = part(keep, 'x{i}')\n"
                            "print(json.dumps([r.status, p['state'], (p.get('output') or {}).get('stdout_chars')]))",
                  timeout=180)
        assert got[:2] == ["completed", state], (code, got)  # type: ignore[index]
        if "50_000_000" in code:
            assert got[2] == 50_000_001  # type: ignore[index]
        no_leak(frontend, since, "zzzzzzzzzz", "rebound\\n")
        alive(frontend)
    # the thread still prints; none of it reaches a later cell
    since = len(frontend.log)
    frontend.execute("n0 = len(spam_n)\nimport time as _t\nwhile len(spam_n) < n0 + 20: _t.sleep(0.01)\n"
                     "print('waited')").check()
    no_leak(frontend, since, "spam-marker")
    frontend.execute("spam_stop.set()").check()
    assert out(frontend, "print(json.dumps([callable(get_ipython), 'hostile' in globals()]))") == [False, False]
    frontend.execute("del get_ipython").check()
    alive(frontend)
