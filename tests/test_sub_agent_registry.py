"""A parent's sub-agents as Think manages them: has_sub_agent, list_sub_agents, delete_sub_agent,
abort_sub_agent, parent_agent (Think's hasSubAgent, listSubAgents, deleteSubAgent, abortSubAgent,
parentAgent; cases from packages/agents/src/tests/sub-agent.test.ts)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from dirty_equals import IsFloat

from agents import eventually, texts
from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.testing import ScriptedModel as S


class Counter(Think):
    """A child on a scripted model that says "ok" as often as it is asked."""

    def get_model(self):
        return S([[S.text("ok")]] * 20).model


class Helper(Think):
    def get_model(self):
        return S([[S.text("ok")]] * 20).model


class Slow(Think):
    """A child whose first reply streams slowly (aborted mid-stream by the tests), then says "fresh"."""

    script: S

    def get_model(self):
        return type(self).script.model


@pytest.fixture(autouse=True)
def slow_script() -> None:
    Slow.script = S([[S.text("z" * 400, chunk_size=1)], [S.text("fresh")]], delay=0.01)


class Parent(Think):
    pass


def rows_of(db: Path, key: str) -> dict[str, int]:
    """`{table: rows}` of every think_nb table holding rows keyed by `key`, its sessions or descendants."""
    out: dict[str, int] = {}
    with sqlite3.connect(db) as conn:
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE "
                                             "'think%' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
        for table in tables:
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            for column in {"agent_key", "conversation_key", "key", "child_key"} & columns:
                n = conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = ? OR {column} LIKE ? OR {column} "
                                 "LIKE ?", (key, key + "#%", key + "/%")).fetchone()[0]
                if n:
                    out[f"{table}.{column}"] = out.get(f"{table}.{column}", 0) + n
    return out


def test_has_sub_agent_is_false_before_a_spawn_and_true_after_by_class_or_name(tmp_path: Path) -> None:
    """Think: `hasSubAgent returns true after spawn, false before`; `hasSubAgent / listSubAgents
    accept both class ref and string name`."""
    parent = Parent("p", db=tmp_path / "a.sqlite")
    assert parent.has_sub_agent(Counter, "c1") is False
    assert parent.has_sub_agent("Counter") is False
    parent.sub_agent(Counter, "c1")
    assert parent.has_sub_agent(Counter, "c1") is True
    assert parent.has_sub_agent("Counter", "c1") is True
    assert parent.has_sub_agent(Counter) is True  # any child of the class
    assert parent.has_sub_agent(Counter, "c2") is False
    assert parent.has_sub_agent(Helper, "c1") is False  # same name, another class
    assert parent.list_sub_agents(Counter) == parent.list_sub_agents("Counter")
    with pytest.raises(UserError, match=r"has_sub_agent\(42\): pass the sub-agent's class"):
        parent.has_sub_agent(42)  # type: ignore[arg-type]


async def test_list_sub_agents_enumerates_every_child_oldest_first_and_filters_by_class(tmp_path: Path) -> None:
    """Think: `listSubAgents enumerates every spawned child`, `listSubAgents filters by class when
    provided` (rows in creation order with className, name, createdAt; ours adds key and messages)."""
    parent = Parent("p", db=tmp_path / "a.sqlite")
    await parent.sub_agent(Counter, "a").send("hi")
    parent.sub_agent(Helper, "a")  # same name, another class: another child
    parent.sub_agent(Counter, "b")
    parent.sub_agent(Counter, "a").sub_agent(Helper, "grandchild")  # not a direct child of the parent
    assert parent.list_sub_agents() == [
        {"class": "Counter", "name": "a", "key": "Parent:p/Counter:a", "created_at": IsFloat, "messages": 2},
        {"class": "Helper", "name": "a", "key": "Parent:p/Helper:a", "created_at": IsFloat, "messages": 0},
        {"class": "Counter", "name": "b", "key": "Parent:p/Counter:b", "created_at": IsFloat, "messages": 0},
    ]
    assert [r["name"] for r in parent.list_sub_agents(Counter)] == ["a", "b"]
    assert [r["key"] for r in parent.list_sub_agents("Helper")] == ["Parent:p/Helper:a"]
    assert parent.sub_agent(Counter, "a").list_sub_agents() == [
        {"class": "Helper", "name": "grandchild", "key": "Parent:p/Counter:a/Helper:grandchild",
         "created_at": IsFloat, "messages": 0}]


def test_a_new_parent_in_another_process_knows_the_children_from_the_file(tmp_path: Path) -> None:
    """Children are discovered from the file: a parent made again after a restart (here: in a new
    process) lists, finds and deletes the children of the old one."""
    db = tmp_path / "a.sqlite"
    script = textwrap.dedent(f"""
        import asyncio
        from think_nb import Think
        from think_nb.testing import ScriptedModel as S
        class Counter(Think):
            def get_model(self):
                return S([[S.text("ok")]]).model
        class Parent(Think):
            pass
        parent = Parent("p", db={str(db)!r})
        asyncio.run(parent.sub_agent(Counter, "c1").send("hello"))
        parent.sub_agent(Counter, "c2")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60, env={**os.environ})
    parent = Parent("p", db=db)  # this process never made a child
    assert [(r["class"], r["name"], r["messages"]) for r in parent.list_sub_agents()] == [
        ("Counter", "c1", 2), ("Counter", "c2", 0)]
    assert parent.has_sub_agent("Counter", "c1")
    assert texts(parent.sub_agent(Counter, "c1")) == [("user", "hello"), ("assistant", "ok")]


