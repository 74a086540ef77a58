"""The `execute` tool: model-written Python in a pydantic-monty sandbox calling the agent's tools
and workspace; its limits end as tool errors while the event loop keeps running; a gated tool
called from the code pauses the turn for approval and the approved code resumes where it stopped."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from dirty_equals import IsPartialDict, IsStr

from agents import add, mul, user
from think_nb import Think, tool
from think_nb.binding import runtime_of
from think_nb.testing import ScriptedModel as S
from think_nb.tools.tool import Tool
from think_nb.turns.hooks import ToolCallContext, ToolCallDecision, ToolCallResultContext
from think_nb.turns.runner import STOPPED_RUNNING_TEXT
from think_nb.workspace.execute import PAUSE_KEY, ExecuteError, execute_tool

ran: list[str] = []


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def coder(script: S, name: str = "c", db: Path | None = None, hooks: dict | None = None, **limits: object) -> Think:
    cls = type("Coder", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": True,
                                   "get_tools": lambda self: [add, mul, delete_file, execute_tool(self, **limits)],
                                   **(hooks or {})})
    return cls(name, db=db)


def standalone(**limits: object) -> Tool:
    return execute_tool(tools=[add, mul], **limits)


async def test_code_calls_tools_both_ways_and_returns_its_value_with_stdout() -> None:
    code = "print('adding')\nx = tools.add(a=2, b=40)\ny = mul(x, 2)\n{'x': x, 'y': y}"
    assert await standalone().invoke({"code": code}) == {"result": {"x": 42.0, "y": 84.0}, "stdout": "adding\n",
                                                         "calls": 2}


async def test_tool_errors_are_exceptions_the_code_can_catch() -> None:
    code = ("try:\n    add(a='not a number', b=1)\nexcept ValueError as e:\n    print('bad input')\n"
            "try:\n    tools.nope()\nexcept AttributeError:\n    print('no such tool')\n'ok'")
    assert await standalone().invoke({"code": code}) == {"result": "ok", "stdout": "bad input\nno such tool\n",
                                                         "calls": 1}


async def test_the_sandbox_has_no_host_files_network_environment_or_imports() -> None:
    for code, expected in [("open('/etc/passwd').read()", "PermissionError"),
                           ("import os\nos.listdir('/')", "PermissionError"),
                           ("import os\nos.environ.get('HOME')", "not supported"),
                           ("import socket", "ModuleNotFoundError"),
                           ("import subprocess", "ModuleNotFoundError")]:
        with pytest.raises(ExecuteError, match=expected):
            await standalone().invoke({"code": code})


@pytest.mark.parametrize(("code", "message"), [
    ("while True:\n    pass", "time limit exceeded: the code ran longer than 1 s"),
    ("x = 'a' * (10**9)\nlen(x)", "memory limit exceeded"),
    ("def f(n):\n    return f(n + 1)\nf(0)", "recursion limit exceeded"),
    ("while True:\n    print('x' * 1000)", "output limit exceeded: the code printed more than 20000 bytes"),
    ("def (", "SyntaxError"),
])
async def test_each_limit_ends_as_a_tool_error_while_the_event_loop_keeps_running(code: str, message: str) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    try:
        with pytest.raises(ExecuteError, match=message):
            await standalone(timeout=1, max_memory=32 * 1024 * 1024, max_output=20_000).invoke({"code": code})
    finally:
        task.cancel()
    elapsed = time.perf_counter() - started
    if elapsed > 0.5:  # the sandbox ran a while: the loop kept serving other tasks all along
        assert ticks >= elapsed / 0.01 / 4


async def test_limits_in_a_turn_are_output_errors_the_model_reads() -> None:
    script = S([[S.tool_call("execute", {"code": "while True:\n    pass"})], [S.text("It looped.")]])
    agent = coder(script, timeout=0.5)
    result = await agent.send("loop")
    assert result.status == "completed"
    part = next(p for p in agent.messages[-1]["parts"] if p["type"] == "tool-execute")
    assert part["state"] == "output-error"
    assert part["errorText"].startswith("ExecuteError: time limit exceeded")


async def test_state_reads_and_writes_the_agents_workspace() -> None:
    script = S([[S.tool_call("execute", {"code": (
        "state.write('/notes/a.md', 'alpha')\nstate.write('/notes/b.md', 'beta')\n"
        "[state.read('/notes/a.md'), state.glob('**/*.md'), state.list('/notes'), state.exists('/x')]")})],
        [S.text("ok")]])
    agent = coder(script)
    await agent.send("files")
    part = next(p for p in agent.messages[-1]["parts"] if p["type"] == "tool-execute")
    assert part["output"] == {"result": ["alpha", ["/notes/a.md", "/notes/b.md"], ["/notes/a.md", "/notes/b.md"],
                                         False], "stdout": "", "calls": 6}
    assert agent.workspace.cat("/notes/b.md") == b"beta"
    with pytest.raises(ExecuteError, match=re.escape("contains '..'")):
        await execute_tool(agent).invoke({"code": "state.read('/../etc/passwd')"})


CODE = ("print('start')\nx = tools.add(a=2, b=40)\nprint('before the gate')\nz = delete_file('/tmp/x')\n"
        "print('after', z)\n[x, z, mul(x, 2)]")


async def test_a_gated_tool_inside_code_pauses_the_turn_and_the_code_resumes_after_approve() -> None:
    script = S([[S.tool_call("execute", {"code": CODE})], [S.text("Deleted, and 84.")]])
    agent = coder(script)
    first = await agent.send("go")
    assert first.status == "completed" and ran == [] and len(script.requests) == 1
    approval = {"id": IsStr(regex="approval_.*"), "descriptor": {
        "kind": "execute", "code": CODE, "call": {"tool": "delete_file", "input": {"path": "/tmp/x"}},
        "stdout": "start\nbefore the gate\n"}}
    assert agent.messages[-1]["parts"][-1] == {"type": "tool-execute", "toolCallId": "call_1_0",
                                               "state": "approval-requested", "input": {"code": CODE},
                                               "approval": approval}
    assert agent.pending_approvals() == [{"tool_call_id": "call_1_0", "tool_name": "execute", "input": {"code": CODE},
                                          "message_id": agent.messages[-1]["id"], "approval_id": IsStr(),
                                          "waiting_on": {"tool": "delete_file", "input": {"path": "/tmp/x"}}}]
    result = await agent.approve("call_1_0")
    assert result.status == "completed" and ran == ["/tmp/x"]
    assert agent.messages == [user("go"), {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(), "parts": [
            {"type": "step-start"},
            {"type": "tool-execute", "toolCallId": "call_1_0", "state": "output-available", "input": {"code": CODE},
             "approval": {**approval, "approved": True},
             "output": {"result": [42.0, "deleted /tmp/x", 84.0],
                        "stdout": "start\nbefore the gate\nafter deleted /tmp/x\n", "calls": 3}}]}, {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(continuation=True), "parts": [
            {"type": "step-start"}, {"type": "text", "text": "Deleted, and 84.", "state": "done"}]}]
    assert runtime_of(agent).store.state.get(PAUSE_KEY + "call_1_0") is None  # claimed: it can never resume twice


async def test_deny_never_runs_the_gated_tool_and_the_code_never_continues() -> None:
    script = S([[S.tool_call("execute", {"code": CODE})], [S.text("Understood.")]])
    agent = coder(script)
    await agent.send("go")
    result = await agent.deny("call_1_0", "no deleting")
    assert result.status == "completed" and ran == []
    part = agent.messages[1]["parts"][-1]
    assert part["state"] == "output-denied" and "output" not in part
    assert part["approval"] == IsPartialDict(approved=False, reason="no deleting")
    with pytest.raises(Exception, match="call_1_0"):
        agent.approve("call_1_0")  # a decided call is never decided again
    assert ran == []


async def test_a_paused_run_survives_a_kernel_restart(tmp_path: Path) -> None:
    db = tmp_path / "restart.sqlite"
    await coder(S([[S.tool_call("execute", {"code": CODE})]]), name="r", db=db).send("go")
    again = coder(S([[S.text("Resumed after the restart.")]]), name="r", db=db)
    assert [p["tool_name"] for p in again.pending_approvals()] == ["execute"]
    result = await again.approve("call_1_0")
    assert result.status == "completed" and ran == ["/tmp/x"]
    assert again.messages[1]["parts"][-1]["output"]["stdout"] == "start\nbefore the gate\nafter deleted /tmp/x\n"


THREE = ("a = delete_file('/one')\nprint('one done')\nb = delete_file('/two')\nprint('two done')\n"
         "c = delete_file('/three')\n[a, b, c]")


def pauses(agent: Think) -> list[str]:
    """The paused-run records left in the agent's store."""
    return runtime_of(agent).store.state.keys(PAUSE_KEY)


