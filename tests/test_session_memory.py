"""Search (FTS5), compaction overlays, skills, several sessions and the DataFrames
(think_nb.session, think_nb.frontends.views), on real SQLite with scripted models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dirty_equals import IsStr

from think_nb import Think
from think_nb.binding import runtime_of
from think_nb.errors import UserError
from think_nb.messages import user_message
from think_nb.session import Skill, SkillDirectory
from think_nb.testing import ScriptedModel

S = ScriptedModel


def make(script: ScriptedModel, configure=lambda self, s: s, **attrs) -> Think:
    attrs.setdefault("include_workspace_tools", False)  # these tests see exactly the session's tools
    cls = type("Mem", (Think,), {"get_model": lambda self: script.model, "configure_session": configure, **attrs})
    return cls("m")


def text_of(model_message: dict) -> str:
    return model_message.get("content") or ""


async def converse(agent: Think, script: ScriptedModel, pairs: list[tuple[str, str]]) -> None:
    for question, answer in pairs:
        script.steps.append([S.text(answer)])
        await agent.send(question)


# -- search -------------------------------------------------------------------------------
async def test_search_ranks_phrase_matches_and_survives_malformed_queries() -> None:
    script = S([])
    agent = make(script)
    await converse(agent, script, [
        ("Tell me about the red fox", "The red fox is a small canid. Red foxes hunt rodents."),
        ("And the arctic fox?", "The arctic fox lives in the tundra."),
        ("What do foxes eat?", "Foxes eat rodents, birds and berries."),
    ])
    hits = agent.session.search("red fox")
    assert [h["text"] for h in hits] == ["The red fox is a small canid. Red foxes hunt rodents.",
                                         "Tell me about the red fox"]
    assert hits[0] == {"id": IsStr(), "role": "assistant", "session": "", "created_at": hits[0]["created_at"],
                       "snippet": "The [red fox] is a small canid. [Red foxes] hunt rodents.",
                       "rank": hits[0]["rank"], "text": hits[0]["text"], "on_branch": True}
    assert hits[0]["rank"] <= hits[1]["rank"]
    assert [h["text"] for h in agent.session.search("rodent", limit=1)] == ["Foxes eat rodents, birds and berries."]
    for bad in ['"', "AND OR NOT", "fox*", "(", "", "   ", 'NEAR("a"']:
        assert isinstance(agent.session.search(bad), list)
    assert agent.session.search("") == []
    assert agent.session.search("zebra") == []
    df = agent.search("arctic")
    assert list(df.columns) == ["id", "role", "session", "on_branch", "snippet", "rank", "text", "created_at"]
    assert df["text"].tolist() == ["And the arctic fox?", "The arctic fox lives in the tundra."] or \
        df["text"].tolist() == ["The arctic fox lives in the tundra.", "And the arctic fox?"]


async def test_search_says_which_hits_are_on_the_current_branch() -> None:
    """A regenerated reply keeps the old version in the tree: search finds both and says which one
    the conversation shows (`on_branch`); another session's hits say None (their own branch)."""
    script = S([])
    agent = make(script)
    await converse(agent, script, [("Tell me about foxes", "Old answer: the red fox hunts.")])
    script.steps.append([S.text("New answer: the red fox sleeps.")])
    await agent.regenerate()
    found = {h["text"]: h["on_branch"] for h in agent.session.search("red fox")}
    assert found == {"Old answer: the red fox hunts.": False, "New answer: the red fox sleeps.": True}
    agent.switch_branch(next(h["id"] for h in agent.session.search("hunts")))
    assert {h["text"]: h["on_branch"] for h in agent.session.search("red fox")} == {
        "Old answer: the red fox hunts.": True, "New answer: the red fox sleeps.": False}
    agent.create_session("second")
    await converse(agent, script, [("More on the red fox", "It is red.")])
    hits = {h["text"]: (h["session"] != "", h["on_branch"]) for h in agent.session.search("red fox", all_sessions=True)}
    assert hits["More on the red fox"] == (True, True)
    assert hits["Old answer: the red fox hunts."] == (False, None)
    assert agent.search("red fox")["on_branch"].tolist() == [True]