async def test_delete_sub_agent_removes_every_row_keyed_to_it_and_nothing_else(tmp_path: Path) -> None:
    """Think: `should delete a sub-agent and its storage` (re-accessing gives a fresh, empty one),
    `hasSubAgent returns false after deleteSubAgent`; its sessions, workspace, state, turn log,
    traces, its own sub-agents and the parent's agent-tool runs of it go; a sibling and the parent stay."""
    db = tmp_path / "a.sqlite"
    parent = Parent("p", db=db)
    child = parent.sub_agent(Counter, "gone")
    await child.send("one")
    child.create_session("second")
    await child.send("two")
    child.configure({"k": 1})
    child.workspace.pipe_file("/notes.txt", b"x" * 10)
    await child.sub_agent(Helper, "inner").send("deep")
    runtime_of(parent).store.child_runs.begin({"run_id": "agent-tool:c9", "child_key": "Parent:p/Counter:gone",
                                                "child_class": "Counter", "child_name": "gone"})
    sibling = parent.sub_agent(Counter, "kept")
    await sibling.send("stay")
    await parent.add_messages([{"id": "pm", "role": "user", "parts": [{"type": "text", "text": "mine"}]}])
    before_sibling, before_parent = rows_of(db, "Parent:p/Counter:kept"), len(parent.messages)
    assert rows_of(db, "Parent:p/Counter:gone")  # something to delete

    assert await parent.delete_sub_agent(Counter, "gone") is True
    assert rows_of(db, "Parent:p/Counter:gone") == {}
    assert parent.has_sub_agent(Counter, "gone") is False
    assert [r["name"] for r in parent.list_sub_agents()] == ["kept"]
    assert rows_of(db, "Parent:p/Counter:kept") == before_sibling
    assert len(parent.messages) == before_parent and parent.agent_tool_runs() == []
    fresh = parent.sub_agent(Counter, "gone")
    assert fresh is not child and fresh.messages == [] and fresh.get_config() is None
    assert not fresh.workspace.exists("/notes.txt") and fresh.list_sessions()[0]["messages"] == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_deleting_a_never_made_or_already_deleted_sub_agent_is_a_silent_no_op(tmp_path: Path) -> None:
    """Think: `deleting a never-spawned sub-agent succeeds silently`, `deleting the same sub-agent
    twice succeeds silently`."""
    parent = Parent("p", db=tmp_path / "a.sqlite")
    assert await parent.delete_sub_agent(Counter, "never") is False
    parent.sub_agent(Counter, "once")
    assert await parent.delete_sub_agent("Counter", "once") is True
    assert await parent.delete_sub_agent("Counter", "once") is False
    assert parent.has_sub_agent(Counter, "once") is False


async def test_delete_sub_agent_aborts_a_running_child_first(tmp_path: Path) -> None:
    """Think: `deleteSubAgent(Cls, name)` aborts any running instance before wiping its storage."""
    parent = Parent("p", db=tmp_path / "a.sqlite")
    child = parent.sub_agent(Slow, "busy")
    chunks: list[str] = []
    runtime_of(child).subscribe(type("L", (), {"on_chunk": lambda self, rid, c, cont: chunks.append(c["type"])})())
    task = child.submit("talk")
    await eventually(lambda: "text-delta" in chunks, what="the child streams")
    assert await parent.delete_sub_agent(Slow, "busy") is True
    assert task.done() and task.result().status == "aborted"
    assert rows_of(tmp_path / "a.sqlite", "Parent:p/Slow:busy") == {}


