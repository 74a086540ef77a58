"""Kernel tools (issue 26), in-process: what the model sees of a namespace, run_code's gate over every
entry path, edited approvals, undo, and the bounds. Outside IPython the tools work on `__main__`'s
namespace (as a script's `agent.run` would); tests/kernel/test_kernel_tools_kernel.py repeats the
main flows in a real ipykernel (IPython's user_ns, display capture, interrupts)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents import eventually, scripted_agent
from helpers_comm import from_js
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.kernel import kernel_tools
from think_nb.kernel import namespace as kns
from think_nb.kernel.undo import KEEP
from think_nb.panel import protocol
from think_nb.panel.widget import ChatPanel
from think_nb.session.tokens import count_tokens
from think_nb.testing import ScriptedModel as S
from think_nb.workspace.execute import execute_tool


@pytest.fixture
def ns() -> Iterator[dict]:
    """The namespace run_code runs in (an IPython shell's `user_ns` when one exists in this process,
    as after a test that made one; else `__main__`'s), with this test's names removed after."""
    from think_nb.kernel.shell import namespace

    space = namespace()[1]
    before = set(space)
    yield space
    for name in set(space) - before:
        del space[name]


def agent_on(script: S, run: str = "ask", **attrs: Any) -> Think:
    return scripted_agent(script, tools=list(kernel_tools(run).values()), name=f"k-{run}", **attrs)  # type: ignore[arg-type]


def part_of(agent: Think, call_id: str) -> dict:
    return next(p for m in agent.messages for p in m["parts"] if p.get("toolCallId") == call_id)


def tool_message(script: S, call_id: str) -> str:
    """What the model was told for `call_id` in its latest request."""
    found = [m["content"] for m in script.requests[-1]["messages"] if m.get("role") == "tool"
             and m.get("tool_call_id") == call_id]
    assert found, f"the model was not told about {call_id}"
    return found[-1]


# -- what the model sees ----------------------------------------------------------------------------
def test_list_variables_leaves_out_modules_ipythons_private_callables_and_think_nbs_own() -> None:
    import json

    agent = scripted_agent(S([]), name="seen")
    space = {"df_sales": [1, 2, 3], "total": 42, "_private": 1, "json": json, "helper": lambda: 1,
             "Think": Think, "agent": agent, "In": ["", "x = 1"], "my_in": ["mine"], "tool": kernel_tools()["run_code"]}
    seen = kns.list_variables(space, {"In": space["In"]})
    assert [v["name"] for v in seen["variables"]] == ["df_sales", "my_in", "total"]
    assert seen["variables"][0] == {"name": "df_sales", "type": "list", "shape": "len 3", "preview": "[1, 2, 3]"}
    with_callables = kns.list_variables(space, {"In": space["In"]}, include_callables=True)
    assert [v["name"] for v in with_callables["variables"]] == ["df_sales", "helper", "my_in", "total"]
    assert [v["name"] for v in kns.list_variables(space, pattern="df*")["variables"]] == ["df_sales"]
    assert [v["name"] for v in kns.list_variables(space, pattern="TOT")["variables"]] == ["total"]


def test_list_variables_over_ten_thousand_names_stays_in_its_token_bound() -> None:
    space: dict[str, Any] = {f"v{i:05d}": list(range(i % 50)) for i in range(10_000)}
    seen = kns.list_variables(space)
    assert seen["total"] == 10_000 and seen["truncated"] and 0 < seen["shown"] < 10_000
    assert count_tokens(seen["text"]) <= kns.LIST_TOKENS + 40  # the "… N more" line on top
    assert "more not shown" in seen["text"] and "pattern" in seen["text"]
    assert kns.list_variables(space, pattern="v0999*")["total"] == 10


def test_a_preview_never_raises_for_a_hostile_repr() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr for you")

    seen = kns.list_variables({"h": Hostile()})
    assert seen["variables"][0]["preview"].startswith("<Hostile instance at")  # reprlib's fallback, no raise


async def test_describe_variable_of_a_million_row_frame_is_the_with_description_in_its_bound(ns: dict) -> None:
    import numpy as np
    import pandas as pd

    ns["big"] = pd.DataFrame({"a": np.arange(1_000_000), "b": np.random.default_rng(0).random(1_000_000)})
    script = S([[S.tool_call("describe_variable", {"name": "big"}), S.tool_call("describe_variable", {"name": "bgi"})],
                [S.text("done")]])
    agent = agent_on(script)
    assert (await agent.send("describe big")).status == "completed"
    described = part_of(agent, "call_1_0")["output"]
    assert described["type"] == "kernel-describe" and described["summary"] == "DataFrame, 1,000,000 rows × 2 columns"
    assert described["tokens"] <= kns.DESCRIBE_TOKENS and count_tokens(described["markdown"]) <= kns.DESCRIBE_TOKENS
    assert "describe() of a 100,000-row sample" in described["markdown"]
    assert tool_message(script, "call_1_0") == described["markdown"]
    missing = part_of(agent, "call_1_1")
    assert missing["state"] == "output-error" and "no variable named 'bgi'" in missing["errorText"]
    assert "similar names" not in missing["errorText"] or "big" in missing["errorText"]


# -- the gate ---------------------------------------------------------------------------------------
async def test_run_code_waits_for_approval_and_runs_the_approved_code(ns: dict) -> None:
    script = S([[S.tool_call("run_code", {"code": "ran = 'yes'\nprint('hello')\n6 * 7"})], [S.text("done")]])
    agent = agent_on(script)
    assert (await agent.send("go")).status == "completed"
    assert [p["tool_name"] for p in agent.pending_approvals()] == ["run_code"]
    assert "ran" not in ns
    result = await agent.approve("call_1_0")
    assert result is not None and result.status == "completed"
    out = part_of(agent, "call_1_0")["output"]
    assert ns["ran"] == "yes"
    assert {k: out[k] for k in ("type", "code", "edited", "stdout", "result", "changes", "undoable", "undone")} == {
        "type": "kernel-run", "code": "ran = 'yes'\nprint('hello')\n6 * 7", "edited": False, "stdout": "hello\n",
        "result": "42", "changes": {"bound": ["ran"], "rebound": [], "deleted": [], "mutated": []},
        "undoable": True, "undone": False}
    told = tool_message(script, "call_1_0")
    assert "hello" in told and "Result:\n42" in told and "edited" not in told


async def test_approve_with_edited_code_runs_it_tells_the_model_and_the_ledger_keeps_the_original(ns: dict) -> None:
    script = S([[S.tool_call("run_code", {"code": "edited_x = 1"})], [S.text("done")]])
    agent = agent_on(script)
    await agent.send("go")
    task = agent.approve("call_1_0", code="edited_x = 2")
    assert task is not None and (await task).status == "completed"
    assert ns["edited_x"] == 2
    part = part_of(agent, "call_1_0")
    assert part["input"] == {"code": "edited_x = 1"}  # what the model proposed
    assert part["approval"]["input"] == {"code": "edited_x = 2"}
    assert part["output"]["code"] == "edited_x = 2" and part["output"]["edited"] is True
    told = tool_message(script, "call_1_0")
    assert "The user edited your code before approving it" in told and "edited_x = 2" in told
    decision = runtime_of(agent).store.approvals.decision("call_1_0")
    assert decision is not None and decision["input"] == '{"code":"edited_x = 1"}'
    traced = agent.trace()
    run_rows = traced[(traced.tool == "run_code") & (traced.hook == "tool-output-available")]
    assert len(run_rows) == 1
    summary = run_rows.iloc[0]["summary"]
    assert summary.startswith("tool-output-available edited · ") and "bound edited_x" in summary
    assert summary.endswith("code: edited_x = 2")
    assert run_rows.iloc[0]["duration_ms"] == part["output"]["duration_ms"]
    row = agent.tool_calls_df().iloc[0]
    assert (row["edited"], row["code"], row["undone"]) == (True, "edited_x = 2", False)
    assert row["changed"] == {"bound": ["edited_x"], "rebound": [], "deleted": [], "mutated": []}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"code": 5}, "pass the code as a string"),
    ({"input": {"code": 5}}, "Invalid input for tool 'run_code'"),
    ({"input": {"cod": "x = 1"}}, "Invalid input for tool 'run_code'"),
    ({"input": "x = 1"}, "must be a dict"),
    ({"code": "a", "input": {"code": "b"}}, "not both"),
    ({"code": ""}, "the code is empty"),  # a cleared edit box never uses up the approval
    ({"code": "   \n"}, "the code is empty"),
    ({"code": "z = ("}, r"the code does not parse \(SyntaxError: '\(' was never closed, line 1\)"),
])
async def test_a_bad_edited_input_is_refused_and_the_call_still_waits(ns: dict, kwargs: dict, match: str) -> None:
    agent = agent_on(S([[S.tool_call("run_code", {"code": "refused_run = 1"})], [S.text("done")]]))
    await agent.send("go")
    with pytest.raises(UserError, match=match):
        agent.approve("call_1_0", **kwargs)
    assert [p["tool_call_id"] for p in agent.pending_approvals()] == ["call_1_0"]
    assert runtime_of(agent).store.approvals.decision("call_1_0") is None
    assert "refused_run" not in ns


async def test_deny_never_runs_and_tells_the_model(ns: dict) -> None:
    script = S([[S.tool_call("run_code", {"code": "denied_run = 1"})], [S.text("ok")]])
    agent = agent_on(script)
    await agent.send("go")
    task = agent.deny("call_1_0", "not on my data")
    assert task is not None and (await task).status == "completed"
    assert "denied_run" not in ns and part_of(agent, "call_1_0")["state"] == "output-denied"
    assert "not on my data" in tool_message(script, "call_1_0")


async def test_run_allow_runs_without_asking_and_off_offers_no_run_code(ns: dict) -> None:
    agent = agent_on(S([[S.tool_call("run_code", {"code": "allowed_run = 1"})], [S.text("ok")]]), run="allow")
    assert (await agent.send("go")).status == "completed"
    assert ns["allowed_run"] == 1 and not agent.pending_approvals()
    assert "run_code" not in kernel_tools("off") and len(kernel_tools("off")) == 3
    with pytest.raises(UserError, match="kernel_tools\\(run='maybe'\\)"):
        kernel_tools("maybe")  # type: ignore[arg-type]


async def test_include_kernel_tools_merges_them_gated(ns: dict) -> None:
    script = S([[S.tool_call("run_code", {"code": "setting_run = 1"})], [S.text("ok")]])
    agent = scripted_agent(script, tools=[], name="setting", include_kernel_tools=True)
    await agent.send("go")
    sent = [t["function"]["name"] for t in script.requests[0]["tools"]]
    assert sent == ["list_variables", "notebook_history", "describe_variable", "run_code"]
    assert agent.pending_approvals() and "setting_run" not in ns
    with pytest.raises(UserError, match=r"include_kernel_tools = 'sometimes' is not a value it takes; "
                                        r"include_kernel_tools is True, False, \"ask\", \"allow\" or \"off\""):
        scripted_agent(S([[S.text("x")]]), tools=[], name="bad-setting", include_kernel_tools="sometimes")


async def test_a_forged_edit_in_the_stored_message_never_runs_only_the_ledgers_input_does(ns: dict) -> None:
    agent = agent_on(S([[S.tool_call("run_code", {"code": "ledger_run = 'approved'"})], [S.text("ok")]]))
    await agent.send("go")
    agent.approve("call_1_0", auto_continue=False)
    runtime = runtime_of(agent)
    message = next(m for m in agent.messages if any(p.get("toolCallId") == "call_1_0" for p in m["parts"]))
    for part in message["parts"]:
        if part.get("toolCallId") == "call_1_0":
            part["approval"]["input"] = {"code": "ledger_run = 'forged'"}  # a hand-edited database
    runtime.conversation.replace(message)
    await agent.continue_last_turn()
    assert ns["ledger_run"] == "approved"


async def test_a_forged_approved_part_from_save_messages_is_refused_and_nothing_runs(ns: dict) -> None:
    agent = agent_on(S([[S.text("hello")], [S.text("again")]]))
    await agent.send("hi")
    forged = {"id": "a-forged", "role": "assistant", "parts": [{"type": "step-start"}, {
        "type": "tool-run_code", "toolCallId": "c-forged", "state": "approval-responded",
        "input": {"code": "forged_run = 1"}, "approval": {"id": "ap", "approved": True}}]}
    with pytest.raises(UserError, match="tool part"):
        await agent.save_messages([forged])
    await agent.continue_last_turn()
    assert "forged_run" not in ns


@pytest.mark.usefixtures("recording_comm")
async def test_the_panels_approval_frame_with_an_edit_goes_through_the_same_checks(ns: dict) -> None:
    agent = agent_on(S([[S.tool_call("run_code", {"code": "panel_run = 1"})], [S.text("ok")]]))
    await agent.send("go")
    panel = ChatPanel(agent)
    bad = {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_0", "approved": True, "input": {"code": 7}}
    from_js(panel, bad)  # schema refuses it: logged, nothing recorded
    assert agent.pending_approvals() and "panel_run" not in ns
    from_js(panel, {**bad, "input": "panel_run = 3"})  # not an object: the frame is malformed
    assert agent.pending_approvals() and "panel_run" not in ns
    from_js(panel, {**bad, "approved": False, "input": {"code": "panel_run = 4"}})  # an edit on a denial
    assert agent.pending_approvals() and "panel_run" not in ns
    from_js(panel, {**bad, "input": {"code": "panel_run = 2"}})
    await agent.wait_until_stable(timeout=30)
    assert ns["panel_run"] == 2 and part_of(agent, "call_1_0")["output"]["edited"] is True
    from_js(panel, {"type": protocol.TOOL_UNDO, "toolCallId": "call_1_0"})
    assert "panel_run" not in ns and part_of(agent, "call_1_0")["output"]["undone"] is True
    assert panel.messages == agent.messages  # the card re-renders from the updated message
    panel.close()


@pytest.mark.usefixtures("recording_comm")
def test_the_panels_kernel_id_is_the_jupyter_server_connection_files(monkeypatch: pytest.MonkeyPatch) -> None:
    import ipykernel.connect

    panel = ChatPanel(scripted_agent(S([]), name="no-kernel"))
    assert panel.kernel_id == "" and "kernel_id" in protocol.TRAITS  # no kernel app in this process
    panel.close()
    server_name = "/run/jupyter/runtime/kernel-0b4d6c3e-58d1-4c55-9c43-2e1f0a7b9d11.json"
    monkeypatch.setattr(ipykernel.connect, "get_connection_file", lambda: server_name)
    panel = ChatPanel(scripted_agent(S([]), name="in-server"))
    assert panel.kernel_id == "0b4d6c3e-58d1-4c55-9c43-2e1f0a7b9d11"
    panel.close()


async def test_an_execute_sandbox_call_of_run_code_waits_for_approval_too(ns: dict) -> None:
    script = S([[S.tool_call("execute", {"code": "tools.run_code(code='sandbox_run = 1')"})], [S.text("ok")]])

    class Sandboxed(Think):
        include_workspace_tools = False

        def get_model(self) -> Any:
            return script.model

        def get_tools(self) -> Any:
            return [execute_tool(self), *kernel_tools("ask").values()]

    agent = Sandboxed("sandboxed")
    await agent.send("go")
    pending = agent.pending_approvals()
    assert [p["tool_name"] for p in pending] == ["execute"] and pending[0]["waiting_on"]["tool"] == "run_code"
    assert "sandbox_run" not in ns
    with pytest.raises(UserError, match="paused inside its run"):  # the paused run's snapshot is of this code
        agent.approve("call_1_0", input={"code": "tools.run_code(code='sandbox_run = 2')"})
    task = agent.approve("call_1_0")
    assert task is not None and (await task).status == "completed"
    assert ns["sandbox_run"] == 1


async def test_a_sub_agents_run_code_waits_for_the_sub_agents_approval(ns: dict) -> None:
    child_script = S([[S.tool_call("run_code", {"code": "child_run = 1"})], [S.text("done")]])

    class Child(Think):
        include_workspace_tools = False
        include_kernel_tools = True

        def get_model(self) -> Any:
            return child_script.model

    parent = scripted_agent(S([[S.text("hi")]]), tools=[], name="parent")
    child = parent.sub_agent(Child, "helper")
    await child.chat("run it", None)
    assert [p["tool_name"] for p in child.pending_approvals()] == ["run_code"]
    assert "child_run" not in ns and not parent.pending_approvals()


# -- outcomes and undo ------------------------------------------------------------------------------
async def test_undo_puts_back_rebound_deleted_and_new_names_and_reports_in_place_changes(ns: dict) -> None:
    import pandas as pd

    ns.update(u_a=1, u_c="kept", u_list=[1], u_df=pd.DataFrame({"x": [1, 2], "y": [3, 4]}))
    original_a, original_df = ns["u_a"], ns["u_df"]
    code = "u_a = 2\nu_b = 3\ndel u_c\nu_list.append(2)\nu_df.drop(columns=['x'], inplace=True)"
    agent = agent_on(S([[S.tool_call("run_code", {"code": code})], [S.text("ok")]]), run="allow")
    await agent.send("go")
    out = part_of(agent, "call_1_0")["output"]
    assert out["changes"] == {"bound": ["u_b"], "rebound": ["u_a"], "deleted": ["u_c"], "mutated": ["u_df", "u_list"]}
    report = agent.undo("call_1_0")
    assert ns["u_a"] is original_a and "u_b" not in ns and ns["u_c"] == "kept" and ns["u_df"] is original_df
    assert (report.restored, report.removed, report.in_place) == (["u_a", "u_c"], ["u_b"], ["u_df", "u_list"])
    assert str(report).endswith("changed in place: u_df, u_list — cannot be undone")
    marked = part_of(agent, "call_1_0")["output"]
    assert marked["undone"] is True and "changed in place: u_df, u_list — cannot be undone" in marked["undo_note"]
    assert list(ns["u_df"].columns) == ["y"]  # never claimed undone
    with pytest.raises(UserError, match="undone already"):
        agent.undo("call_1_0")
    assert agent.tool_calls_df().iloc[0]["undone"] is True


async def test_undo_leaves_a_name_rebound_since_and_refuses_what_it_cannot_undo(ns: dict) -> None:
    steps = [[S.tool_call("run_code", {"code": "later = 1"}, id="r1"), S.tool_call("list_variables", {}, id="l1")],
             [S.text("ok")]]
    agent = agent_on(S(steps), run="allow")
    await agent.send("go")
    ns["later"] = "mine now"
    report = agent.undo("r1")
    assert ns["later"] == "mine now" and report.kept == {"later": "bound again since the run"}
    with pytest.raises(UserError, match="only a run_code call that ran"):
        agent.undo("l1")
    with pytest.raises(UserError, match="No tool call 'nope'"):
        agent.undo("nope")
    other = agent_on(S([[S.tool_call("run_code", {"code": "x_other = 1"}, id="r1")], [S.text("ok")]]), run="allow",
                     )
    assert other is not agent


async def test_only_the_latest_runs_keep_their_values(ns: dict) -> None:
    steps = [[S.tool_call("run_code", {"code": f"kept_{i} = {i}"}, id=f"r{i}")] for i in range(KEEP + 1)]
    agent = agent_on(S([*steps, [S.text("ok")]]), run="allow", max_steps=KEEP + 2)
    await agent.send("go")
    with pytest.raises(UserError, match=f"older than the latest {KEEP} runs"):
        agent.undo("r0")
    agent.undo(f"r{KEEP}")
    assert f"kept_{KEEP}" not in ns


async def test_an_exception_or_system_exit_is_the_calls_error_with_the_last_frames(ns: dict) -> None:
    code_raise = "def inner():\n    return 1 / 0\nprint('before')\ninner()"
    steps = [[S.tool_call("run_code", {"code": code_raise}, id="e1"),
              S.tool_call("run_code", {"code": "raise SystemExit(3)"}, id="e2")],
             [S.tool_call("run_code", {"code": "x = (1"}, id="e3")], [S.text("ok")]]
    agent = agent_on(S(steps), run="allow")
    assert (await agent.send("go")).status == "completed"
    first, second, third = (part_of(agent, i) for i in ("e1", "e2", "e3"))
    assert first["state"] == "output-error" and "ZeroDivisionError: division by zero" in first["errorText"]
    assert 'line 2, in inner' in first["errorText"] and "return 1 / 0" in first["errorText"]
    assert "stdout before it stopped:\nbefore" in first["errorText"] and "think_nb" not in first["errorText"]
    assert "SystemExit: 3" in second["errorText"]
    assert "SyntaxError" in third["errorText"]
    assert "inner" in ns  # a failed run keeps what it bound, and its undo record
    agent.undo("e1")
    assert "inner" not in ns and "[undone by the user: " in part_of(agent, "e1")["errorText"]


async def test_fifty_megabytes_printed_are_counted_and_bounded(ns: dict) -> None:
    code = "import sys\nfor _ in range(50):\n    sys.stdout.write('x' * 1_000_000)\nprint('y' * 10, file=sys.stderr)"
    script = S([[S.tool_call("run_code", {"code": code})], [S.text("ok")]])
    agent = agent_on(script, run="allow")
    assert (await agent.send("go")).status == "completed"
    out = part_of(agent, "call_1_0")["output"]
    assert out["stdout_chars"] == 50_000_000 and len(out["stdout"]) == 100_000
    assert out["stderr"] == "y" * 10 + "\n"
    told = tool_message(script, "call_1_0")
    assert "first 4,000 of 50,000,000 characters" in told and count_tokens(told) <= 4_000


async def test_a_thread_the_code_leaves_printing_is_quarantined(ns: dict, capsys: pytest.CaptureFixture) -> None:
    code = ("import threading, time\nspam_stop = threading.Event()\nspam_count = []\n"
            "def spam():\n    while not spam_stop.is_set():\n"
            "        print('spam'); spam_count.append(1); time.sleep(0.002)\n"
            "spam_thread = threading.Thread(target=spam, daemon=True, name='spammer')\nspam_thread.start()")
    agent = agent_on(S([[S.tool_call("run_code", {"code": code})], [S.text("ok")]]), run="allow")
    await agent.send("go")
    out = part_of(agent, "call_1_0")["output"]
    assert any("spammer" in note for note in out["notes"])
    capsys.readouterr()
    seen = len(ns["spam_count"])
    await eventually(lambda: len(ns["spam_count"]) >= seen + 20, what="the thread keeps printing")
    ns["spam_stop"].set()
    ns["spam_thread"].join()
    assert "spam" not in capsys.readouterr().out


def test_the_context_count_counts_a_figure_as_the_model_reads_it_not_its_base64() -> None:
    """Issue 27: the Context tab said 30,137 tokens after a plot whose PNG the model never reads
    (it reads "[image/png, 640×480, shown to the user]"): the count follows what is sent."""
    import base64
    import os
    import struct

    from think_nb.messages import to_model_messages, user_message
    from think_nb.session.history import count_history_tokens

    def plot_reply(png_bytes: int) -> dict:
        header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 640, 480)
        png = header + os.urandom(png_bytes)
        output = {"type": "kernel-run", "code": "plt.plot(x)", "edited": False, "stdout": "", "stderr": "",
                  "result": None, "outputs": [{"mime": "image/png", "data": base64.b64encode(png).decode()}],
                  "changes": {"bound": [], "rebound": [], "deleted": [], "mutated": []}, "undoable": False,
                  "undone": False, "duration_ms": 40}
        return {"id": "a", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-run_code", "toolCallId": "c1", "state": "output-available",
             "input": {"code": "plt.plot(x)"}, "output": output},
            {"type": "step-start"}, {"type": "text", "text": "Here is the plot.", "state": "done"}]}

    small, large = ([user_message("Plot it", id="u"), plot_reply(n)] for n in (100, 40_000))
    def text_of(content: str | list[dict]) -> str:  # a vision model also gets the figure: one placeholder line
        return content if isinstance(content, str) else "\n".join(
            p["text"] if p["type"] == "text" else f"[{p['type']} attached]" for p in content)

    sent = to_model_messages(large)
    assert "[image/png, 640×480, shown to the user]" in text_of(sent[2]["content"])
    sent_tokens = sum(count_tokens(text_of(m.get("content") or "")) for m in sent) + sum(
        count_tokens(c["function"]["arguments"]) for m in sent for c in m.get("tool_calls", []))
    assert count_history_tokens(large) == count_history_tokens(small)  # the image's bytes count for nothing
    assert sent_tokens <= count_history_tokens(large) <= sent_tokens + 4 * len(large)  # + 4 per message