async def test_search_index_follows_updates_and_clear() -> None:
    script = S([])
    agent = make(script)
    await converse(agent, script, [("alpha", "bravo")])
    message = agent.messages[1]
    runtime_of(agent).store.messages.update({**message, "parts": [{"type": "text", "text": "charlie"}]})
    assert agent.session.search("bravo") == [] and len(agent.session.search("charlie")) == 1
    runtime_of(agent).store.messages.update({**message, "parts": [{"type": "text", "text": "delta echo foxtrot"}]})
    assert agent.session.search("charlie") == [] and len(agent.session.search("echo foxtrot")) == 1
    assert agent.session.search("delta foxtrot") == []
    agent.clear_messages()
    assert agent.session.search("alpha") == [] and agent.session.search("echo foxtrot") == []


def test_phrase_search_ranks_as_fts5_phrase_query(tmp_path) -> None:
    """Phrases of 2+ words are matched on the adjacent-pairs index (migration m013): the same
    messages, in the same order, with the same bm25 ranks as FTS5's own phrase query on
    messages_fts (Think's `session.search`), stemming and repeated words included."""
    import sqlite3

    from think_nb.session.search import search_messages
    from think_nb.store import MessageStore, open_database

    path = tmp_path / "p.sqlite"
    texts = ["The red fox is a small canid. Red foxes hunt rodents.", "Tell me about the red fox",
             "A fox, red as rust", "red fox red fox red fox", "Arctic foxes live in the tundra; the red fox does not",
             "naïve Ünïcode_test 中文 red-fox", "", "fox", "the quick red fox jumps over the lazy dog"]
    MessageStore(open_database(path), "A:x").extend(
        [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": t}]} for i, t in enumerate(texts)], None)
    conn = sqlite3.connect(path)
    for phrase in ["red fox", "Red Foxes", "red fox red", "quick red fox jumps", "unicode test 中文", "fox red",
                   "lazy cat", "the red fox", "fox fox"]:
        expected = conn.execute("SELECT m.id, f.rank FROM think_messages_fts f JOIN think_messages m "
                                "ON m.seq = f.rowid WHERE think_messages_fts MATCH ? ORDER BY f.rank",
                                (f'"{phrase}"',)).fetchall()
        hits = search_messages(open_database(path), ["A:x"], phrase)
        assert [(h["id"], h["rank"]) for h in hits] == expected, phrase
    hits = search_messages(open_database(path), ["A:x"], "red foxes", limit=2)
    assert [h["snippet"] for h in hits] == ["[red fox] [red fox] [red fox]",
                                           "The [red fox] is a small canid. [Red foxes] hunt rodents."]


def test_a_phrase_is_split_by_fts5_as_the_messages_were(tmp_path) -> None:
    """The query goes to FTS5 as typed, so a word in decomposed Unicode (NFD) and an emoji between
    words match the text they came from; a query with no word, or with quotes, finds nothing or
    what it says, never raises."""
    import unicodedata

    from think_nb.session.search import search_messages
    from think_nb.store import MessageStore, open_database

    path = tmp_path / "u.sqlite"
    nfd = unicodedata.normalize("NFD", "a naïve approach")
    texts = [nfd, "I love 🦊 foxes", 'she said "red fox" twice']
    MessageStore(open_database(path), "A:x").extend(
        [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": t}]} for i, t in enumerate(texts)], None)
    db = open_database(path)
    ids = lambda query: [h["id"] for h in search_messages(db, ["A:x"], query)]  # noqa: E731
    assert ids(nfd) == ["m0"] and ids("naïve approach") == ["m0"]
    assert ids("love 🦊 foxes") == ["m1"]
    assert ids('"red fox" twice') == ["m2"] and ids('said "red') == ["m2"]
    assert ids("") == [] and ids("!!!") == [] and ids('"') == []


async def test_history_search_tool_searches_every_session() -> None:
    script = S([])
    agent = make(script, lambda self, s: s.with_searchable_history())
    await converse(agent, script, [("My dog is called Rex", "Nice name.")])
    agent.create_session("second")
    script.steps += [[S.tool_call("session_search", {"query": "dog called"})], [S.text("Rex.")]]
    await agent.send("What is my dog called?")
    output = next(p for p in agent.messages[1]["parts"] if p["type"] == "tool-session_search")["output"]
    assert output.startswith("[ user msg_") or "My dog is called Rex" in output
    assert "My dog is called Rex" in output and "What is my dog called?" in output


# -- compaction -----------------------------------------------------------------------------
PAIRS = [(f"Question {n} about topic {n}", f"Answer {n}: details on topic {n}.") for n in range(6)]


def small_tail(self, session):
    from think_nb.session import create_compact_function

    return session.on_compaction(create_compact_function(tail_token_budget=30))


async def test_compaction_summarises_with_the_agents_model_keeps_originals_and_overlays_on_read() -> None:
    script = S([])
    agent = make(script, small_tail)
    await converse(agent, script, PAIRS)
    originals = agent.get_messages()
    script.steps.append([S.text("## Topic\nTopics 0-3.")])
    result = await agent.compact()
    # the summariser got the middle (after the 3-message head, before the tail) in the structured prompt
    summary_request = script.requests[-1]["messages"]
    assert summary_request[0]["role"] == "system"
    prompt = summary_request[1]["content"]
    assert prompt.startswith("Summarise the conversation below.") and "## Open Items" in prompt
    assert "USER: Question 2 about topic 2" in prompt and "Question 0" not in prompt
    assert result == {"overlay_id": 1, "summary": "## Topic\nTopics 0-3.", "from_message_id": originals[3]["id"],
                      "to_message_id": IsStr(regex="msg_.*"),
                      "tokens_before": result["tokens_before"], "tokens_after": result["tokens_after"]}
    assert result["tokens_after"] < result["tokens_before"]
    # originals intact
    assert agent.messages == originals and type(agent)("m").messages == originals
    # overlay applied when the history is read: head, synthetic summary, tail
    history = agent.session.history()
    end = [m["id"] for m in originals].index(result["to_message_id"])
    summary = {"id": "compaction_1", "role": "assistant", "parts": [{"type": "text", "text": "## Topic\nTopics 0-3."}]}
    assert history == [*originals[:3], summary, *originals[end + 1:]]
    assert len(originals) - end - 1 >= 2
    # and the next turn's model request carries it
    script.steps.append([S.text("ok")])
    await agent.send("next")
    sent = [text_of(m) for m in script.requests[-1]["messages"][1:]]
    assert sent == [text_of_ui(m) for m in history] + ["next"]


def text_of_ui(message: dict) -> str:
    return "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text")


async def test_second_compaction_extends_the_first_with_an_iterative_prompt() -> None:
    script = S([])
    agent = make(script, lambda self, s: s.on_compaction(
        __import__("think_nb.session", fromlist=["x"]).create_compact_function(protect_head=1, tail_token_budget=10)))
    await converse(agent, script, PAIRS[:4])
    script.steps.append([S.text("first summary")])
    first = await agent.compact()
    await converse(agent, script, PAIRS[4:])
    script.steps.append([S.text("second summary")])
    second = await agent.compact()
    assert "Update the previous summary" in script.requests[-1]["messages"][1]["content"]
    assert "first summary" in script.requests[-1]["messages"][1]["content"]
    assert second["from_message_id"] == first["from_message_id"]
    history = agent.session.history()
    assert [m["id"] for m in history][:2] == [agent.messages[0]["id"], "compaction_2"]
    assert sum(1 for m in history if m["id"].startswith("compaction_")) == 1


async def test_automatic_compaction_past_the_threshold_before_the_turn() -> None:
    from think_nb.session import create_compact_function

    async def summarize(prompt: str) -> str:
        return "auto summary"

    script = S([])
    agent = make(script, lambda self, s: s.compact_after(60).on_compaction(
        create_compact_function(summarize, tail_token_budget=20)))
    await converse(agent, script, PAIRS[:1])
    assert agent.session.overlays() == []
    await converse(agent, script, PAIRS[1:4])
    overlays = agent.session.overlays()
    assert overlays and overlays[-1].summary == "auto summary"
    # the last turn's request was made with the overlay applied, under the threshold
    sent = [text_of(m) for m in script.requests[-1]["messages"][1:]]
    assert "auto summary" in sent and "Question 0 about topic 0" in sent and "Answer 1: details on topic 1." not in sent
    assert agent.session.status()["tokenThreshold"] == 60


async def test_the_synthetic_summary_echoed_back_is_never_persisted() -> None:
    """cloudflare/agents#1984: a client echoing `compaction_<id>` must not create a real row."""
    script = S([])
    agent = make(script, small_tail)
    await converse(agent, script, PAIRS)
    script.steps.append([S.text("summary")])
    await agent.compact()
    synthetic = agent.session.history()[3]
    # the panel sends its transcript (with the synthetic message) plus a new user message
    from think_nb.panel.widget import ChatPanel  # noqa: F401 - the real frame path

    script.steps.append([S.text("reply one")])
    await agent.save_messages([synthetic, user_message("more")])
    script.steps.append([S.text("reply two")])
    await agent.save_messages([synthetic])
    rows = runtime_of(agent).store.db.read("SELECT id FROM think_messages WHERE id LIKE 'compaction_%'")
    assert rows == []
    assert [m["id"] for m in type(agent)("m").messages if m["id"].startswith("compaction_")] == []
    assert sum(1 for m in agent.session.history() if m["id"].startswith("compaction_")) == 1
    assert type(agent)("m").messages[-1]["parts"][-1]["text"] == "reply two"


# -- skills ---------------------------------------------------------------------------------
async def test_skills_catalogue_activation_and_resources(tmp_path) -> None:
    folder = tmp_path / "skills" / "csv-cleaning"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: csv-cleaning\ndescription: Clean messy CSV files.\n---\n"
                                     "Use pandas.read_csv(on_bad_lines='skip').\n")
    (folder / "example.py").write_text("import pandas as pd\n")
    script = S([[S.tool_call("activate_skill", {"name": "csv-cleaning"})],
                [S.tool_call("read_skill_resource", {"path": "example.py"}),
                 S.tool_call("activate_skill", {"name": "nope"})],
                [S.text("done")]])
    agent = make(script, get_skills=lambda self: [SkillDirectory(tmp_path / "skills"),
                                                  Skill("csv-cleaning", "shadowed", "x"),
                                                  Skill("sql", "SQL tips", "y")])
    await agent.send("clean my csv")
    system = script.requests[0]["messages"][0]["content"]
    assert system.endswith("SKILLS (Skills you can activate) [readonly]\n" + "═" * 46 + "\n"
                           "Available skills. When a task matches a skill, use activate_skill with its name before "
                           "proceeding.\n- csv-cleaning: Clean messy CSV files.\n- sql: SQL tips")
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["activate_skill", "read_skill_resource"]
    outputs = [p.get("output") for p in agent.messages[1]["parts"] if p["type"].startswith("tool-")]
    assert outputs == [("# Skill: csv-cleaning\n\nUse pandas.read_csv(on_bad_lines='skip').\n\n"
                        "Resources (read_skill_resource):\n- example.py"),
                       "import pandas as pd\n", "Error: no skill named 'nope'. Available: csv-cleaning, sql."]


# -- sessions -------------------------------------------------------------------------------
async def test_sessions_create_switch_rename_fork_delete() -> None:
    script = S([])
    agent = make(script, lambda self, s: s.with_context("memory"))
    await converse(agent, script, [("first question", "first answer"), ("second question", "second answer")])
    default_messages = agent.get_messages()
    await agent.session.set_block("memory", "shared memory")

    work = agent.create_session("work")
    assert agent.session_id == work and agent.messages == []
    await converse(agent, script, [("work question", "work answer")])
    assert script.requests[-1]["messages"][1:] == [{"role": "user", "content": "work question"}]
    assert "shared memory" in script.requests[-1]["messages"][0]["content"]  # blocks are per agent

    agent.switch_session("default")
    assert agent.messages == default_messages
    reopened = type(agent)("m")  # the active session survives a new agent object
    assert reopened.session_id == ""

    fork = agent.fork_session(default_messages[1]["id"], "fork")
    agent.switch_session("fork")
    assert [text_of_ui(m) for m in agent.messages] == ["first question", "first answer"]
    assert {m["id"] for m in agent.messages}.isdisjoint({m["id"] for m in default_messages})
    assert type(agent)("m").session_id == fork

    agent.rename_session("work", "job")
    df = agent.sessions()
    assert list(df.columns) == ["id", "name", "active", "messages", "parent_session_id", "forked_from_message_id",
                                "created_at", "updated_at"]
    columns = ["id", "name", "active", "messages", "parent_session_id", "forked_from_message_id"]
    assert df[columns].to_dict("records") == [
        {"id": "default", "name": "default", "active": False, "messages": 4, "parent_session_id": None,
         "forked_from_message_id": None},
        {"id": work, "name": "job", "active": False, "messages": 2, "parent_session_id": None,
         "forked_from_message_id": None},
        {"id": fork, "name": "fork", "active": True, "messages": 2, "parent_session_id": "default",
         "forked_from_message_id": default_messages[1]["id"]}]
    assert agent.list_sessions()[0]["id"] == ""  # the stored id; the DataFrame names it (issue 27 §9)

    agent.delete_session("fork")
    assert agent.session_id == "" and agent.messages == default_messages
    assert agent.sessions()["name"].tolist() == ["default", "job"]
    with pytest.raises(UserError, match="cannot be deleted"):
        agent.delete_session("default")
    with pytest.raises(UserError, match="No session 'nope'"):
        agent.switch_session("nope")
    assert [h["session"] for h in agent.session.search("work question", all_sessions=True)] == [work]
    assert agent.session.search("work question") == []


# -- DataFrames -------------------------------------------------------------------------------
@pytest.fixture
def add_tool():
    from think_nb import tool

    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return add


async def test_messages_tool_calls_and_usage_dataframes(add_tool) -> None:
    script = S([[S.tool_call("add", {"a": 2, "b": 40}), S.usage(10, 5)], [S.text("42."), S.usage(20, 3)]])
    agent = make(script, get_tools=lambda self: [add_tool])
    await agent.send("2+40?")
    user, reply = agent.messages
    m = agent.messages_df()
    assert list(m.columns) == ["id", "parent_id", "role", "text", "parts", "tool_calls", "created_at", "model",
                               "total_tokens"]
    records = m.drop(columns=["created_at"]).to_dict("records")
    assert records[0] == {"id": user["id"], "parent_id": None, "role": "user", "text": "2+40?", "parts": 1,
                          "tool_calls": 0, "model": None, "total_tokens": None}
    assert records[1] == {"id": reply["id"], "parent_id": user["id"], "role": "assistant", "text": "42.", "parts": 4,
                          "tool_calls": 1, "model": script.model, "total_tokens": 38}
    assert str(m["created_at"].dtype) == "datetime64[ns, UTC]"
    t = agent.tool_calls_df()
    assert t.to_dict("records") == [{"message_id": reply["id"], "tool_call_id": "call_1_0", "tool_name": "add",
                                     "state": "output-available", "input": {"a": 2, "b": 40}, "output": 42.0,
                                     "error_text": None, "edited": False, "code": None, "duration_ms": None,
                                     "changed": None, "undone": None}]
    u = agent.usage_df()
    assert u.drop(columns=["created_at", "cost_usd"]).to_dict("records") == [
        {"message_id": reply["id"], "request_id": IsStr(regex="req_.*"), "model": script.model, "prompt_tokens": 30,
         "completion_tokens": 8, "total_tokens": 38, "usage_source": "reported", "estimated_tokens": None}]
    assert u["cost_usd"].isna().all()  # the scripted model has no price: unknown, not 0


async def test_tool_calls_dataframe_keeps_a_failed_calls_output_as_none(add_tool) -> None:
    """A number next to a failed call's missing output stays a number and None (pandas would
    make the column float64 with NaN)."""
    script = S([[S.tool_call("add", {"a": 2, "b": 40}), S.tool_call("add", {"a": 1})], [S.text("done")]])
    agent = make(script, get_tools=lambda self: [add_tool])
    await agent.send("two sums")
    t = agent.tool_calls_df()
    assert t["state"].tolist() == ["output-available", "output-error"]
    assert t["output"].tolist() == [42.0, None] and t["output"].dtype == object


def test_empty_agent_dataframes_keep_their_columns() -> None:
    agent = make(S([]))
    for df, n in ((agent.messages_df(), 9), (agent.tool_calls_df(), 12), (agent.usage_df(), 10),
                  (agent.context_blocks(), 8)):
        assert len(df) == 0 and len(df.columns) == n


async def test_compaction_covers_whole_exchanges_so_roles_still_alternate() -> None:
    from think_nb.session.compaction import CompactionContext, create_compact_function

    async def summarize(prompt: str) -> str:
        return "summary"

    history = []
    for n in range(8):
        history += [{"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": f"question {n} " * 30}]},
                    {"id": f"a{n}", "role": "assistant", "parts": [{"type": "text", "text": f"answer {n} " * 30}]}]
    compact = create_compact_function(summarize, protect_head=3, tail_token_budget=200, min_tail_messages=1)
    result = await compact(history, CompactionContext(None, lambda text: len(text.split()), summarize))
    assert result["from_message_id"] == "a1"  # head u0 a0 u1 ends with a user message
    start = next(n for n, m in enumerate(history) if m["id"] == result["to_message_id"]) + 1
    assert history[start]["role"] == "user" and result["to_message_id"].startswith("a")


