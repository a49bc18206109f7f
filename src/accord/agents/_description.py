"""What the agent card says about the agent (name, description, version, provider, links,
skills, media types), read from the ``[card]`` table of the settings or from the ``card``
attribute of the agent's module, every field checked, errors naming the source and field:
``accord.toml: card.skills[0].id: must not be empty``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from accord import config as check
from accord.wire import AgentProvider, AgentSkill

CARD_FIELDS = (
    "name",
    "description",
    "version",
    "provider",
    "documentation_url",
    "icon_url",
    "skills",
    "default_input_modes",
    "default_output_modes",
)
SKILL_FIELDS = ("id", "name", "description", "tags", "examples", "input_modes", "output_modes")
PROVIDER_FIELDS = ("organization", "url")


@dataclass(frozen=True)
class CardDescription:
    """The card's descriptive fields; None is unset (another source, or the default, gives
    it)."""

    name: str | None = None
    description: str | None = None
    version: str | None = None  # the agent's own version
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    skills: list[AgentSkill] | None = None
    default_input_modes: list[str] | None = None
    default_output_modes: list[str] | None = None

    def given(self) -> dict[str, Any]:
        """The fields that are set, by name."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) is not None
        }

    def over(self, base: CardDescription) -> CardDescription:
        """These fields, and ``base``'s where these are unset."""
        return dataclasses.replace(base, **self.given())


def parse_card(value: Any, source: str) -> CardDescription:
    """A ``[card]`` table (or a module's ``card`` dict); ``source`` names where it is written
    (the settings file, or ``module mypkg.agent``)."""
    where = f"{source}: card"
    fields = check.table(value, where, CARD_FIELDS)
    read: dict[str, Any] = {}
    for name in ("name", "version"):
        if name in fields:
            read[name] = check.text(fields[name], f"{where}.{name}", empty=False)
    if "description" in fields:
        read["description"] = check.text(fields["description"], f"{where}.description")
    for name in ("documentation_url", "icon_url"):
        if name in fields:
            read[name] = check.url(fields[name], f"{where}.{name}")
    if "provider" in fields:
        read["provider"] = _provider(fields["provider"], f"{where}.provider")
    if "skills" in fields:
        read["skills"] = _skills(fields["skills"], f"{where}.skills")
    for name in ("default_input_modes", "default_output_modes"):
        if name in fields:
            read[name] = check.media_types(fields[name], f"{where}.{name}")
    return CardDescription(**read)


def _provider(value: Any, where: str) -> AgentProvider:
    fields = check.table(value, where, PROVIDER_FIELDS)
    for name in PROVIDER_FIELDS:
        if name not in fields:
            raise check.ConfigError(f"{where}.{name}: missing (a provider needs {name})")
    return AgentProvider(
        organization=check.text(fields["organization"], f"{where}.organization", empty=False),
        url=check.url(fields["url"], f"{where}.url"),
    )


def _skills(value: Any, where: str) -> list[AgentSkill]:
    if not isinstance(value, list):
        raise check.refuse(where, "a list of skill tables", value)
    skills: list[AgentSkill] = []
    for index, item in enumerate(value):
        skill = _skill(item, f"{where}[{index}]")
        if any(known.id == skill.id for known in skills):
            raise check.ConfigError(f"{where}[{index}].id: {skill.id!r} is used by another skill")
        skills.append(skill)
    return skills


def _skill(value: Any, where: str) -> AgentSkill:
    fields = check.table(value, where, SKILL_FIELDS)
    for name in ("id", "name", "description"):
        if name not in fields:
            raise check.ConfigError(
                f"{where}.{name}: missing (every skill has an id, a name and a description)"
            )
    return AgentSkill(
        id=check.text(fields["id"], f"{where}.id", empty=False),
        name=check.text(fields["name"], f"{where}.name", empty=False),
        description=check.text(fields["description"], f"{where}.description", empty=False),
        tags=check.texts(fields.get("tags", []), f"{where}.tags"),
        examples=check.texts(fields.get("examples", []), f"{where}.examples"),
        input_modes=check.media_types(fields.get("input_modes", []), f"{where}.input_modes"),
        output_modes=check.media_types(fields.get("output_modes", []), f"{where}.output_modes"),
    )
