"""A skill (Agent Skills, as tiny-harness reads them): a directory named after the skill, with
``SKILL.md`` — YAML front matter, then a markdown body — and resources one level deep under
``scripts/``, ``references/`` and ``assets/``; optionally its own ``mcp.json``, whose servers
connect when the skill is loaded (a tiny-harness convention: Agent Skills declares none).

The front matter follows the specification's rules, as tiny-harness checks them: ``name`` (1
to 64 lower-case letters and digits in words joined by ``-``, the directory's name) and
``description`` (1 to 1024 characters) are required; ``license``, ``compatibility`` (at most
500 characters), ``metadata`` (text by text) and ``allowed-tools`` (names, space separated or
a list) are optional; any other field is refused. A skill that does not follow them cannot
load (:class:`SkillError`, naming the file and the field).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from accord.errors import AccordError
from accord.harness._front_matter import FrontMatterError, read_markdown
from accord.harness.tools._mcp import McpServerSettings

ResourceKind = Literal["scripts", "references", "assets"]

SKILL_FILE = "SKILL.md"
RESOURCE_KINDS: tuple[ResourceKind, ...] = ("scripts", "references", "assets")
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_SKILL_BYTES = 512 * 1024  # SKILL.md
MAX_RESOURCE_BYTES = 1024 * 1024  # a resource load_skill_resource reads
_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")


class SkillError(AccordError, ValueError):
    """A skill that cannot load, or a request of a skill that cannot be met (the message
    says why: the model reads it as a tool's error)."""


@dataclass(frozen=True, slots=True)
class Resource:
    kind: ResourceKind
    name: str
    path: Path


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str  # SKILL.md without its front matter
    root: Path  # its directory, resolved
    plugin: str = ""  # the plugin it came with
    license: str = ""
    compatibility: str = ""
    metadata: tuple[tuple[str, str], ...] = ()
    allowed_tools: tuple[str, ...] = ()
    # The servers of its own mcp.json (connected when a task loads the skill).
    servers: tuple[McpServerSettings, ...] = field(default=())

    def resources(self) -> list[Resource]:
        """Its files one level deep under the three resource directories, sorted; a file
        whose path leads out of the skill's directory is none of them."""
        found: list[Resource] = []
        for kind in RESOURCE_KINDS:
            directory = self.root / kind
            if not directory.is_dir():
                continue
            for path in sorted(directory.iterdir()):
                if path.is_file() and path.resolve().is_relative_to(self.root):
                    found.append(Resource(kind, path.name, path))
        return found

    def read_resource(self, kind: str, name: str) -> str:
        """One resource's text (SkillError: no such resource, too large, not text)."""
        for resource in self.resources():
            if resource.kind == kind and resource.name == name:
                break
        else:
            raise SkillError(f"skill {self.name!r} has no resource {kind}/{name}")
        with resource.path.open("rb") as file:
            raw = file.read(MAX_RESOURCE_BYTES + 1)
        if len(raw) > MAX_RESOURCE_BYTES:
            raise SkillError(f"{kind}/{name} is larger than {MAX_RESOURCE_BYTES} bytes")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError(f"{kind}/{name} is not text (UTF-8)") from None


def read_skill(directory: Path, plugin: str = "") -> Skill:
    """The skill in ``directory`` (SkillError naming the file and what is wrong)."""
    where = directory / SKILL_FILE
    try:
        front, body = read_markdown(where, MAX_SKILL_BYTES)
    except FrontMatterError as exc:
        raise SkillError(str(exc)) from None
    if front is None:
        raise SkillError(f"{where}: no front matter (a --- block with name and description)")
    for key in front:
        if key not in _FIELDS:
            raise SkillError(f"{where}: {key}: unknown field (known: {', '.join(_FIELDS)})")
    name = _text(front, "name", where, required=True)
    if len(name) > MAX_NAME or NAME.fullmatch(name) is None:
        raise SkillError(
            f"{where}: name: 1 to {MAX_NAME} lower-case letters and digits, words joined by "
            f"'-', got {name!r}"
        )
    if directory.name != name:
        raise SkillError(f"{where}: name: {name!r}, but its directory is {directory.name!r}")
    description = _text(front, "description", where, required=True)
    if not description.strip() or len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{where}: description: 1 to {MAX_DESCRIPTION} characters")
    compatibility = _text(front, "compatibility", where)
    if len(compatibility) > MAX_COMPATIBILITY:
        raise SkillError(f"{where}: compatibility: at most {MAX_COMPATIBILITY} characters")
    metadata = front.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise SkillError(f"{where}: metadata: a mapping of text to text")
    allowed = front.get("allowed-tools") or ()
    if isinstance(allowed, str):
        allowed = tuple(allowed.split())
    if not isinstance(allowed, list | tuple) or not all(isinstance(t, str) for t in allowed):
        raise SkillError(f"{where}: allowed-tools: names, space separated or a list")
    return Skill(
        name=name,
        description=description.strip(),
        body=body.strip() + "\n",
        root=directory.resolve(),
        plugin=plugin,
        license=_text(front, "license", where),
        compatibility=compatibility,
        metadata=tuple(sorted(metadata.items())),
        allowed_tools=tuple(allowed),
    )


def _text(front: dict[str, Any], key: str, where: Path, *, required: bool = False) -> str:
    if key not in front or front[key] is None:
        if required:
            raise SkillError(f"{where}: {key}: missing")
        return ""
    value = front[key]
    if not isinstance(value, str):
        raise SkillError(f"{where}: {key}: text, got {type(value).__name__}")
    return value


def index(skills: list[Skill]) -> str:
    """Level one of progressive disclosure: each skill's name and description, a line each."""
    return "\n".join(f"- {skill.name}: {' '.join(skill.description.split())}" for skill in skills)