def waiting_call(agent: Think) -> dict:
    part = agent.messages[1]["parts"][-1]
    assert part["state"] == "approval-requested"
    return {"call": part["approval"]["descriptor"]["call"], "stdout": part["approval"]["descriptor"]["stdout"]}


async def test_every_gated_call_in_code_pauses_the_turn_and_resumes_the_same_run() -> None:
    script = S([[S.tool_call("execute", {"code": THREE})], [S.text("All three deleted.")]])
    agent = coder(script)
    await agent.send("go")
    first_id = agent.messages[1]["parts"][-1]["approval"]["id"]
    assert waiting_call(agent) == {"call": {"tool": "delete_file", "input": {"path": "/one"}}, "stdout": ""}
    assert (await agent.approve("call_1_0")).status == "completed"
    assert ran == ["/one"] and len(script.requests) == 1  # paused again: the model was not called
    assert waiting_call(agent) == {"call": {"tool": "delete_file", "input": {"path": "/two"}}, "stdout": "one done\n"}
    assert agent.messages[1]["parts"][-1]["approval"]["id"] != first_id  # a new approval round
    assert [p["tool_name"] for p in agent.pending_approvals()] == ["execute"]
    assert pauses(agent) == [PAUSE_KEY + "call_1_0"]
    await agent.approve("call_1_0")
    assert ran == ["/one", "/two"] and len(script.requests) == 1
    assert waiting_call(agent) == {"call": {"tool": "delete_file", "input": {"path": "/three"}},
                                   "stdout": "one done\ntwo done\n"}
    await agent.approve("call_1_0")
    assert ran == ["/one", "/two", "/three"] and len(script.requests) == 2
    assert agent.messages == [user("go"), {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(), "parts": [
            {"type": "step-start"},
            {"type": "tool-execute", "toolCallId": "call_1_0", "state": "output-available", "input": {"code": THREE},
             "approval": {"id": IsStr(regex="approval_.*"), "approved": True, "descriptor": {
                 "kind": "execute", "code": THREE, "call": {"tool": "delete_file", "input": {"path": "/three"}},
                 "stdout": "one done\ntwo done\n"}},
             "output": {"result": ["deleted /one", "deleted /two", "deleted /three"],
                        "stdout": "one done\ntwo done\n", "calls": 3}}]}, {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(continuation=True), "parts": [
            {"type": "step-start"}, {"type": "text", "text": "All three deleted.", "state": "done"}]}]
    assert pauses(agent) == []