def test_echoed_synthetic_messages_are_dropped_from_the_history_wherever_they_are() -> None:
    """`apply_overlays` drops `compaction_*` messages at any position (its fast path only decides
    "none"), and copes with ids that are not strings or missing."""
    from think_nb.session.compaction import apply_overlays

    def m(id: object) -> dict:
        return {"role": "user", "parts": []} if id is None else {"id": id, "role": "user", "parts": []}

    cases = [[], [m("a"), m("b")], [m("compaction_1")], [m("a"), m("compaction_1"), m("b")],
             [m("a"), m("x\ncompaction_y"), m("compaction_2")], [m(7), m("compaction_3")], [m(None), m("b")],
             [m("xcompaction_1")]]
    for messages in cases:
        kept = apply_overlays(messages, [])
        assert kept == [x for x in messages if not str(x.get("id", "")).startswith("compaction_")]
        assert kept is not messages


async def test_a_compacted_history_still_reuses_its_converted_prefix() -> None:
    """The synthetic summary message is the same dict on every turn (an unchanged overlay row
    gives the same `Overlay`), so a compacted conversation's requests reuse their converted prefix
    (per-turn cost flat with history) and still equal a fresh conversion."""
    from think_nb.messages import convert

    script = S([])
    agent = make(script, small_tail)
    await converse(agent, script, PAIRS)
    script.steps.append([S.text("summary")])
    await agent.compact()
    await converse(agent, script, [("one more", "ok"), ("and another", "fine")])
    history = agent.session.history()
    synthetic = next(n for n, m in enumerate(history) if m["id"].startswith("compaction_"))
    assert agent.session.history()[synthetic] is history[synthetic]  # the same dict, read again
    reused = convert._known_prefix(history, [])
    assert reused >= len(history) - 2  # all but the newest turn's messages (which the next request adds)
    assert convert.to_model_messages(history, stored=True) == convert.to_model_messages(history)


