"""The harness's skills: the plugins' skills by name, which of them each task has loaded, and
what that gives a turn — the skills' index and the loaded skills' bodies in the prompt's
prefix, and the loaded skills' MCP tools beside the turn's others.

Which skills a task has loaded is in its log: ``Task.metadata["accord.harness/skills"]``
(``{"loaded": [names]}``), changed by ``load_skill`` and ``unload_skill`` as an event of the
task, so a turn after a restart, or on another node, has the same skills and tools (their
servers connect on the node that runs the turn, when it first needs them). tiny-harness
keeps them in a worker's memory and loses them on a crash or another worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from accord.harness.skills._skill import Skill, index
from accord.harness.tools._base import Tool, ToolSet
from accord.harness.tools._mcp import McpServer
from accord.wire import Task

log = logging.getLogger("accord.harness.skills")

SKILLS_KEY = "accord.harness/skills"
INDEX_HEAD = (
    "Skills you can load (load_skill) when one fits the work; unload_skill when it is done "
    "with (list_skill_resources, load_skill_resource: a skill's files):"
)
LOADED_HEAD = "Skill {name} (loaded):"


def loaded(task: Task) -> tuple[str, ...]:
    """The skills ``task`` has loaded, in the order they were."""
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    value = metadata.get(SKILLS_KEY)
    names = value.get("loaded") if isinstance(value, dict) else None
    if not isinstance(names, list):
        return ()
    return tuple(name for name in names if isinstance(name, str))


def with_loaded(metadata: Any, names: Sequence[str]) -> dict[str, Any]:
    """``metadata`` (a task's) recording ``names`` as its loaded skills."""
    base = dict(metadata) if isinstance(metadata, dict) else {}
    base[SKILLS_KEY] = {"loaded": list(names)}
    return base


class SkillLibrary:
    """The skills plugins brought, by name (a later plugin's skill of a name replaces an
    earlier one's, as in tiny-harness), and the connections to their MCP servers in this
    process (made when a task here first needs them, kept until the harness stops)."""

    def __init__(self) -> None:
        self._skills: dict[str, Skill] = {}
        self._servers: dict[str, list[McpServer]] = {}
        self._connecting: dict[str, asyncio.Lock] = {}

    def add(self, skill: Skill) -> Skill | None:
        """Add ``skill``; the skill of that name it replaces, if any."""
        replaced = self._skills.get(skill.name)
        self._skills[skill.name] = skill
        return replaced

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._skills))

    def __len__(self) -> int:
        return len(self._skills)

    def index(self) -> str:
        return index([self._skills[name] for name in self.names])

    def prefix(self, system_prompt: str, task: Task) -> str:
        """The prompt's prefix for a turn of ``task``: the system prompt, the skills' index
        (every task's: the static part), then the bodies of the skills the task has loaded
        (the task's)."""
        if not self._skills:
            return system_prompt
        pieces = [system_prompt.strip(), f"{INDEX_HEAD}\n{self.index()}"]
        for name in loaded(task):
            skill = self._skills.get(name)
            if skill is not None:
                pieces.append(f"{LOADED_HEAD.format(name=name)}\n{skill.body.strip()}")
        return "\n\n".join(piece for piece in pieces if piece)

    async def connect(self, name: str) -> list[McpServer]:
        """The skill's MCP servers, connected (once in this process); what connecting
        raised when one cannot be."""
        skill = self._skills.get(name)
        if skill is None or not skill.servers:
            return []
        async with self._connecting.setdefault(name, asyncio.Lock()):
            servers = self._servers.get(name)
            if servers is None:
                servers = [McpServer(settings) for settings in skill.servers]
                started: list[McpServer] = []
                try:
                    for server in servers:
                        await server.start()
                        started.append(server)
                except BaseException:
                    for server in started:
                        await server.stop()
                    raise
                self._servers[name] = servers
            return servers

    def tools_of(self, name: str) -> list[Tool]:
        """The tools the skill's servers offer (connected: :meth:`connect`)."""
        return [tool for server in self._servers.get(name, ()) for tool in server.tools]

    async def turn_tools(self, base: ToolSet, task: Task) -> ToolSet:
        """The tools a turn of ``task`` offers: ``base``, the five skill tools (when there
        are skills), and the tools of the skills the task has loaded — their servers
        connected here first (one that cannot be is logged, and its tools are missing
        until it can)."""
        if not self._skills:
            return base
        from accord.harness.skills._tools import TurnTools

        names = [name for name in loaded(task) if name in self._skills]
        for name in names:
            try:
                await self.connect(name)
            except Exception as exc:
                log.warning("skill %s: its MCP servers cannot connect: %s", name, exc)
        return TurnTools(base, self, names)

    async def stop(self) -> None:
        servers, self._servers = self._servers, {}
        for group in servers.values():
            for server in group:
                await server.stop()