async def test_denying_a_later_pause_denies_the_execute_call_as_a_direct_denial_and_leaves_nothing() -> None:
    script = S([[S.tool_call("execute", {"code": THREE})], [S.text("Stopped at two.")]])
    agent = coder(script)
    await agent.send("go")
    await agent.approve("call_1_0")
    assert pauses(agent) == [PAUSE_KEY + "call_1_0"]
    result = await agent.deny("call_1_0", "not that one")
    assert result.status == "completed" and ran == ["/one"]  # the first ran; the denied one never did
    part = agent.messages[1]["parts"][-1]
    assert part["state"] == "output-denied" and "output" not in part
    assert part["approval"] == IsPartialDict(approved=False, reason="not that one",
                                             descriptor=IsPartialDict(call={"tool": "delete_file",
                                                                            "input": {"path": "/two"}}))
    assert agent.messages[-1]["parts"][-1] == {"type": "text", "text": "Stopped at two.", "state": "done"}
    assert pauses(agent) == []  # the snapshot went with the denial


async def test_a_pause_superseded_by_a_new_message_or_cleared_leaves_no_snapshot() -> None:
    script = S([[S.tool_call("execute", {"code": CODE})], [S.text("Something else, then.")],
                [S.tool_call("execute", {"code": CODE})]])
    agent = coder(script)
    await agent.send("go")
    assert pauses(agent) == [PAUSE_KEY + "call_1_0"]
    await agent.send("never mind")  # the waiting call is repaired (superseded): it can never resume
    assert agent.messages[1]["parts"][-1]["state"] == "output-error" and pauses(agent) == []
    await agent.send("again")
    assert len(pauses(agent)) == 1
    agent.clear_messages()
    assert pauses(agent) == [] and ran == []