def test_compacting_on_an_in_process_model_never_imports_litellm(tmp_path: Path) -> None:
    """A scripted (or embedded) agent's compaction summary goes through the model seam, in process: it
    imported litellm on the kernel's event loop (4-7 s, 40-60 s on a loaded machine; the memory
    notebook's compaction cell froze every panel meanwhile). In a fresh process, since this one may
    have imported litellm already."""
    script = """
import asyncio, sys
from think_nb import Think
from think_nb.session.compaction import SUMMARY_SYSTEM
from think_nb.testing import FunctionModel

def answer(messages, info):
    summarising = messages[0]["content"] == SUMMARY_SYSTEM
    return "## Topic\\nGreetings." if summarising else "A reply of a few words " * 5

model = FunctionModel(answer)

class A(Think):
    include_workspace_tools = False
    def get_model(self):
        return model.model
    def configure_session(self, session):
        return session.compact_after(60, token_counter=lambda text: len(text.split()))

async def main():
    agent = A("a", db=sys.argv[1])
    for question in ["Hi", "Hello?", "Still there?", "And now?"]:
        await agent.send(question)
    await agent.compact()
    print([o.summary for o in agent.session.overlays()], "litellm" in sys.modules)

asyncio.run(main())
"""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "THINK_NB_ALLOW_MODEL_REQUESTS": "0"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "a.sqlite")], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "False", done.stdout  # summarised, and litellm never imported
    assert "Greetings" in done.stdout, done.stdout
