"""Context blocks, the prompt built from them and the memory tools (think_nb.session), through
real turns on scripted models: what the model received is asserted from `ScriptedModel.requests`."""

from __future__ import annotations

from typing import ClassVar

from dirty_equals import IsStr

from think_nb import Think
from think_nb.session.blocks import RULE
from think_nb.testing import ScriptedModel

S = ScriptedModel


class ReadOnly:
    def __init__(self, text: str) -> None:
        self.text = text

    def get(self) -> str:
        return self.text


class AsyncWritable:
    def __init__(self) -> None:
        self.value = "initial"

    async def get(self) -> str:
        return self.value

    async def set(self, content: str) -> None:
        self.value = content


class Catalog:
    """A skill provider: catalogue plus load(key)."""

    docs: ClassVar[dict[str, str]] = {"pandas": "Use df.groupby(...).agg(...).", "sql": "Prefer window functions."}

    def get(self) -> str:
        return "\n".join(f"- {k}" for k in self.docs)

    def load(self, key: str) -> str | None:
        return self.docs.get(key)


class Finder:
    """A search provider."""

    def search(self, query: str) -> list[tuple[str, str]]:
        return [("capital-fr", "Paris is the capital of France.")] if "france" in query.lower() else []


def make(script: ScriptedModel, configure, **attrs) -> Think:
    attrs.setdefault("include_workspace_tools", False)  # these tests see exactly the session's tools
    cls = type("Mem", (Think,), {"get_model": lambda self: script.model, "configure_session": configure, **attrs})
    return cls("m")


def system_of(request: dict) -> str:
    assert request["messages"][0]["role"] == "system"
    return request["messages"][0]["content"]


def tool_output(agent: Think, name: str, n: int = 0) -> object:
    parts = [p for m in agent.messages for p in m["parts"] if p["type"] == f"tool-{name}"]
    part = parts[n]
    return part["output"] if part["state"] == "output-available" else f"{part['state']}: {part['errorText']}"


async def test_prompt_is_rendered_from_blocks_of_every_kind_instead_of_get_system_prompt() -> None:
    script = S([[S.text("ok")]])
    catalog, finder = Catalog(), Finder()
    agent = make(script, lambda self, s: s
                 .with_context("soul", provider=ReadOnly("You are a careful analyst."))
                 .with_context("empty_ro", provider=ReadOnly(""))
                 .with_context("memory", description="Facts learned.", max_tokens=100)
                 .with_context("docs", description="Loadable docs", provider=catalog)
                 .with_context("facts", provider=finder),
                 get_system_prompt=lambda self: "NOT USED")
    await agent.send("hi")
    assert system_of(script.requests[0]) == (
        f"{RULE}\nSOUL [readonly]\n{RULE}\nYou are a careful analyst.\n\n"
        f"{RULE}\nMEMORY (Facts learned.) [0% — 0/100 tokens] [writable]\n{RULE}\n\n\n"
        f"{RULE}\nDOCS (Loadable docs) [loadable]\n{RULE}\n- pandas\n- sql\n\n"
        f"{RULE}\nFACTS [searchable]\n{RULE}\n")
    tools = [t["function"]["name"] for t in script.requests[0]["tools"]]
    assert tools == ["set_context", "load_context", "unload_context", "search_context"]
    set_ctx = script.requests[0]["tools"][0]["function"]
    assert set_ctx["parameters"]["properties"]["label"]["enum"] == ["memory"]
    assert "metadata" not in set_ctx["parameters"]["properties"]
    assert "Writes persist across sessions" in set_ctx["description"]


async def test_without_blocks_the_prompt_is_get_system_prompt_and_no_session_tools() -> None:
    script = S([[S.text("ok")]])
    agent = make(script, lambda self, s: s, get_system_prompt=lambda self: "Plain prompt.")
    await agent.send("hi")
    assert system_of(script.requests[0]) == "Plain prompt."
    assert script.requests[0]["tools"] == []