async def test_a_resumed_call_whose_snapshot_is_gone_runs_nothing_again() -> None:
    script = S([[S.tool_call("execute", {"code": CODE})], [S.text("It said so.")]])
    agent = coder(script)
    await agent.send("go")
    runtime_of(agent).store.state.delete(PAUSE_KEY + "call_1_0")  # as if an earlier resume had claimed it
    await agent.approve("call_1_0")
    part = agent.messages[1]["parts"][-1]
    assert part["state"] == "output-error" and "its paused state is gone" in part["errorText"] and ran == []


async def test_several_pauses_survive_kernel_restarts(tmp_path: Path) -> None:
    db = tmp_path / "restarts.sqlite"
    await coder(S([[S.tool_call("execute", {"code": THREE})]]), name="r", db=db).send("go")
    for done in (["/one"], ["/one", "/two"]):
        again = coder(S([]), name="r", db=db)
        await again.approve("call_1_0")
        assert ran == done and waiting_call(again)["stdout"].count("done") == len(done)
    last = coder(S([[S.text("Three, across restarts.")]]), name="r", db=db)
    assert (await last.approve("call_1_0")).status == "completed"
    assert ran == ["/one", "/two", "/three"] and pauses(last) == []
    assert last.messages[1]["parts"][-1]["output"]["result"] == ["deleted /one", "deleted /two", "deleted /three"]


async def test_without_an_agent_a_gated_call_fails_in_the_code_and_never_runs() -> None:
    gated = execute_tool(tools=[delete_file])
    with pytest.raises(ExecuteError, match="needs approval, and this execute tool has no agent"):
        await gated.invoke({"code": "delete_file('/x')"})
    assert ran == []


def test_bad_settings_are_refused_in_one_line() -> None:
    with pytest.raises(Exception, match=r"execute_tool\(\) needs the agent"):
        execute_tool()
    with pytest.raises(Exception, match=r"execute_tool\(timeout=0\): pass a positive number"):
        execute_tool(tools=[add], timeout=0)


async def test_inner_calls_go_through_before_and_after_tool_call_like_direct_calls() -> None:
    seen: list[tuple] = []

    def before_tool_call(self: Think, ctx: ToolCallContext) -> ToolCallDecision | None:
        seen.append(("before", ctx.tool_name, ctx.tool_call_id, ctx.parent_tool_call_id, ctx.input))
        if ctx.tool_name == "add" and ctx.input.get("a") == 2:
            return ToolCallDecision.allow(input={**ctx.input, "a": 100})  # a new input, as for a direct call
        if ctx.tool_name == "mul":
            return ToolCallDecision.block("no multiplying")
        if ctx.tool_name == "write":
            return ToolCallDecision.substitute("not written")
        return None

    def after_tool_call(self: Think, ctx: ToolCallResultContext) -> None:
        seen.append(("after", ctx.tool_name, ctx.tool_call_id, ctx.parent_tool_call_id, ctx.success, ctx.output,
                     ctx.error))

    code = ("x = add(2, 40)\ny = mul(x, 2)\nw = state.write('/f.txt', 'hi')\n"
            "try:\n    add(a='nan?', b=1)\nexcept ValueError:\n    pass\nz = delete_file('/gated')\n[x, y, w, z]")
    script = S([[S.tool_call("execute", {"code": code})], [S.text("Done.")]])
    agent = coder(script, hooks={"before_tool_call": before_tool_call, "after_tool_call": after_tool_call})
    await agent.send("go")
    assert ran == [] and not agent.workspace.exists("/f.txt")
    paused_at = list(seen)
    await agent.approve("call_1_0")
    assert ran == ["/gated"]
    assert paused_at == [
        ("before", "execute", "call_1_0", None, {"code": code}),
        ("before", "add", "call_1_0.1", "call_1_0", {"a": 2, "b": 40}),
        ("after", "add", "call_1_0.1", "call_1_0", True, 140.0, None),
        ("before", "mul", "call_1_0.2", "call_1_0", {"a": 140.0, "b": 2}),
        ("after", "mul", "call_1_0.2", "call_1_0", True, "no multiplying", None),
        ("before", "write", "call_1_0.3", "call_1_0", {"path": "/f.txt", "content": "hi"}),
        ("after", "write", "call_1_0.3", "call_1_0", True, "not written", None),
        ("before", "add", "call_1_0.4", "call_1_0", {"a": "nan?", "b": 1}),
        ("after", "add", "call_1_0.4", "call_1_0", False, None, IsStr(regex="ToolInputError: .*")),
    ]  # the gated call's hooks wait for its approval, as a direct call's do
    assert seen[len(paused_at):] == [
        ("before", "execute", "call_1_0", None, {"code": code}),
        ("before", "delete_file", "call_1_0.5", "call_1_0", {"path": "/gated"}),
        ("after", "delete_file", "call_1_0.5", "call_1_0", True, "deleted /gated", None),
        ("after", "execute", "call_1_0", None, True, {"result": [140.0, "no multiplying", "not written",
                                                                  "deleted /gated"], "stdout": "", "calls": 5}, None),
    ]


