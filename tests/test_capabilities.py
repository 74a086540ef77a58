"""The capability block on the default system prompt (Think's `_systemPromptForTurn` /
`_buildThinkCapabilityBlock`; anchor §1.A "System-prompt assembly", §4.1, §4.2), ported from
Think's hooks.test.ts ("beforeTurn ... system prompt and tools", "still sees original system
prompt when override is set") and fetch-tools.test.ts ("advertises it in the capability prompt")."""

from agents import add, mul, scripted_agent
from think_nb import LOCAL_MODEL, TurnConfig
from think_nb.testing import ScriptedModel as S
from think_nb.turns.capabilities import DEFAULT_SYSTEM_PROMPT, MARKER, capability_block, system_for_turn
from think_nb.workspace.execute import execute_tool
from think_nb.workspace.fetch import fetch_tool

ANY_TOOLS = ("- Use the tools exposed in this turn when they materially improve accuracy or let you act on the "
             "user's request. Treat tool descriptions and schemas as the source of truth.")
WORKSPACE = "- You can inspect and edit the agent workspace using the available file tools."
NO_CLAIMS = "- Do not claim access to capabilities that are not exposed as tools in this turn."


def sent_system(script: S, n: int = 0) -> str:
    message = script.requests[n]["messages"][0]
    assert message["role"] == "system"
    return message["content"]


async def test_before_turn_sees_the_default_prompt_with_the_block_naming_the_workspace() -> None:
    seen = []
    script = S([[S.text("hi")]])
    agent = scripted_agent(script, include_workspace_tools=True,
                           before_turn=lambda self, ctx: seen.append((ctx.system, sorted(ctx.tools))))
    await agent.send("Hello")
    system, tools = seen[0]
    assert system.startswith(DEFAULT_SYSTEM_PROMPT + "\n\n" + MARKER + "\n\nCapabilities available in this turn:\n")
    assert "agent workspace" in system and system.endswith(NO_CLAIMS)
    assert {"read", "write"} <= set(tools)
    assert sent_system(script) == system


async def test_a_before_turn_system_replaces_the_prompt_and_the_hook_still_saw_the_block() -> None:
    seen = []
    script = S([[S.text("Arr.")]])

    def before_turn(self, ctx):
        seen.append(ctx.system)
        return TurnConfig(system="You are a pirate.")

    await scripted_agent(script, before_turn=before_turn).send("With override")
    assert MARKER in seen[0] and seen[0].startswith(DEFAULT_SYSTEM_PROMPT)
    assert sent_system(script) == "You are a pirate."


async def test_the_fetch_and_execute_tools_are_advertised_when_offered() -> None:
    script = S([[S.text("ok")]])
    await scripted_agent(script, [add, fetch_tool(allowed_hosts=["example.com"]), execute_tool(tools=[mul])]).send("go")
    system = sent_system(script)
    assert "fetch tools are available" in system
    assert "sandboxed execution is available" in system
    assert WORKSPACE not in system


async def test_the_block_names_the_tools_the_turn_offers_after_before_turn() -> None:
    """Think recomputes the block over the tools plus config.tools when the hook set no system; here
    `active_tools` narrows it too (the tools the request really carries)."""
    script = S([[S.text("ok")]])
    seen = []

    def before_turn(self, ctx):
        seen.append(ctx.system)
        return TurnConfig(tools=[fetch_tool(allowed_hosts=["example.com"])], active_tools=["fetch"])

    await scripted_agent(script, [add, mul], include_workspace_tools=True, before_turn=before_turn).send("go")
    assert WORKSPACE in seen[0] and "fetch tools" not in seen[0]
    system = sent_system(script)
    assert "fetch tools are available" in system and WORKSPACE not in system
    assert [t["function"]["name"] for t in script.requests[0]["tools"]] == ["fetch"]


async def test_a_hosted_model_without_tools_is_told_to_claim_none() -> None:
    script = S([[S.text("ok")]])
    await scripted_agent(script, []).send("hi")
    assert sent_system(script) == "\n".join([DEFAULT_SYSTEM_PROMPT, "", MARKER, "",
                                            "Capabilities available in this turn:", NO_CLAIMS])


async def test_a_prompt_of_yours_is_sent_as_written() -> None:
    script = S([[S.text("ok")]])
    await scripted_agent(script, include_workspace_tools=True,
                         get_system_prompt=lambda self: "You are terse.").send("hi")
    assert sent_system(script) == "You are terse."


def test_the_embedded_model_gets_no_block_with_or_without_tools() -> None:
    assert system_for_turn(DEFAULT_SYSTEM_PROMPT, [], LOCAL_MODEL) == DEFAULT_SYSTEM_PROMPT
    assert system_for_turn(DEFAULT_SYSTEM_PROMPT, ["add"], LOCAL_MODEL) == DEFAULT_SYSTEM_PROMPT


def test_a_prompt_holding_the_marker_gets_no_second_block() -> None:
    once = system_for_turn(DEFAULT_SYSTEM_PROMPT, ["read"], "openai/gpt-4o-mini")
    assert system_for_turn(once, ["read"], "openai/gpt-4o-mini") == once
    assert once.count(MARKER) == 1


def test_each_capability_line_follows_the_tool_names_in_thinks_order() -> None:
    block = capability_block(["read", "load_context", "list_extensions", "execute", "fetch_docs"])
    assert block.splitlines() == [
        MARKER, "", "Capabilities available in this turn:", WORKSPACE, ANY_TOOLS,
        ("- Some tools may call server code, browser/client code, MCP servers, extensions, or delegated agents. "
         "Use them according to their descriptions."),
        ("- If context-loading tools are available, use them to load relevant memory, skills, or project context "
         "before acting on incomplete information."),
        ("- If extension tools are available, use them only when loading or inspecting extensions directly helps "
         "with the task."),
        ("- If sandboxed execution is available, prefer it for safe, bounded checks or coordinated multi-step "
         "operations."),
        ("- If fetch tools are available, use them to read allowlisted HTTP resources (documentation, APIs). They "
         "are read-only and bounded; respect their allowlist and do not assume access to other URLs."),
        NO_CLAIMS]
    assert capability_block(["add"]).splitlines()[3:] == [ANY_TOOLS, block.splitlines()[5], NO_CLAIMS]
