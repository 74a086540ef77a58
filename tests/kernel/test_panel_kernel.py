"""The chat panel's frames in a real kernel (ipykernel over ZMQ), this test as the front end:
the approval state machine (frames in the wrong order, twice, for unknown tool calls), deny,
and two parallel client tools with one failing (Think's batch barrier).

Every check asserts on what the kernel sent (trait syncs, frames) or on the agent's state
read back with a cell; the kernel must answer a cell after every bad frame.
"""

from __future__ import annotations

import json
import textwrap

from harness import FakeFrontend
from think_nb.panel import protocol

SETUP = textwrap.dedent(
    '''
    import json
    from think_nb import Think, tool, client_tool
    from think_nb.testing import ScriptedModel

    runs = []

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        runs.append(path)
        return f"deleted {path}"

    tz = client_tool("time_zone", "The user's time zone.", js="return 'UTC';")
    sel = client_tool("selection", "The selected text.", js="throw new Error('none');")

    def agent_for(name, steps):
        script = ScriptedModel(steps)
        class A(Think):
            def get_model(self):
                return script.model
            def get_tools(self):
                return [delete_file, tz, sel]
        agent = A(name)
        panel = agent.panel()
        display(panel)
        return agent, panel

    def parts(agent):
        print(json.dumps([p for m in agent.messages for p in m["parts"] if p["type"].startswith("tool-")]))
    '''
)


def open_panel(fe: FakeFrontend, code: str) -> str:
    start = len(fe.log)
    fe.execute(code).check()
    comm_id = fe.anywidget_opens(since=start)[-1]["comm_id"]
    fe.send_custom(comm_id, {"type": protocol.STREAM_RESUME_REQUEST, "probeId": "test-view"})
    return comm_id


def wait_status(fe: FakeFrontend, comm_id: str, status: str, since: int, timeout: float = 60) -> None:
    fe.wait_for(fe.is_update(comm_id, lambda s: s.get("status") == status), timeout=timeout, since=since)


def tool_parts(fe: FakeFrontend, agent: str) -> list[dict]:
    return json.loads(fe.execute(f"parts({agent})").check().stdout)


def send_user(fe: FakeFrontend, comm_id: str, rid: str, text: str) -> None:
    message = {"id": f"u-{rid}", "role": "user", "parts": [{"type": "text", "text": text}]}
    fe.send_custom(comm_id, {"type": protocol.USE_CHAT_REQUEST, "id": rid, "trigger": protocol.SUBMIT_MESSAGE,
                             "messages": [message]})