async def test_set_context_replace_append_and_the_next_turn_sees_it_live() -> None:
    script = S([
        [S.tool_call("set_context", {"label": "memory", "content": "User likes tea."})],
        [S.tool_call("set_context", {"label": "memory", "content": "User is in Oslo.", "action": "append"})],
        [S.text("Noted.")],
        [S.text("Hello again.")],
    ])
    agent = make(script, lambda self, s: s.with_context("memory", description="Facts.", max_tokens=50))
    await agent.send("I like tea and live in Oslo.")
    tokens = agent.session.get_context_block("memory").tokens
    assert tool_output(agent, "set_context", 0) == "Written to memory. Usage: 8% (4/50 tokens)"
    assert tool_output(agent, "set_context", 1) == (
        f"Written to memory. Usage: {100 * tokens / 50:g}% ({tokens}/50 tokens)")
    # within the turn the prompt does not change; the next turn's prompt has the new content
    assert system_of(script.requests[2]) == system_of(script.requests[0])
    await agent.send("Hi")
    assert system_of(script.requests[3]).endswith("\nUser likes tea.\nUser is in Oslo.")
    # stored in SQLite: a new agent object (same class and name) reads it back
    again = type(agent)("m")
    assert again.session.get_context_block("memory").content == "User likes tea.\nUser is in Oslo."


async def test_set_context_over_max_tokens_fails_the_call_naming_the_limit_and_keeps_the_block() -> None:
    script = S([[S.tool_call("set_context", {"label": "memory", "content": "word " * 40})], [S.text("ok")]])
    agent = make(script, lambda self, s: s.with_context("memory", max_tokens=10))
    await agent.session.set_block("memory", "kept")
    await agent.send("remember a lot")
    assert tool_output(agent, "set_context") == IsStr(regex=r"output-error: \w+: content is \d+ tokens, which exceeds "
                                                            r"maxTokens "
                                                            r"\(10\) of block 'memory'.*")
    assert agent.session.get_context_block("memory").content == "kept"


async def test_set_context_on_a_read_only_block_is_refused_and_read_only_is_not_offered() -> None:
    script = S([[S.tool_call("set_context", {"label": "soul", "content": "Be rude."})], [S.text("ok")]])
    agent = make(script, lambda self, s: s.with_context("soul", provider=ReadOnly("Be kind."))
                 .with_context("notes"))
    await agent.send("change your soul")
    enum = script.requests[0]["tools"][0]["function"]["parameters"]["properties"]["label"]["enum"]
    assert enum == ["notes"]
    assert tool_output(agent, "set_context") == IsStr(
        regex=r"output-error: \w+: Block 'soul' is read-only \(readonly\); it cannot be written\.")
    assert agent.session.get_context_block("soul").content == "Be kind."


async def test_async_writable_provider() -> None:
    provider = AsyncWritable()
    script = S([[S.tool_call("set_context", {"label": "scratch", "content": "new"})], [S.text("ok")], [S.text("ok")]])
    agent = make(script, lambda self, s: s.with_context("scratch", provider=provider))
    await agent.send("write")
    assert provider.value == "new"
    await agent.send("again")
    assert system_of(script.requests[2]).endswith(f"SCRATCH [writable]\n{RULE}\nnew")


async def test_load_unload_and_search_context() -> None:
    script = S([
        [S.tool_call("load_context", {"label": "docs", "key": "pandas"}),
         S.tool_call("load_context", {"label": "docs", "key": "nope"}),
         S.tool_call("search_context", {"label": "facts", "query": "France capital"}),
         S.tool_call("search_context", {"label": "facts", "query": "Mars"})],
        [S.tool_call("unload_context", {"label": "docs", "key": "pandas"})],
        [S.text("done")],
        [S.text("next")],
    ])
    agent = make(script, lambda self, s: s.with_context("docs", provider=Catalog())
                                          .with_context("facts", provider=Finder()))
    await agent.send("look things up")
    assert tool_output(agent, "load_context", 1) == "Not found: nope"
    assert tool_output(agent, "search_context", 0) == "[capital-fr]\nParis is the capital of France."
    assert tool_output(agent, "search_context", 1) == "No results found."
    assert tool_output(agent, "unload_context") == 'Unloaded "pandas" from docs.'
    # the model saw the loaded content in step 2, and only the unload marker from then on
    tool_messages = [m["content"] for m in script.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0] == "Use df.groupby(...).agg(...)."
    await agent.send("next")
    tool_messages = [m["content"] for m in script.requests[3]["messages"] if m["role"] == "tool"]
    assert tool_messages[0] == "[skill unloaded: pandas]"
    assert tool_output(agent, "load_context", 0) == "[skill unloaded: pandas]"
    # stored, too
    assert type(agent)("m").messages[1]["parts"][1]["output"] == "[skill unloaded: pandas]"