async def test_a_tool_hook_failing_on_an_inner_call_fails_that_call_as_for_a_direct_call() -> None:
    # the code reads the hook's error as the inner call's exception; the turn goes on (issue 30)
    def before_tool_call(self: Think, ctx: ToolCallContext) -> None:
        if ctx.parent_tool_call_id is not None and ctx.tool_name == "add":
            raise RuntimeError("inner hook broke")

    def after_tool_call(self: Think, ctx: ToolCallResultContext) -> None:
        if ctx.parent_tool_call_id is not None and ctx.tool_name == "mul":
            raise KeyError("audit log full")

    code = ("out = []\nfor call in (lambda: add(1, 2), lambda: mul(2, 3)):\n    try:\n        out.append(call())\n"
            "    except RuntimeError as e:\n        out.append(str(e))\nout")
    script = S([[S.tool_call("execute", {"code": code})], [S.text("Both inner calls failed.")]])
    agent = coder(script, hooks={"before_tool_call": before_tool_call, "after_tool_call": after_tool_call})
    result = await agent.send("go")
    assert (result.status, result.error) == ("completed", None)
    part = agent.messages[-1]["parts"][1]
    assert part["state"] == "output-available"
    assert part["output"]["result"] == [
        ("add: ToolHookFailed: Coder.before_tool_call() for tool 'add' raised RuntimeError: inner hook broke; "
         "the tool did not run."),
        ("mul: ToolHookFailed: Coder.after_tool_call() for tool 'mul' raised KeyError: 'audit log full'; "
         "the call's result was discarded.")]
    assert len(script.requests) == 2


async def test_an_aborted_resume_leaves_no_snapshot_and_never_reruns_what_ran() -> None:
    reached = asyncio.Event()

    @tool
    async def hang() -> str:
        """Wait forever."""
        reached.set()
        await asyncio.Event().wait()
        return "unreachable"

    code = "a = delete_file('/one')\nb = hang()\n[a, b]"
    script = S([[S.tool_call("execute", {"code": code})], [S.text("Moving on.")]])
    agent = coder(script, hooks={"get_tools": lambda self: [delete_file, hang, execute_tool(self)]})
    await agent.send("go")
    resumed = agent.approve("call_1_0")
    assert resumed is not None
    await reached.wait()  # the resumed code runs hang(), after the approved call ran
    agent.abort_all_requests()
    assert (await resumed).status == "aborted" and ran == ["/one"]
    assert pauses(agent) == []  # claimed when the resume started
    await agent.continue_last_turn()  # the approval was used when the resume started: nothing runs twice
    part = agent.messages[1]["parts"][-1]
    # issue 28 §2: settled when the stop cut it (the approved call ran once, its result unrecorded), so
    # the continuation finds nothing to run again
    assert part["state"] == "output-error" and part["errorText"] == STOPPED_RUNNING_TEXT and ran == ["/one"]
    assert ran == ["/one"] and pauses(agent) == []