def test_approval_state_machine_ignores_bad_frames(frontend: FakeFrontend) -> None:
    fe = frontend
    fe.execute(SETUP).check()
    comm = open_panel(fe, textwrap.dedent('''
        agent, panel = agent_for("approve", [
            [ScriptedModel.tool_call("delete_file", {"path": "notes.txt"}, id="call-del")],
            [ScriptedModel.text("Deleted it.")],
        ])'''))
    start = len(fe.log)
    send_user(fe, comm, "r1", "delete notes.txt")
    wait_status(fe, comm, "awaiting-approval", start)
    assert [(p["toolCallId"], p["state"]) for p in tool_parts(fe, "agent")] == [("call-del", "approval-requested")]

    bad = [
        {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-unknown", "approved": True},  # unknown call
        # wrong kind
        {"type": protocol.TOOL_RESULT, "toolCallId": "call-del", "toolName": "delete_file", "output": "x"},
        {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-del", "approved": "yes"},  # malformed
        {"type": protocol.STREAM_RESUME_ACK, "id": "no-such-turn"},  # ack without a turn
        {"type": "cf_agent_tool_approval", "toolCallId": "call-del", "approved": True},  # unknown type
    ]
    for frame in bad:
        fe.send_custom(comm, frame)
    res = fe.execute("print(runs, json.dumps(agent.pending_approvals()))").check()
    assert res.stdout.startswith("[] ")  # the tool never ran
    assert [p["tool_call_id"] for p in json.loads(res.stdout[3:])] == ["call-del"]

    start = len(fe.log)
    fe.send_custom(comm, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-del", "approved": True})
    fe.send_custom(comm, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-del", "approved": True})  # twice
    fe.wait_for(fe.is_custom(comm, lambda f: f["type"] == protocol.TRANSCRIPT_PATCH and bool(f["updated"])),
                since=start)
    fe.wait_for(fe.is_custom(comm, lambda f: f["type"] == protocol.USE_CHAT_RESPONSE and f["done"]
                             and f.get("continuation") is True), since=start)
    wait_status(fe, comm, "ready", start)
    assert fe.execute("print(runs)").check().stdout.strip() == "['notes.txt']"  # ran exactly once
    [part] = tool_parts(fe, "agent")
    assert (part["state"], part["output"], part["approval"]["approved"]) == (
        "output-available", "deleted notes.txt", True)
    fe.send_custom(comm, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-del", "approved": False})  # too late
    assert fe.execute("print(runs, len(agent.pending_approvals()))").check().stdout.strip() == "['notes.txt'] 0"


def test_deny_tells_the_model(frontend: FakeFrontend) -> None:
    fe = frontend
    comm = open_panel(fe, textwrap.dedent('''
        agent2, panel2 = agent_for("deny", [
            [ScriptedModel.tool_call("delete_file", {"path": "a.txt"}, id="call-d2")],
            [ScriptedModel.text("OK, I will not delete it.")],
        ])'''))
    start = len(fe.log)
    send_user(fe, comm, "r2", "delete a.txt")
    wait_status(fe, comm, "awaiting-approval", start)
    start = len(fe.log)
    fe.send_custom(comm, {"type": protocol.TOOL_APPROVAL, "toolCallId": "call-d2", "approved": False, "reason": "keep"})
    wait_status(fe, comm, "ready", start)
    [part] = tool_parts(fe, "agent2")
    assert (part["state"], part["approval"]) == ("output-denied", {"id": part["approval"]["id"], "approved": False,
                                                                   "reason": "keep"})
    assert "a.txt" not in fe.execute("print(runs)").check().stdout
    text = fe.execute("print(agent2.messages[-1]['parts'][-1]['text'])").check().stdout
    assert "not delete" in text


def test_two_parallel_client_tools_wait_for_both_results(frontend: FakeFrontend) -> None:
    fe = frontend
    comm = open_panel(fe, textwrap.dedent('''
        agent3, panel3 = agent_for("client", [
            [ScriptedModel.tool_call("time_zone", {}, id="call-tz"),
             ScriptedModel.tool_call("selection", {}, id="call-sel")],
            [ScriptedModel.text("You are in UTC; nothing is selected.")],
        ])'''))
    specs = json.loads(fe.execute("print(json.dumps(panel3.client_tools))").check().stdout)
    assert {s["name"]: s["js"] for s in specs} == {"time_zone": "return 'UTC';",
                                                    "selection": "throw new Error('none');"}
    start = len(fe.log)
    send_user(fe, comm, "r3", "where am I?")
    wait_status(fe, comm, "awaiting-client-tool", start)
    start = len(fe.log)
    tz_result = {"type": protocol.TOOL_RESULT, "toolCallId": "call-tz", "toolName": "time_zone"}
    fe.send_custom(comm, {**tz_result, "output": "UTC"})
    fe.send_custom(comm, {**tz_result, "output": "X"})
    fe.wait_for(fe.is_custom(comm, lambda f: f["type"] == protocol.TRANSCRIPT_PATCH and bool(f["updated"])),
                since=start)
    states = {p["toolCallId"]: p["state"] for p in tool_parts(fe, "agent3")}
    assert states == {"call-tz": "output-available", "call-sel": "input-available"}  # the barrier holds
    assert fe.execute("print(len(agent3.messages))").check().stdout.strip() == "2"
    start = len(fe.log)
    fe.send_custom(comm, {"type": protocol.TOOL_RESULT, "toolCallId": "call-sel", "toolName": "selection",
                          "state": "output-error", "errorText": "Error: none"})
    fe.wait_for(fe.is_custom(comm, lambda f: f["type"] == protocol.USE_CHAT_RESPONSE and f["done"]
                             and f.get("continuation") is True), since=start)
    wait_status(fe, comm, "ready", start)
    parts = {p["toolCallId"]: p for p in tool_parts(fe, "agent3")}
    assert (parts["call-tz"]["output"], parts["call-sel"]["state"], parts["call-sel"]["errorText"]) == (
        "UTC", "output-error", "Error: none")
    assert "You are in UTC" in fe.execute("print(agent3.messages[-1]['parts'][-1]['text'])").check().stdout
