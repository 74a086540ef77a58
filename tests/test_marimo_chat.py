"""`agent.marimo_chat()`: the `mo.ui.chat` model bound to a real agent (ScriptedModel at the model seam).

The model is driven as marimo drives it: called with marimo's `ChatMessage`s as the browser sends them
(the AI SDK parts), its async generator consumed chunk by chunk, cancelled on Stop. The browser side is
covered by tests/e2e/test_marimo_browser.py.
"""

from __future__ import annotations

import asyncio

import marimo as mo
import pytest
from marimo._ai._types import ChatMessage

from agents import eventually, scripted_agent
from think_nb import tool
from think_nb.errors import UserError
from think_nb.frontends.marimo_chat import ChatModel
from think_nb.messages import text_of
from think_nb.testing import ScriptedModel as S

deleted: list[str] = []


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


def user(text: str, id: str = "u1") -> ChatMessage:
    return ChatMessage(role="user", content=text, id=id, parts=[{"type": "text", "text": text}])


async def play(model: ChatModel, messages: list[ChatMessage]) -> list[dict]:
    return [chunk async for chunk in model(messages, None)]


def kinds(chunks: list[dict]) -> list[str]:
    return [c["type"] for c in chunks]


async def test_a_reply_streams_as_ai_sdk_chunks_and_lands_in_the_agents_transcript() -> None:
    agent = scripted_agent(S([[S.text("Hello from marimo", chunk_size=6)]]), tools=[], name="mc")
    chat = agent.marimo_chat(max_height=300)
    assert isinstance(chat, mo.ui.chat)
    chunks = await play(ChatModel(agent), [user("hi")])
    assert kinds(chunks) == ["start", "start-step", "text-start", "text-delta", "text-delta", "text-delta",
                             "text-end", "finish-step", "finish"]
    assert "".join(c["delta"] for c in chunks if c["type"] == "text-delta") == "Hello from marimo"
    assert [(m["role"], text_of(m)) for m in agent.messages] == [("user", "hi"), ("assistant", "Hello from marimo")]
    assert agent.turns()[-1]["trigger"] == "marimo"


async def test_approve_and_deny_in_the_chat_run_or_refuse_the_call() -> None:
    deleted.clear()
    script = S([[S.tool_call("delete_file", {"path": "a.txt"}, id="c1")], [S.text("Deleted a.txt.")],
                [S.tool_call("delete_file", {"path": "b.txt"}, id="c2")], [S.text("Kept b.txt.")]])
    agent = scripted_agent(script, tools=[delete_file], name="mc-approve")
    model = ChatModel(agent)
    first = await play(model, [user("Delete a.txt")])
    request = next(c for c in first if c["type"] == "tool-approval-request")
    assert kinds(first)[-3:] == ["tool-approval-request", "finish-step", "finish"] and deleted == []

    def answered(call_id: str, approval_id: str, approved: bool) -> ChatMessage:  # the browser's Approve/Deny
        return ChatMessage(role="assistant", content=None, id="a1", parts=[
            {"type": "step-start"},
            {"type": "tool-delete_file", "toolCallId": call_id, "state": "approval-responded",
             "input": {"path": "a.txt"}, "approval": {"id": approval_id, "approved": approved}}])

    second = await play(model, [user("Delete a.txt"), answered("c1", request["approvalId"], True)])
    assert second[0] == {"type": "tool-output-available", "toolCallId": "c1", "output": "deleted a.txt"}
    assert second[1] == {"type": "start", "messageMetadata": {"continuation": True}}  # continues the browser's message
    assert "".join(c.get("delta", "") for c in second) == "Deleted a.txt." and deleted == ["a.txt"]

    third = await play(model, [user("Delete b.txt", id="u2")])
    request = next(c for c in third if c["type"] == "tool-approval-request")
    fourth = await play(model, [user("Delete b.txt", id="u2"), answered("c2", request["approvalId"], False)])
    assert "".join(c.get("delta", "") for c in fourth) == "Kept b.txt." and deleted == ["a.txt"]
    denied = [p for m in agent.messages for p in m["parts"] if p.get("toolCallId") == "c2"]
    assert [p["state"] for p in denied] == ["output-denied"]

    again = await play(model, [user("Delete b.txt", id="u2"), answered("c2", request["approvalId"], False)])
    assert kinds(again) == ["text-start", "text-delta", "text-end"]  # already decided: said, not redone
    assert "Nothing here waits for a decision" in again[1]["delta"]


async def test_stop_aborts_the_turn_and_keeps_the_partial_reply() -> None:
    agent = scripted_agent(S([[S.text("a slow reply " * 400, chunk_size=4)]], delay=0.002), tools=[], name="mc-stop")
    seen: list[dict] = []

    async def consume() -> None:
        async for chunk in ChatModel(agent)([user("Say something long")], None):
            seen.append(chunk)  # noqa: PERF401 - one by one: the test watches them arrive

    task = asyncio.create_task(consume())
    await eventually(lambda: sum(c["type"] == "text-delta" for c in seen) >= 3, what="the reply streams")
    task.cancel()  # what marimo does on Stop
    with pytest.raises(asyncio.CancelledError):
        await task
    await agent.wait_until_stable(60)
    assert agent.turns()[-1]["status"] == "aborted"
    reply = text_of(agent.messages[-1])
    assert reply.startswith("a slow reply") and len(reply) < len("a slow reply " * 400)


async def test_reload_in_the_chat_regenerates_and_a_new_message_is_a_new_turn() -> None:
    agent = scripted_agent(S([[S.text("One.")], [S.text("Two.")], [S.text("Three.")]]), tools=[], name="mc-regen")
    model = ChatModel(agent)
    await play(model, [user("hi")])
    chunks = await play(model, [user("hi")])  # marimo's reload resends the same user message
    assert "".join(c.get("delta", "") for c in chunks) == "Two."
    assert [text_of(m) for m in agent.messages] == ["hi", "Two."]
    assert [text_of(m) for m in agent.get_branches(agent.messages[1]["id"])] == ["One.", "Two."]
    await play(model, [user("hi"), user("again", id="u2")])
    assert [text_of(m) for m in agent.messages] == ["hi", "Two.", "again", "Three."]


def test_marimo_chat_refuses_a_model_of_its_own() -> None:
    agent = scripted_agent(S([]), tools=[], name="mc-bad")
    with pytest.raises(UserError, match="drop model="):
        agent.marimo_chat(model=lambda messages: "x")


def test_a_marimo_app_keeps_its_agents_in_a_file_named_after_it(tmp_path) -> None:
    """Issue 27 §9: in a marimo app the default SQLite file is `.think/<app>.sqlite` beside the app
    (as `.think/<notebook>.sqlite` beside a Jupyter notebook), not `.think/think_nb.sqlite`."""
    import os
    import subprocess
    import sys
    import textwrap

    app = tmp_path / "apps" / "lesson.py"
    app.parent.mkdir()
    app.write_text(textwrap.dedent('''
        import marimo
        app = marimo.App()

        @app.cell
        def _():
            from think_nb import Think
            print("DB", Think("x").db_path)
            return

        if __name__ == "__main__":
            app.run()
    '''))
    env = {k: v for k, v in os.environ.items() if k not in ("THINK_NB_DIR", "THINK_NB_DB")}
    out = subprocess.run([sys.executable, str(app)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    assert f"DB {app.parent / '.think' / 'lesson.sqlite'}" in out.stdout, out.stdout + out.stderr