def test_step_mode_pauses_at_inner_calls_which_the_user_can_edit() -> None:
    script = S([[S.tool_call("execute", {"code": "tools.add(a=1, b=2)"})], [S.text("42.")]])
    agent = coder(script, name="stepped")
    stepper = agent.step("go")
    event, seen = stepper.next(), []
    while event.hook != "done":
        if event.hook == "before_tool_call":
            seen.append((event.tool, event.ctx.tool_call_id, event.ctx.parent_tool_call_id))
            if event.tool == "add":
                assert re.search(r">called from</th><td[^>]*>call_1_0</td>", event._repr_html_())
                event.ctx.input = {"a": 40, "b": 2}
        event = stepper.next()
    assert event.result.status == "completed"
    assert seen == [("execute", "call_1_0", None), ("add", "call_1_0.1", "call_1_0")]
    part = next(p for p in agent.messages[1]["parts"] if p["type"] == "tool-execute")
    assert part["output"] == {"result": 42.0, "stdout": "", "calls": 1}


async def test_a_new_call_reusing_an_old_call_id_after_clear_runs_from_the_start(tmp_path: Path) -> None:
    db = tmp_path / "reuse.sqlite"
    first = coder(S([[S.tool_call("execute", {"code": CODE})], [S.text("Done.")]]), name="u", db=db)
    await first.send("go")
    await first.approve("call_1_0")
    first.clear_messages()
    again = coder(S([[S.tool_call("execute", {"code": "add(1, 2)"})], [S.text("3.")]]), name="u", db=db)
    await again.send("add")  # the model reuses the id call_1_0; the old approval does not make it a resume
    part = next(p for p in again.messages[1]["parts"] if p["type"] == "tool-execute")
    assert part["toolCallId"] == "call_1_0" and part["output"] == {"result": 3.0, "stdout": "", "calls": 1}


async def test_a_cleared_conversations_approvals_do_not_decide_a_new_call_with_the_same_id(tmp_path: Path) -> None:
    """Clear forgets the cleared calls' decisions: a model that numbers its calls per conversation
    (a script played again after a restart: `call_1_0` both times; the workspace notebook run twice)
    gets its new `execute` paused for approval again, not "approved, but its paused state is gone"."""
    def again() -> Think:
        return coder(S([[S.tool_call("execute", {"code": CODE})], [S.text("Done.")]]), db=tmp_path / "c.sqlite")

    first = again()
    await first.send("go")
    await first.approve("call_1_0")
    assert ran == ["/tmp/x"]
    first.clear_messages()
    second = again()
    await second.send("go")
    assert [(p["tool_call_id"], p["waiting_on"]) for p in second.pending_approvals()] == [
        ("call_1_0", {"tool": "delete_file", "input": {"path": "/tmp/x"}})]
    assert (await second.approve("call_1_0")).status == "completed"
    assert ran == ["/tmp/x", "/tmp/x"]


# -- `execute` gated as a whole (needs_approval=True): every way an approval reaches it -----------------

@tool
def note(text: str) -> str:
    """Write a note down."""
    ran.append(text)
    return f"noted {text}"


NOTE = "note('once')\n'written'"


def gated_coder(script: S, name: str = "g", db: Path | None = None, **attrs: object) -> Think:
    """An agent whose `execute` asks before its code runs; the code calls the ungated `note`."""
    cls = type("GatedCoder", (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False,
                                        "get_tools": lambda self: [note, delete_file,
                                                                   execute_tool(self, needs_approval=True)],
                                        **attrs})
    return cls(name, db=db)


def ran_once_and_went_on(agent: Think, script: S, code: str = NOTE) -> None:
    """The approved call ran its code once, from its start, and the turn went on to the model."""
    assert ran == ["once"]
    assert agent.messages == [user("go"), {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(), "parts": [
            {"type": "step-start"},
            {"type": "tool-execute", "toolCallId": "call_1_0", "state": "output-available", "input": {"code": code},
             "approval": {"id": IsStr(regex="approval_.*"), "approved": True},
             "output": {"result": "written", "stdout": "", "calls": 1}}]}, {
        "id": IsStr(), "role": "assistant", "metadata": IsPartialDict(continuation=True), "parts": [
            {"type": "step-start"}, {"type": "text", "text": "Noted.", "state": "done"}]}]
    assert len(script.requests) == 2 and pauses(agent) == []


def gated_script() -> S:
    return S([[S.tool_call("execute", {"code": NOTE})], [S.text("Noted.")]])


