"""Skills (Agent Skills, as tiny-harness's plugins bring them): progressive disclosure — an
index of names and descriptions in the prompt's prefix, bodies and resources through the skill
tools (``list_skills``, ``load_skill``, ``unload_skill``, ``list_skill_resources``,
``load_skill_resource``), a skill's own MCP servers connected when it is loaded — and which
skills each task has loaded, in the task's log. See docs/harness.md, "Skills"."""

from accord.harness.skills._library import SKILLS_KEY, SkillLibrary, loaded
from accord.harness.skills._skill import (
    RESOURCE_KINDS,
    Resource,
    Skill,
    SkillError,
    index,
    read_skill,
)
from accord.harness.skills._tools import SPECS, SkillTool, TurnTools

__all__ = [
    "RESOURCE_KINDS",
    "SKILLS_KEY",
    "SPECS",
    "Resource",
    "Skill",
    "SkillError",
    "SkillLibrary",
    "SkillTool",
    "TurnTools",
    "index",
    "loaded",
    "read_skill",
]
