"""An extension's host bridge to the conversation (Think's `getMessages(limit)`,
`getSessionInfo()`, `sendMessage()`), each granted by the manifest's `messages` / `session`
permissions as Think's are; without the grant the function raises `PermissionError` naming the
permission, and the model reads that as the call's error."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_extensions import make, statics, tool_parts
from think_nb import UserError
from think_nb.extensions.manifest import parse
from think_nb.testing import ScriptedModel as S

BRIDGE = '''
async def recent(limit):
    return await get_messages(limit)

async def everything():
    return await get_messages()

async def info():
    return await get_session_info()

async def tell(text):
    return await send_message(text)

tools = {"recent": {"description": "Recent messages", "parameters": {"limit": {"type": "integer"}},
                    "function": recent},
         "everything": {"description": "All messages", "parameters": {}, "function": everything},
         "info": {"description": "Session info", "parameters": {}, "function": info},
         "tell": {"description": "Send a message", "parameters": {"text": {"type": "string"}}, "function": tell}}
'''

ALL = {"messages": "read", "session": {"sendMessage": True, "metadata": True}}


def bridge_agent(script: S, tmp_path: Path, permissions: dict) -> object:
    return make(script, tmp_path, get_extensions=statics(({"name": "br", "version": "1",
                                                           "permissions": permissions}, BRIDGE)))


async def seeded(agent: object) -> None:
    await agent.add_messages([  # type: ignore[attr-defined]
        {"id": "u0", "role": "user", "parts": [{"type": "text", "text": "first question"}]},
        {"id": "a0", "role": "assistant", "parts": [{"type": "reasoning", "text": "hm", "state": "done"},
                                                     {"type": "text", "text": "first answer"}]}])


async def test_get_messages_returns_the_newest_messages_up_to_the_limit(tmp_path: Path) -> None:
    """hooks.test.ts, Host bridge: "messages with limit"."""
    script = S([[S.tool_call("br_recent", {"limit": 2}, id="two"), S.tool_call("br_everything", {}, id="all"),
                 S.tool_call("br_recent", {"limit": 0}, id="none"), S.tool_call("br_recent", {"limit": -1}, id="bad")],
                [S.text("ok")]])
    agent = bridge_agent(script, tmp_path, {"messages": "read"})
    await seeded(agent)
    assert (await agent.send("what did we say?")).status == "completed"  # type: ignore[attr-defined]
    two, everything, none, bad = tool_parts(agent)
    user_id, reply_id = (m["id"] for m in agent.messages[2:])  # type: ignore[attr-defined]
    earlier = [{"id": "u0", "role": "user", "content": "first question"},
               {"id": "a0", "role": "assistant", "content": "first answer"},  # no reasoning
               {"id": user_id, "role": "user", "content": "what did we say?"},
               {"id": reply_id, "role": "assistant", "content": ""}]  # the running reply, as stored: its calls
    assert (two["output"], everything["output"]) == (earlier[2:], earlier)
    assert none["output"] == []
    assert bad["state"] == "output-error" and "get_messages(limit=-1)" in bad["errorText"]
    await agent.shutdown()  # type: ignore[attr-defined]


async def test_get_session_info_reports_the_agent_and_its_session(tmp_path: Path) -> None:
    """hooks.test.ts, Host bridge: "session info"."""
    script = S([[S.tool_call("br_info", {})], [S.text("ok")]])
    agent = bridge_agent(script, tmp_path, {"session": {"metadata": True}})
    await seeded(agent)
    assert (await agent.send("who am I talking to?")).status == "completed"  # type: ignore[attr-defined]
    (part,) = tool_parts(agent)
    assert part["output"] == {"agent": "x", "session_id": "", "message_count": 4, "is_running": True}
    await agent.shutdown()  # type: ignore[attr-defined]


async def test_send_message_starts_a_turn_after_the_running_one(tmp_path: Path) -> None:
    """hooks.test.ts, Host bridge: "sendMessage" — the message is a user message marked with the
    extension's name, answered by a turn that starts after the one whose tool sent it."""
    script = S([[S.tool_call("br_tell", {"text": "Remind me to stretch."})], [S.text("Sent.")],
                [S.text("Stretch now!")]])
    agent = bridge_agent(script, tmp_path, {"session": {"send_message": True}})
    first = await agent.send("set a reminder")  # type: ignore[attr-defined]
    assert first.status == "completed"
    assert await agent.wait_until_stable(timeout=60)  # type: ignore[attr-defined]
    (part,) = tool_parts(agent)
    turns = agent.turns()  # type: ignore[attr-defined]
    assert [(t["trigger"], t["status"]) for t in turns] == [("send", "completed"), ("extension", "completed")]
    assert part["output"] == turns[1]["request_id"]
    sent = agent.messages[2]  # type: ignore[attr-defined]
    assert (sent["role"], sent["parts"], sent["metadata"]["extension"]) == (
        "user", [{"type": "text", "text": "Remind me to stretch."}], "br")
    assert agent.messages[-1]["parts"][-1]["text"] == "Stretch now!"  # type: ignore[attr-defined]
    await agent.shutdown()  # type: ignore[attr-defined]


async def test_without_the_permissions_each_function_is_a_permission_error(tmp_path: Path) -> None:
    script = S([[S.tool_call("br_recent", {"limit": 1}, id="m"), S.tool_call("br_info", {}, id="i"),
                 S.tool_call("br_tell", {"text": "hi"}, id="t")], [S.text("denied")]])
    agent = bridge_agent(script, tmp_path, {"workspace": "read-write"})
    assert (await agent.send("try")).status == "completed"  # type: ignore[attr-defined]
    errors = [p["errorText"] for p in tool_parts(agent)]
    assert ("PermissionError: get_messages() is not granted to this extension; its manifest needs "
            "permissions.messages='read'") in errors[0]
    assert "permissions.session={'metadata': True}" in errors[1]
    assert "permissions.session={'send_message': True}" in errors[2]
    assert len(agent.turns()) == 1  # type: ignore[attr-defined]  # nothing was sent
    await agent.shutdown()  # type: ignore[attr-defined]


@pytest.mark.parametrize("permissions", [{"messages": "write"}, {"session": {"sendMessage": "yes"}},
                                         {"session": {"delete": True}}, {"session": ["send_message"]}])
def test_bad_conversation_permissions_are_refused_in_one_line(permissions: dict) -> None:
    with pytest.raises(UserError, match=r"permissions\.(messages|session)"):
        parse({"name": "br", "version": "1", "permissions": permissions})


def test_the_grants_are_kept_in_the_stored_manifest() -> None:
    manifest = parse({"name": "br", "version": "1", "permissions": ALL})
    assert parse(manifest.as_dict()).as_dict()["permissions"] == {
        "workspace": "none", "network": [], "messages": "read", "session": {"send_message": True, "metadata": True}}