async def test_a_gated_execute_asks_before_its_code_runs_and_approve_runs_it_once() -> None:
    script = gated_script()
    agent = gated_coder(script)
    await agent.send("go")
    assert ran == [] and agent.messages[-1]["parts"][-1]["state"] == "approval-requested"
    assert [p["waiting_on"] for p in agent.pending_approvals()] == [None]  # the call's own gate, not a pause
    assert (await agent.approve("call_1_0")).status == "completed"
    ran_once_and_went_on(agent, script)


async def test_a_gated_execute_approved_from_the_panel_runs_once(recording_comm: object) -> None:
    from helpers_comm import from_js
    from panels import until
    from think_nb.panel import protocol
    from think_nb.panel.widget import ChatPanel

    script = gated_script()
    agent = gated_coder(script)
    await agent.send("go")
    panel = ChatPanel(agent)
    from_js(panel, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call_1_0", "approved": True})
    await until(lambda: len(script.requests) == 2 and panel.status == "ready", "the continuation")
    await agent.wait_until_stable(timeout=60)
    ran_once_and_went_on(agent, script)


async def test_a_gated_execute_approved_by_a_hook_runs_once() -> None:
    def on_chat_response(self: Think, result: object) -> None:
        for pending in self.pending_approvals():
            self.approve(pending["tool_call_id"])

    script = gated_script()
    agent = gated_coder(script, on_chat_response=on_chat_response)
    await agent.send("go")
    await agent.wait_until_stable(timeout=60)
    ran_once_and_went_on(agent, script)


async def test_a_gated_execute_approved_by_a_restarted_agent_runs_once(tmp_path: Path) -> None:
    db = tmp_path / "gated.sqlite"
    await gated_coder(S([[S.tool_call("execute", {"code": NOTE})]]), db=db).send("go")
    script = S([[S.text("Noted.")]])
    again = gated_coder(script, db=db)
    assert [p["tool_name"] for p in again.pending_approvals()] == ["execute"]
    assert (await again.approve("call_1_0")).status == "completed"
    assert ran == ["once"] and again.messages[1]["parts"][-1]["state"] == "output-available"
    assert again.messages[1]["parts"][-1]["output"] == {"result": "written", "stdout": "", "calls": 1}
    assert again.messages[-1]["parts"][-1] == {"type": "text", "text": "Noted.", "state": "done"}


async def test_a_gated_execute_approved_with_edited_code_runs_the_edit_once() -> None:
    script = gated_script()
    agent = gated_coder(script)
    await agent.send("go")
    assert (await agent.approve("call_1_0", input={"code": "note('edited')\n'written'"})).status == "completed"
    assert ran == ["edited"] and agent.messages[1]["parts"][-1]["output"] == {"result": "written", "stdout": "",
                                                                              "calls": 1}
    assert len(script.requests) == 2 and pauses(agent) == []


async def test_a_denied_gated_execute_never_runs_its_code() -> None:
    script = S([[S.tool_call("execute", {"code": NOTE})], [S.text("Not then.")]])
    agent = gated_coder(script)
    await agent.send("go")
    assert (await agent.deny("call_1_0", "no code")).status == "completed"
    part = agent.messages[1]["parts"][-1]
    assert part["state"] == "output-denied" and part["approval"] == IsPartialDict(approved=False, reason="no code")
    assert ran == [] and len(script.requests) == 2 and pauses(agent) == []


async def test_a_gated_execute_whose_code_reaches_a_gated_call_asks_twice_and_runs_each_once() -> None:
    code = "note('once')\ndelete_file('/tmp/x')"
    script = S([[S.tool_call("execute", {"code": code})], [S.text("Both.")]])
    agent = gated_coder(script)
    await agent.send("go")
    gate = agent.messages[1]["parts"][-1]["approval"]["id"]
    await agent.approve("call_1_0")  # the call's own gate: the code runs, then pauses at delete_file
    assert ran == ["once"] and waiting_call(agent)["call"] == {"tool": "delete_file", "input": {"path": "/tmp/x"}}
    assert agent.messages[1]["parts"][-1]["approval"]["id"] != gate and len(script.requests) == 1
    assert (await agent.approve("call_1_0")).status == "completed"  # the pause: resumed, nothing ran again
    assert ran == ["once", "/tmp/x"] and agent.messages[1]["parts"][-1]["output"]["result"] == "deleted /tmp/x"
    assert len(script.requests) == 2 and pauses(agent) == []
