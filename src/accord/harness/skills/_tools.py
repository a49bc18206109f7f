"""The skill tools, with tiny-harness's names and arguments (each refuses any other argument):

- ``list_skills`` ``{}``: names and descriptions;
- ``load_skill`` ``{name}``: the skill's body; its own MCP servers connect, and their tools
  are offered from the model's next call on; the task records the skill as loaded;
- ``unload_skill`` ``{name}``: the reverse (its tools are no longer offered);
- ``list_skill_resources`` ``{name}``: its files, ``<kind>/<name>`` a line;
- ``load_skill_resource`` ``{name, kind, resource}``: one file's text (``kind``: scripts,
  references or assets).

A turn's tools are a :class:`TurnTools`: the harness's others, these five, and the tools of
the skills the task has loaded, which ``load_skill`` and ``unload_skill`` change as the turn
goes (the next model call is offered them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from accord.core import Outcome, TaskRecord
from accord.core import agent as moves
from accord.harness._transcript import ToolSpec
from accord.harness.skills._library import SkillLibrary, loaded, with_loaded
from accord.harness.skills._skill import RESOURCE_KINDS, SkillError
from accord.harness.tools._base import Tool, ToolContext, ToolOutcome, ToolSet

_NAME = {"name": {"type": "string", "description": "The skill's name"}}


def _spec(name: str, description: str, properties: dict[str, Any]) -> ToolSpec:
    return ToolSpec(
        name,
        description,
        {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    )


SPECS = {
    "list_skills": _spec("list_skills", "List the available skills: names and descriptions.", {}),
    "load_skill": _spec("load_skill", "Load a skill's instructions into the context.", _NAME),
    "unload_skill": _spec("unload_skill", "Unload a skill and its tools.", _NAME),
    "list_skill_resources": _spec(
        "list_skill_resources", "List a loaded skill's scripts, references and assets.", _NAME
    ),
    "load_skill_resource": _spec(
        "load_skill_resource",
        "Read one resource of a loaded skill.",
        {
            **_NAME,
            "kind": {"type": "string", "enum": list(RESOURCE_KINDS)},
            "resource": {
                "type": "string",
                "description": "The file name within the kind's directory",
            },
        },
    ),
}


class TurnTools(ToolSet):
    """A turn's tools: ``base``, the skill tools, and the loaded skills' tools (a name the
    base has is the base's)."""

    def __init__(self, base: ToolSet, library: SkillLibrary, names: Sequence[str]) -> None:
        super().__init__()
        self.base = base
        self.library = library
        self.loaded = list(names)
        self.own = {name: SkillTool(name, library, self) for name in SPECS}

    def _extra(self) -> list[Tool]:
        found: list[Tool] = list(self.own.values())
        for name in self.loaded:
            found.extend(self.library.tools_of(name))
        return found

    def get(self, name: str) -> Tool | None:
        tool = self.base.get(name)
        if tool is not None:
            return tool
        for extra in self._extra():
            if extra.spec.name == name:
                return extra
        return None

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        specs = list(self.base.specs)
        taken = {spec.name for spec in specs}
        for tool in self._extra():
            if tool.spec.name not in taken:
                taken.add(tool.spec.name)
                specs.append(tool.spec)
        return tuple(specs)

    def __len__(self) -> int:
        return len(self.specs)


class SkillTool:
    """One of the five, for one turn."""

    idempotent = True  # (loading, unloading or reading twice changes nothing more)

    def __init__(self, name: str, library: SkillLibrary, turn: TurnTools) -> None:
        self.spec = SPECS[name]
        self.library = library
        self.turn = turn

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        properties = self.spec.parameters["properties"]
        unknown = sorted(set(arguments) - set(properties))
        missing = [key for key in properties if not isinstance(arguments.get(key), str)]
        if unknown or missing:
            wrong = [f"unknown argument {k!r}" for k in unknown]
            wrong += [f"{k} is required text" for k in missing]
            return ToolOutcome(f"{self.spec.name}: {'; '.join(wrong)}", error=True)
        try:
            outcome: ToolOutcome = await getattr(self, "_" + self.spec.name)(arguments, context)
            return outcome
        except SkillError as exc:
            return ToolOutcome(f"{self.spec.name}: {exc}", error=True)

    def _skill(self, name: str) -> Any:
        skill = self.library.get(name)
        if skill is None:
            known = ", ".join(self.library.names) or "none"
            raise SkillError(f"no skill named {name!r} (skills: {known})")
        return skill

    async def _list_skills(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome(self.library.index() or "(no skills)")

    async def _load_skill(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        skill = self._skill(arguments["name"])
        try:
            servers = await self.library.connect(skill.name)
        except Exception as exc:
            raise SkillError(
                f"skill {skill.name!r}: its MCP servers cannot connect: {exc}"
            ) from None
        await _record(context, lambda names: names if skill.name in names else [*names, skill.name])
        if skill.name not in self.turn.loaded:
            self.turn.loaded.append(skill.name)
        tools = [tool.spec.name for server in servers for tool in server.tools]
        note = f"\n\n[tools of skill {skill.name}: {', '.join(tools)}]" if tools else ""
        return ToolOutcome(skill.body.strip() + note)

    async def _unload_skill(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        name = arguments["name"]
        if name not in self.turn.loaded:
            raise SkillError(f"skill {name!r} is not loaded")
        await _record(context, lambda names: [n for n in names if n != name])
        self.turn.loaded.remove(name)
        return ToolOutcome(f"unloaded {name}")

    async def _list_skill_resources(
        self, arguments: dict[str, Any], context: ToolContext
    ) -> ToolOutcome:
        skill = self._skill(arguments["name"])
        lines = [f"- {r.kind}/{r.name}" for r in skill.resources()]
        return ToolOutcome("\n".join(lines) or "(no resources)")

    async def _load_skill_resource(
        self, arguments: dict[str, Any], context: ToolContext
    ) -> ToolOutcome:
        skill = self._skill(arguments["name"])
        if arguments["kind"] not in RESOURCE_KINDS:
            raise SkillError(f"kind is one of {', '.join(RESOURCE_KINDS)}")
        return ToolOutcome(skill.read_resource(arguments["kind"], arguments["resource"]))


async def _record(context: ToolContext, change: Callable[[list[str]], list[str]]) -> None:
    """The task's loaded skills changed by ``change``: an event of its log (none when
    nothing changes)."""
    task = context.task
    if task is None:
        return

    def decide(record: TaskRecord | None, now_ms: int) -> Outcome:
        if record is None:
            return moves.set_metadata(record, {}, now_ms, context.task_id)  # (the refusal)
        before = list(loaded(record.task))
        after = change(before)
        if after == before:
            return Outcome("unchanged", record=record)
        return moves.set_metadata(record, with_loaded(record.task.metadata, after), now_ms)

    await task.decide(decide)
