"""Skills (Think's Agent Skills): instructions the model activates when a task needs them.

`Think.get_skills()` returns sources; each source lists skills. A skill has a name, a one-line
description and instructions, plus optional resource files. The catalogue (names and
descriptions) is a read-only context block `skills` in the system prompt:

    Available skills. When a task matches a skill, use activate_skill with its name before proceeding.
    - csv-cleaning: Clean messy CSV files with pandas.

and the model reads a skill through two tools (Think's names and inputs):
`activate_skill {name}` returns the instructions and the list of resources;
`read_skill_resource {name?, path}` returns one resource file (default skill: the last
activated). The first source that registers a name wins. Errors come back as `Error: …` text.

Sources: `SkillDirectory(path)` (every sub-folder holding a `SKILL.md` with a front matter
`name:` / `description:` block, the Agent Skills layout), or a list of `Skill` objects.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from think_nb.errors import UserError
from think_nb.tools.tool import Tool

CATALOG_LABEL = "skills"
CATALOG_INTRO = "Available skills. When a task matches a skill, use activate_skill with its name before proceeding."


class SkillsPromptWarning(UserWarning):
    """`get_system_prompt()` is overridden while `get_skills()` returns skills: the skills catalogue
    is a context block, so the system prompt is built from the blocks and `get_system_prompt()` is
    used only when no block has content (Think's one-time warning in `_initializeSkills`)."""


def warn_prompt_is_fallback(agent_class: str) -> None:
    """Warn once per agent class (Python's default warning filter: once per message) that its
    `get_system_prompt()` became fallback-only because `get_skills()` returned skills."""
    warnings.warn(f"{agent_class}.get_system_prompt() is now a fallback only: get_skills() returned skills, so the "
                  "system prompt is built from context blocks (the skills catalogue is one); put your prompt in a "
                  "context block (configure_session: session.with_context(...)) to keep it.",
                  SkillsPromptWarning, stacklevel=2)


@dataclass
class Skill:
    """One skill.

    Attributes:
        name: unique name the model activates it by.
        description: one line shown in the catalogue.
        instructions: the text `activate_skill` returns.
        resources: relative path -> text (files `read_skill_resource` may read).
    """

    name: str
    description: str
    instructions: str
    resources: dict[str, str] = field(default_factory=dict)


class SkillDirectory:
    """Skills from a folder: `<path>/<skill>/SKILL.md` plus any other files as resources.

    `SKILL.md` starts with a front matter block (`---`, `name: ...`, `description: ...`, `---`);
    the rest is the instructions. Without `name`, the folder name is used. Resource files are
    read when listed (text, UTF-8); files over 256 KiB are skipped.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def skills(self) -> list[Skill]:
        out = []
        for skill_md in sorted(self.path.glob("*/SKILL.md")):
            meta, body = _front_matter(skill_md.read_text(encoding="utf-8"))
            folder = skill_md.parent
            resources = {str(f.relative_to(folder)): f.read_text(encoding="utf-8", errors="replace")
                         for f in sorted(folder.rglob("*"))
                         if f.is_file() and f != skill_md and f.stat().st_size <= 256 * 1024}
            out.append(Skill(meta.get("name") or folder.name, meta.get("description", ""), body.strip(), resources))
        return out


def collect(sources: Any) -> dict[str, Skill]:
    """`{name: Skill}` from `get_skills()`'s sources, first registration of a name winning."""
    registry: dict[str, Skill] = {}
    if sources is not None and (isinstance(sources, (str, bytes)) or not isinstance(sources, (list, tuple))):
        raise UserError(f"get_skills() returned {sources!r:.60}; return a list of SkillDirectory(path) or Skill(...).")
    for source in sources or []:
        items = source.skills() if hasattr(source, "skills") else [source]
        for skill in items:
            if not isinstance(skill, Skill):
                raise UserError(f"get_skills() returned {skill!r}; return SkillDirectory(path) or Skill(...) objects.")
            registry.setdefault(skill.name, skill)
    return registry


def catalog(skills: dict[str, Skill]) -> str:
    """The catalogue block's content."""
    return "\n".join([CATALOG_INTRO, *(f"- {s.name}: {s.description}" for s in skills.values())])


def skill_tools(skills: dict[str, Skill], state: dict) -> dict[str, Tool]:
    """`activate_skill` and `read_skill_resource` over `skills`; `state["active"]` records the
    last activated skill."""
    names = list(skills)

    async def activate_skill(name: str) -> str:
        skill = skills.get(name)
        if skill is None:
            return f"Error: no skill named {name!r}. Available: {', '.join(names)}."
        state["active"] = name
        state.setdefault("activated", []).append(name)
        listing = "\n".join(f"- {p}" for p in skill.resources) or "(none)"
        return f"# Skill: {skill.name}\n\n{skill.instructions}\n\nResources (read_skill_resource):\n{listing}"

    async def read_skill_resource(path: str, name: str | None = None) -> str:
        skill = skills.get(name or state.get("active") or "")
        if skill is None:
            return "Error: activate a skill first (activate_skill), or pass its name."
        if path not in skill.resources:
            return f"Error: skill {skill.name!r} has no resource {path!r}. Resources: {', '.join(skill.resources)}."
        return skill.resources[path]

    return {
        "activate_skill": Tool("activate_skill", "Activate a skill from the skills catalogue and read its "
                               "instructions. Use it before working on a task the skill matches.",
                               {"type": "object", "properties": {"name": {"type": "string", "enum": names}},
                                "required": ["name"]}, activate_skill),
        "read_skill_resource": Tool("read_skill_resource", "Read a resource file of a skill (default: the "
                                    "skill activated last).",
                                    {"type": "object", "properties": {
                                        "name": {"type": "string", "enum": names},
                                        "path": {"type": "string", "description": "Resource path, as listed."}},
                                     "required": ["path"]}, read_skill_resource),
    }


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    if not text.startswith("---"):
        return {}, text
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        return {}, text
    meta = {}
    for line in head.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            meta[key.strip()] = value.strip().strip("'\"")
    return meta, body.lstrip("-").lstrip("\n")