async def test_abort_sub_agent_fails_the_delegating_tool_and_the_parent_turn_goes_on(tmp_path: Path) -> None:
    """Think: `should abort a sub-agent and restart it on next access` (abort keeps storage; the
    child works afterwards); the delegating tool gets an output-error naming the reason, the
    parent's turn goes on to its next step."""
    chunks: list[str] = []
    lead_script = S([[S.tool_call("research", {"q": "long"})], [S.text("The researcher was stopped.")]])

    class Watched(Slow):
        def on_chunk(self, chunk: dict) -> None:
            chunks.append(chunk["type"])

    class Lead(Think):
        def get_model(self):
            return lead_script.model

        def get_tools(self):
            return [self.research]

        async def research(self, q: str) -> str:
            """Ask the researcher."""
            return await self.delegate(self.sub_agent(Watched, "r"), q)

    lead = Lead("lead", db=tmp_path / "a.sqlite")
    task = lead.submit("go")
    await eventually(lambda: "text-delta" in chunks, what="the child streams")
    assert lead.abort_sub_agent(Watched, "r", "quota exceeded") is True
    result = await task
    assert result.status == "completed"
    assert texts(lead)[-1] == ("assistant", "The researcher was stopped.")
    call = next(p for p in lead.messages[-1]["parts"] if p["type"] == "tool-research")
    assert call["state"] == "output-error"
    assert call["errorText"] == "RuntimeError: Sub-agent 'Lead:lead/Watched:r' ended aborted: quota exceeded"
    assert "quota exceeded" in str(lead_script.requests[1]["messages"])  # the model read it
    (run,) = lead.agent_tool_runs()
    assert (run["status"], run["error"]) == ("aborted", "quota exceeded")
    assert run["parent_tool_call_id"] == call["toolCallId"]
    child = lead.sub_agent(Watched, "r")
    assert child.turns()[-1]["status"] == "aborted"
    assert 0 < len(texts(child)[-1][1]) < 400  # its partial reply is kept: storage is not touched
    assert (await child.send("again")).status == "completed"
    assert texts(child)[-1] == ("assistant", "fresh")
    assert lead.abort_sub_agent(Watched, "r") is False  # nothing runs now


async def test_deleting_a_sub_agent_a_tool_delegates_to_fails_that_call_and_leaves_no_run(tmp_path: Path) -> None:
    """Think: `deleteSubAgent` aborts a running instance; the delegating call is told the child was
    deleted and the parent's turn goes on; the run row goes with the child."""
    chunks: list[str] = []
    lead_script = S([[S.tool_call("research", {"q": "long"})], [S.text("It is gone.")]])

    class Watched(Slow):
        def on_chunk(self, chunk: dict) -> None:
            chunks.append(chunk["type"])

    class Lead(Think):
        def get_model(self):
            return lead_script.model

        def get_tools(self):
            return [self.research]

        async def research(self, q: str) -> str:
            """Ask the researcher."""
            return await self.delegate(self.sub_agent(Watched, "r"), q)

    lead = Lead("lead", db=tmp_path / "a.sqlite")
    task = lead.submit("go")
    await eventually(lambda: "text-delta" in chunks, what="the child streams")
    assert await lead.delete_sub_agent(Watched, "r") is True
    assert (await task).status == "completed" and texts(lead)[-1] == ("assistant", "It is gone.")
    call = next(p for p in lead.messages[-1]["parts"] if p["type"] == "tool-research")
    assert call["errorText"] == "RuntimeError: Sub-agent 'Lead:lead/Watched:r' ended aborted: the sub-agent was deleted"
    assert lead.agent_tool_runs() == [] and lead.list_sub_agents() == []


def test_parent_agent_is_the_maker_and_says_when_there_is_none_or_another_class(tmp_path: Path) -> None:
    """Think's `parentAgent()`: `resolves the parent stub from within a facet`, `throws a clear
    error when called on a non-facet (top-level agent)`, `throws when the passed class doesn't
    match the recorded parent class`."""
    parent = Parent("p", db=tmp_path / "a.sqlite")
    child = parent.sub_agent(Counter, "c")
    assert child.parent_agent() is parent and child.parent_agent(Parent) is parent
    with pytest.raises(UserError, match=r"Parent\('p'\) is not a sub-agent"):
        parent.parent_agent()
    with pytest.raises(UserError, match="the parent of 'c' is a Parent; pass that class"):
        child.parent_agent(Counter)
