"""`agent.stash(data)`: a turn's recovery checkpoint, read back by `on_chat_recovery` as
`ctx.recovery_data` (`think_nb.turns.stash`; Think's `this.stash()` / `ctx.recoveryData`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import scripted_agent, warm_litellm
from test_durable import agent_class, left_by_dead_process, partial_chunks, settle_recovery
from test_subagents import Callback
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.messages import user_message
from think_nb.store import owners
from think_nb.testing import ScriptedModel as S
from think_nb.turns import stash


def stashing(script: S, read: list, **attrs: Any) -> Think:
    """An agent whose turns stash before the model is called and again before each tool runs;
    `read` gets what the store holds for the turn after each tool ran."""
    def before_turn(self: Think, ctx: Any) -> None:
        self.stash({"at": "before_turn"})

    def before_tool_call(self: Think, ctx: Any) -> None:
        self.stash({"at": "tool", "input": ctx.input})

    def after_tool_call(self: Think, ctx: Any) -> None:
        running = runtime_of(self).engine.current_turn
        read.append(runtime_of(self).store.state.get(stash.PREFIX + running.request_id))

    return scripted_agent(script, before_turn=before_turn, before_tool_call=before_tool_call,
                          after_tool_call=after_tool_call, **attrs)


@pytest.mark.parametrize("entry", ["save_messages", "chat"])
async def test_stash_is_usable_in_turns_started_by_save_messages_and_chat(entry: str) -> None:
    await warm_litellm()
    read: list = []
    agent = stashing(S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("3")]]), read)
    if entry == "save_messages":
        result = await agent.save_messages([user_message("1+2?")])
    else:
        result = await agent.chat("1+2?", Callback())
    assert result.status == "completed"
    assert read == [{"at": "tool", "input": {"a": 1, "b": 2}}]  # the later stash replaced the first
    assert runtime_of(agent).store.state.keys(stash.PREFIX) == []  # the turn ended here: its checkpoint went


async def test_stash_round_trips_into_on_chat_recovery_after_a_stall() -> None:
    await warm_litellm()
    seen: list = []
    agent = stashing(S([[S.tool_call("add", {"a": 1, "b": 2})], [S.text("partial "), S.stall()]]), [],
                     chat_stream_stall_timeout=0.2, on_chat_recovery=lambda self, ctx: seen.append(ctx))
    result = await agent.send("go")
    await settle_recovery(agent)
    assert result.interrupted
    assert [(c.request_id, c.recovery_data) for c in seen] == [
        (result.request_id, {"at": "tool", "input": {"a": 1, "b": 2}})]
    assert runtime_of(agent).store.state.keys(stash.PREFIX) == []


async def test_a_dead_processs_stash_is_the_recovery_data_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list = []
    cls = agent_class(S([]), on_chat_recovery=lambda self, ctx: seen.append(ctx.recovery_data))
    first = cls("r", db=tmp_path / "a.sqlite")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    with monkeypatch.context() as m:  # what the dead process's turn stashed (its own rows, as it wrote them)
        m.setattr(owners, "PROCESS", "dead-process")
        stash.stash(runtime_of(first).store, runtime_of(first).key, "req-dead", {"cursor": 3})
    cls("r", db=tmp_path / "a.sqlite")
    assert seen == [{"cursor": 3}]
    assert runtime_of(first).store.state.keys(stash.PREFIX) == []  # read once: deleted
    cls("r", db=tmp_path / "a.sqlite")
    assert seen == [{"cursor": 3}]  # nothing recovered again


async def test_a_dead_processs_stash_goes_with_its_turn_when_recovery_is_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = agent_class(S([]), chat_recovery=False)
    first = cls("r", db=tmp_path / "a.sqlite")
    left_by_dead_process(first, monkeypatch, "req-dead", partial_chunks())
    stash.stash(runtime_of(first).store, runtime_of(first).key, "req-dead", {"cursor": 3})
    agent = cls("r", db=tmp_path / "a.sqlite")
    assert agent.messages[-1]["metadata"]["interrupted"] is True
    assert runtime_of(agent).store.state.keys(stash.PREFIX) == []


async def test_stash_outside_a_turn_or_of_non_json_data_is_a_user_error() -> None:
    agent = scripted_agent(S([]))
    with pytest.raises(UserError, match="from a hook or a tool"):
        agent.stash({"a": 1})
    bad: list = []

    def before_turn(self: Think, ctx: Any) -> None:
        try:
            self.stash({"when": object()})
        except UserError as exc:
            bad.append(str(exc))

    agent = scripted_agent(S([[S.text("ok")]]), before_turn=before_turn)
    assert (await agent.send("go")).status == "completed"
    assert len(bad) == 1 and "JSON-serialisable" in bad[0]
    assert runtime_of(agent).store.state.keys(stash.PREFIX) == []


async def test_a_stash_survives_a_sigkill_of_the_process_running_the_turn(tmp_path: Path) -> None:
    """A real process runs a turn that stashes, and is SIGKILLed while the model streams; the agent
    created again on the file gets the stash as `ctx.recovery_data`, continues the turn, and the
    chain's incident record is gone once the continuation completed."""
    import asyncio
    import sqlite3
    import sys

    from agents import eventually
    from think_nb.turns import incidents

    db = tmp_path / "killed.sqlite"
    code = f"""
from think_nb import Think
from think_nb.testing import ScriptedModel as S
s = S([[S.text("abcdefghij" * 40, chunk_size=2)]], delay=0.02)
class Worker(Think):
    def get_model(self): return s.model
    def before_turn(self, ctx): self.stash({{"cursor": 3}})
Worker("w", db={str(db)!r}).run("go")
"""
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code)

    def stashed_and_streaming() -> bool:
        try:
            with sqlite3.connect(db) as conn:
                stashes = conn.execute("SELECT count(*) FROM think_agent_state WHERE key LIKE 'stash:%'").fetchone()
                chunks = conn.execute("SELECT count(*) FROM think_stream_chunks").fetchone()
        except sqlite3.Error:  # not created yet
            return False
        return stashes[0] == 1 and chunks[0] >= 1

    await eventually(stashed_and_streaming, timeout=60, what="the turn's stash and its first chunks in SQLite")
    proc.kill()
    await proc.wait()
    seen: list = []

    class Worker(Think):
        def get_model(self) -> Any:
            return S([[S.text("done.")]]).model

        def on_chat_recovery(self, ctx: Any) -> Any:
            seen.append((ctx.recovery_data, ctx.attempt, ctx.incident_id == ctx.request_id))
            return {"continue": True}

    agent = Worker("w", db=db)
    assert seen == [({"cursor": 3}, 1, True)]
    assert set(incidents.records(runtime_of(agent).store)) == {agent.turns()[0]["request_id"]}
    assert agent.recovery_task is not None
    (result,) = await agent.recovery_task
    assert result.status == "completed"
    assert incidents.records(runtime_of(agent).store) == {}
    assert runtime_of(agent).store.state.keys(stash.PREFIX) == []