async def test_sqlite_search_provider_and_keyed_set_context() -> None:
    script = S([
        [S.tool_call("set_context", {"label": "notes", "content": "The deploy key rotates every 90 days.",
                                     "metadata": {"title": "Deploy Key"}})],
        [S.tool_call("search_context", {"label": "notes", "query": "deploy rotates"})],
        [S.text("ok")],
    ])
    agent = make(script, lambda self, s: s.with_context("notes", provider=s.searchable("notes")))
    await agent.send("remember and search")
    assert tool_output(agent, "set_context") == 'Indexed "deploy-key" in notes.'
    assert tool_output(agent, "search_context") == "[deploy-key]\nThe deploy key rotates every 90 days."
    assert "metadata" in script.requests[0]["tools"][0]["function"]["parameters"]["properties"]


async def test_frozen_prompt_setting_mirrors_think_and_cached_prompt_survives_a_new_agent() -> None:
    script = S([[S.tool_call("set_context", {"label": "memory", "content": "fact"})], [S.text("ok")],
                [S.text("ok")], [S.text("ok")]])
    agent = make(script, lambda self, s: s.with_context("memory").with_cached_prompt())
    await agent.send("one")
    await agent.send("two")
    assert system_of(script.requests[2]) == system_of(script.requests[0])  # frozen: write not visible yet
    assert "fact" not in system_of(script.requests[2])
    again = type(agent)("m")  # new object: the persisted snapshot is returned verbatim
    await again.send("three")
    assert system_of(script.requests[3]) == system_of(script.requests[0])
    again.session.refresh_system_prompt()
    assert (await again.session.system_prompt()).endswith("\nfact")


async def test_dynamic_add_and_remove_context() -> None:
    script = S([[S.text("ok")]])
    agent = make(script, lambda self, s: s)
    agent.session.add_context("todo", description="Open tasks")
    await agent.session.set_block("todo", "- write tests")
    await agent.send("hi")
    assert "TODO (Open tasks) [writable]" in system_of(script.requests[0])
    agent.session.remove_context("todo")
    assert agent.session.blocks() == []


def test_context_blocks_dataframe_columns_and_values() -> None:
    agent = make(S([]), lambda self, s: s.with_context("soul", provider=ReadOnly("Be kind."))
                 .with_context("memory", description="Facts.", max_tokens=200))
    import asyncio

    asyncio.run(agent.session.set_block("memory", "The user is called Ada."))
    df = agent.context_blocks()
    assert list(df.columns) == ["label", "description", "kind", "writable", "tokens", "max_tokens", "percent_used",
                                "content"]
    rows = df.to_dict("records")
    assert rows[0]["label"] == "soul" and rows[0]["kind"] == "readonly" and not rows[0]["writable"]
    assert __import__("pandas").isna(rows[0]["max_tokens"]) and __import__("pandas").isna(rows[0]["percent_used"])
    assert {k: rows[1][k] for k in ("label", "description", "kind", "writable", "tokens", "max_tokens",
                                    "percent_used", "content")} == {
        "label": "memory", "description": "Facts.", "kind": "writable", "writable": True, "tokens": 6,
        "max_tokens": 200, "percent_used": 3.0, "content": "The user is called Ada."}


async def test_unload_reaches_the_model_when_the_load_is_turns_old() -> None:
    """The loading message was converted for the model by the turns since (that conversion is
    remembered); the unload replaces the stored message, so the next request has the marker."""
    script = S([
        [S.tool_call("load_context", {"label": "docs", "key": "pandas"})], [S.text("loaded")],
        [S.text("still here")],
        [S.tool_call("unload_context", {"label": "docs", "key": "pandas"})], [S.text("unloaded")],
        [S.text("next")],
    ])
    agent = make(script, lambda self, s: s.with_context("docs", provider=Catalog()))
    for text in ("load pandas", "and?", "unload it", "go on"):
        assert (await agent.send(text)).status == "completed"
    tool_messages = [m["content"] for m in script.requests[2]["messages"] if m["role"] == "tool"]
    assert tool_messages == ["Use df.groupby(...).agg(...)."]  # turn 2 read the loaded content
    tool_messages = [m["content"] for m in script.requests[5]["messages"] if m["role"] == "tool"]
    assert tool_messages[0] == "[skill unloaded: pandas]"
