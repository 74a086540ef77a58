"""Think's one-time warning when `getSystemPrompt` is overridden and `getSkills()` returns skills
(`_initializeSkills`): the skills catalogue is a context block, so the system prompt is built from
the blocks and the overridden prompt is only a fallback; the warning says so, once per class."""

from __future__ import annotations

import warnings

import pytest

from think_nb import Think
from think_nb.session import Skill
from think_nb.session.skills import SkillsPromptWarning
from think_nb.testing import ScriptedModel as S


def agent_of(name: str, **attrs: object) -> tuple[Think, S]:
    script = S([[S.text("ok")], [S.text("ok")]])
    cls = type(name, (Think,), {"get_model": lambda self: script.model, "include_workspace_tools": False, **attrs})
    return cls("w"), script


def pirate(self: Think) -> str:
    return "You are a pirate."


def skills(self: Think) -> list[Skill]:
    return [Skill("sql", "SQL tips", "Use CTEs.")]


async def test_an_overridden_prompt_with_skills_warns_once_that_it_is_a_fallback() -> None:
    """think-session.test.ts, Context blocks: "skills warning when getSystemPrompt overridden"."""
    agent, script = agent_of("PirateWithSkills", get_system_prompt=pirate, get_skills=skills)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        await agent.send("hi")
        await agent.send("again")
        again, _ = agent_of("PirateWithSkills", get_system_prompt=pirate, get_skills=skills)
        await again.send("a second agent of the class")
    ours = [w for w in caught if issubclass(w.category, SkillsPromptWarning)]
    assert [str(w.message) for w in ours] == [
        ("PirateWithSkills.get_system_prompt() is now a fallback only: get_skills() returned skills, so the system "
         "prompt is built from context blocks (the skills catalogue is one); put your prompt in a context block "
         "(configure_session: session.with_context(...)) to keep it.")]
    system = script.requests[0]["messages"][0]["content"]
    assert "Available skills." in system and "pirate" not in system  # what the warning says is true


@pytest.mark.parametrize("attrs", [{"get_system_prompt": pirate}, {"get_skills": skills}, {}],
                         ids=["prompt-only", "skills-only", "neither"])
async def test_no_warning_without_both(attrs: dict) -> None:
    agent, script = agent_of("Plain" + "".join(attrs), **attrs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkillsPromptWarning)
        assert (await agent.send("hi")).status == "completed"
    if "get_skills" not in attrs and "get_system_prompt" in attrs:
        assert script.requests[0]["messages"][0]["content"].startswith("You are a pirate.")
