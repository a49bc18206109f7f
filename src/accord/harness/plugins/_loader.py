"""Loading plugins into a harness: plugin directories and Python packages.

``[harness] plugins`` lists them in loading order. An entry that is a path (it has a ``/``,
or starts with ``.`` or ``~``) is a plugin directory in the tiny-harness layout: ``plugin.json``,
``skills/<name>/SKILL.md`` (accord.harness.skills), ``mcp.json`` (:mod:`._servers`), and the
namespace folder with ``hooks.json``, ``commands.json`` (:mod:`._manifest`), ``prompts/*.md``
and ``systemprompt.md`` (:mod:`._prompts`). A bare name is an installed package's plugin: an
entry point of the ``accord.plugins`` group by that name, naming either a function that gets
the harness (and registers hooks, commands, skills, prompts or MCP servers on it) or a plugin
directory the package ships.

A refused manifest stops the loading (ConfigError naming the file and the field: ``accord
serve`` exits non-zero). So does a component that cannot load (a hook whose import fails,
whose URL the SSRF guard refuses, a command whose hook is missing, a skill or a prompt whose
front matter is wrong, an MCP server whose paths leave the plugin …): a part of a plugin
skipped would leave a silent hole, so the ConfigError names the plugin, the component and
why. Only with ``[harness] plugins_strict = false`` (:attr:`Loading.strict` False) is such a
component skipped and logged with the reason, and the harness serves without it. A plugin
command with a built-in's name replaces the built-in; a later plugin's skill, prompt or system
prompt replaces an earlier one's (as in tiny-harness), which the log notes. A plugin's MCP
servers (its own and its MCP hooks') connect as the harness starts: one that cannot stops
the start, as a ``[[harness.mcp]]`` server does.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

from accord.agents import importable_from_working_directory
from accord.config import ConfigError
from accord.harness.commands._registry import COMMAND_IN, CommandRegistry
from accord.harness.commands._spec import CommandSpec
from accord.harness.hooks._base import Executor, FunctionExecutor, Reprioritised
from accord.harness.hooks._mcp_hook import McpHookExecutor
from accord.harness.hooks._registry import Hooks, check_point
from accord.harness.hooks._remote import DEFAULT_TIMEOUT_S, RemoteExecutor
from accord.harness.plugins._manifest import (
    NAMESPACE,
    CommandDef,
    HookDef,
    Skipped,
    is_path,
    parse_commands,
    parse_hooks,
    parse_manifest,
)
from accord.harness.plugins._prompts import Prompt, Prompts, read_prompt
from accord.harness.plugins._servers import (
    ComponentError,
    contained,
    parse_mcp,
    plugin_data,
    server_settings,
)
from accord.harness.skills import Skill, SkillError, SkillLibrary, read_skill
from accord.harness.tools._mcp import McpServer, McpServerSettings
from accord.push import Guard, RefusedTarget

log = logging.getLogger("accord.harness.plugins")

ENTRY_POINT_GROUP = "accord.plugins"
DEFAULT_DATA_DIR = "plugin-data"


class PluginHost(Protocol):
    """What a plugin registers on (the harness agent)."""

    @property
    def hooks(self) -> Hooks: ...

    @property
    def commands(self) -> CommandRegistry: ...

    @property
    def skills(self) -> SkillLibrary: ...

    @property
    def prompts(self) -> Prompts: ...

    def add_mcp_server(self, settings: McpServerSettings, *, offered: bool = True) -> McpServer:
        """An MCP server that connects as the harness starts; its tools are offered to the
        model (``offered``), or it serves a hook (ValueError: a server of its name offers
        tools already)."""
        ...


@dataclass
class LoadReport:
    plugin: str
    source: str
    loaded: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Loading:
    """What loading needs besides the plugin: the guard for remote hooks' URLs, their
    default timeout, whether a component that cannot load stops the loading (``strict``,
    the default) or is skipped with a warning, and where plugins keep their data
    (``${PLUGIN_DATA}``: ``<data_dir>/<plugin name>``)."""

    guard: Guard
    timeout_s: float = DEFAULT_TIMEOUT_S
    strict: bool = True
    data_dir: Path = Path(DEFAULT_DATA_DIR)


@dataclass(frozen=True, slots=True)
class Place:
    """Where a plugin directory's parts live: its name, its directory (resolved) and its
    data directory."""

    plugin: str
    root: Path
    data: Path


@dataclass
class Parts:
    """What a plugin directory brings besides hooks and commands."""

    skills: list[Skill] = field(default_factory=list)
    servers: list[McpServerSettings] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    system_prompt: Prompt | None = None


def load_plugins(host: PluginHost, entries: Sequence[str], loading: Loading) -> list[LoadReport]:
    """Every plugin of ``entries``, in order; ConfigError on a refused one, and (strict) on
    one with a component that cannot load."""
    reports = []
    for entry in entries:
        if is_path(entry):
            report = load_directory(host, Path(entry).expanduser(), loading)
        else:
            report = load_entry_point(host, entry, loading)
        if loading.strict and report.skipped:
            raise ConfigError(unloadable(report))
        _log(report)
        reports.append(report)
    return reports


def unloadable(report: LoadReport) -> str:
    """The one line that refuses ``report``'s plugin: each component that cannot load, and
    why."""
    faults = "; ".join(
        f"{skipped.kind} {skipped.id!r} cannot load: {skipped.reason}" for skipped in report.skipped
    )
    line = (
        f"plugin {report.plugin!r}: {faults} (the harness does not serve without a "
        "component of a plugin; harness.plugins_strict = false skips it instead)"
    )
    return " ".join(line.split())  # (one line, whatever an import error said)


def load_directory(host: PluginHost, root: Path, loading: Loading) -> LoadReport:
    manifest_path = root / "plugin.json"
    manifest = parse_manifest(_read_json(manifest_path), str(manifest_path))
    report = LoadReport(manifest.name, str(root), notes=list(manifest.notes))
    place = Place(manifest.name, root.resolve(), plugin_data(loading.data_dir, manifest.name))
    hooks: list[HookDef] = []
    commands: list[CommandDef] = []
    claimed: set[str] = set()
    namespace = root / NAMESPACE
    hooks_path = namespace / "hooks.json"
    if hooks_path.is_file():
        hooks, skipped = parse_hooks(_read_json(hooks_path), str(hooks_path))
        report.skipped += skipped
    commands_path = namespace / "commands.json"
    if commands_path.is_file():
        commands, skipped, claimed = parse_commands(_read_json(commands_path), str(commands_path))
        report.skipped += skipped
    parts = Parts(
        skills=_skills(root, place, report),
        servers=_servers(root / "mcp.json", place, place.root, place.data, report),
    )
    parts.prompts, parts.system_prompt = _prompts(namespace, place, report)
    register(host, report, hooks, commands, claimed, loading, place)
    register_parts(host, report, parts)
    return report


def _skills(root: Path, place: Place, report: LoadReport) -> list[Skill]:
    """The plugin's skills (``skills/<name>/SKILL.md``), each with its own MCP servers:
    ``${PLUGIN_ROOT}`` is the skill's directory, ``${PLUGIN_DATA}`` its data directory."""
    folder = root / "skills"
    if not folder.exists():
        return []
    if not folder.is_dir():
        report.skipped.append(Skipped("skills", "skills", f"{folder} is not a directory"))
        return []
    found: list[Skill] = []
    for child in sorted(folder.iterdir()):
        if not child.is_dir() or not (child / "SKILL.md").is_file():
            continue
        try:
            directory = contained(child, place.root)
            skill = read_skill(directory, place.plugin)
            data = place.data / "skills" / skill.name
            servers = _servers(directory / "mcp.json", place, directory, data, None, skill.name)
            found.append(dataclasses.replace(skill, servers=tuple(servers)))
        except (SkillError, ComponentError, ConfigError) as exc:
            report.skipped.append(Skipped("skill", child.name, str(exc)))
    return found


def _servers(
    path: Path,
    place: Place,
    root: Path,
    data: Path,
    report: LoadReport | None,
    skill: str = "",
) -> list[McpServerSettings]:
    """The servers of the ``mcp.json`` at ``path`` (none without one). A server that
    cannot load is skipped into ``report`` (None: a skill's, which cannot load then)."""
    if not path.is_file():
        return []
    try:
        contained(path, place.root)
    except ComponentError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    declared = parse_mcp(_read_json(path), str(path))
    origin = f"plugin {place.plugin}: " + (f"skill {skill}: mcp.json" if skill else "mcp.json")
    found: list[McpServerSettings] = []
    for name, server in declared.items():
        try:
            if isinstance(server, ComponentError):
                raise server
            prefix = f"{skill}_" if skill else ""
            found.append(server_settings(prefix + name, server, root, data, origin=origin))
        except ComponentError as exc:
            if report is None:
                raise ComponentError(f"its MCP server {name!r} cannot load: {exc}") from None
            report.skipped.append(Skipped("mcp server", name, str(exc)))
    return found


def _prompts(
    namespace: Path, place: Place, report: LoadReport
) -> tuple[list[Prompt], Prompt | None]:
    prompts: list[Prompt] = []
    folder = namespace / "prompts"
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            if not path.is_file():
                continue
            try:
                prompts.append(read_prompt(contained(path, place.root), place.plugin))
            except ComponentError as exc:
                report.skipped.append(Skipped("prompt", path.stem, str(exc)))
    system: Prompt | None = None
    path = namespace / "systemprompt.md"
    if path.is_file():
        try:
            system = read_prompt(contained(path, place.root), place.plugin, system=True)
        except ComponentError as exc:
            report.skipped.append(Skipped("system prompt", "systemprompt.md", str(exc)))
    return prompts, system


def register_parts(host: PluginHost, report: LoadReport, parts: Parts) -> None:
    """The plugin's skills, MCP servers, prompts and system prompt, on ``host``."""
    for skill in parts.skills:
        replaced = host.skills.add(skill)
        if replaced is not None:
            report.notes.append(f"its skill {skill.name} replaces plugin {replaced.plugin}'s")
        report.loaded.append(f"skill {skill.name}")
    for settings in parts.servers:
        try:
            host.add_mcp_server(settings)
        except ValueError as exc:
            report.skipped.append(Skipped("mcp server", settings.name, str(exc)))
            continue
        report.loaded.append(f"MCP server {settings.name}")
    for prompt in parts.prompts:
        replaced_prompt = host.prompts.add(prompt)
        if replaced_prompt is not None:
            report.notes.append(
                f"its prompt {prompt.id} replaces plugin {replaced_prompt.plugin}'s"
            )
        extends = f" (extends {prompt.extends})" if prompt.extends else ""
        report.loaded.append(f"prompt {prompt.id}{extends}")
    if parts.system_prompt is not None:
        before = host.prompts.set_system_prompt(parts.system_prompt.text, f"plugin {report.plugin}")
        if before:
            report.notes.append(f"its system prompt replaces {before}'s")
        report.loaded.append("the system prompt")


def load_entry_point(host: PluginHost, name: str, loading: Loading) -> LoadReport:
    found = list(entry_points(group=ENTRY_POINT_GROUP, name=name))
    if not found:
        raise ConfigError(
            f"plugin {name!r}: no installed package declares it (entry point group "
            f"{ENTRY_POINT_GROUP}); for a plugin directory, write ./{name}"
        )
    point = found[0]
    try:
        target = point.load()
    except Exception as exc:
        raise ConfigError(f"plugin {name!r}: cannot load {point.value}: {exc}") from None
    if isinstance(target, str | os.PathLike):
        return load_directory(host, Path(target), loading)
    if not callable(target):
        raise ConfigError(
            f"plugin {name!r}: {point.value} is neither a function taking the harness nor "
            "a plugin directory"
        )
    try:
        target(host)
    except Exception as exc:
        raise ConfigError(f"plugin {name!r}: {point.value} failed: {exc}") from None
    return LoadReport(name, f"entry point {point.value}", loaded=[point.value])


def register(
    host: PluginHost,
    report: LoadReport,
    hooks: list[HookDef],
    commands: list[CommandDef],
    claimed: set[str],
    loading: Loading,
    place: Place | None = None,
) -> None:
    """The plugin's commands (each with the hook that is its body), then its other hooks; a
    hook some command claims never loads as an ordinary hook, even when that command is
    skipped (it would see every command)."""
    by_name = {hook.name: hook for hook in hooks}
    owners: dict[str, str] = {}
    for command in commands:
        try:
            hook = by_name.get(command.hook)
            if hook is None:
                raise ComponentError(f"no hook {command.hook!r} in hooks.json")
            if command.hook in owners:
                raise ComponentError(
                    f"hook {command.hook!r} is the body of /{owners[command.hook]}"
                )
            if hook.points != (COMMAND_IN,):
                raise ComponentError(
                    f"its hook {hook.name!r} must declare exactly points: [{COMMAND_IN!r}]"
                )
            replace = command.name in host.commands.defaults
            if command.name in host.commands.names and not replace:
                raise ComponentError("a command of that name is registered already")
            spec = CommandSpec(
                command.name,
                command.description,
                command.argument_hint,
                command.arguments,
                command.changes,
            )
            body = executor(hook, loading, host, place)
            host.commands.register_executor(spec, body, replace=replace)
        except (ComponentError, ValueError) as exc:
            report.skipped.append(Skipped("command", command.name, str(exc)))
            continue
        owners[command.hook] = command.name
        report.loaded.append(f"/{command.name}")
    for hook in hooks:
        if hook.name in claimed:
            continue
        try:
            host.hooks.register(executor(hook, loading, host, place))
        except (ComponentError, ValueError) as exc:
            report.skipped.append(Skipped("hook", hook.name, str(exc)))
            continue
        report.loaded.append(f"hook {hook.name}")


def executor(
    hook: HookDef, loading: Loading, host: PluginHost, place: Place | None = None
) -> Executor:
    """The executor a hooks.json entry describes; ComponentError when it cannot be made."""
    for name in hook.points or ():
        check_point(name)
    if hook.mcp is not None:
        if place is None:
            raise ComponentError("an MCP hook belongs to a plugin directory")
        timeout = hook.timeout_s or loading.timeout_s
        settings = server_settings(
            f"hook {hook.name}",
            hook.mcp,
            place.root,
            place.data,
            origin=f"plugin {place.plugin}: hook {hook.name}",
            timeout_s=timeout,
        )
        server = host.add_mcp_server(settings, offered=False)
        return McpHookExecutor(
            hook.name, server, priority=hook.priority, points=hook.points, timeout_s=timeout
        )
    if hook.url is not None:
        try:
            loading.guard.check_now(hook.url)
        except RefusedTarget as exc:
            raise ComponentError(f"its URL is refused: {exc}") from None
        return RemoteExecutor(
            hook.name,
            hook.url,
            guard=loading.guard,
            priority=hook.priority,
            points=hook.points,
            timeout_s=hook.timeout_s or loading.timeout_s,
        )
    if hook.import_path is not None:
        target = _imported(hook.import_path)
        if isinstance(target, Executor):
            points = hook.points if hook.points is not None else target.points
            return Reprioritised(target, hook.name, hook.priority, points)
        if callable(target):
            return FunctionExecutor(hook.name, target, priority=hook.priority, points=hook.points)
        raise ComponentError(f"{hook.import_path} is neither a hook executor nor a function")
    raise ComponentError("a hook needs exactly one of import_path, url or mcp")


def _imported(import_path: str) -> Any:
    module, _, attribute = import_path.partition(":")
    if not module or not attribute:
        raise ComponentError(f"import_path {import_path!r}: expected module:attribute")
    importable_from_working_directory()
    try:
        target: Any = importlib.import_module(module)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as exc:
        raise ComponentError(f"cannot import {import_path}: {exc}") from None
    return target


def _read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None


def _log(report: LoadReport) -> None:
    for note in report.notes:
        log.info("plugin %s: %s", report.plugin, note)
    for skipped in report.skipped:
        log.warning(
            "plugin %s: %s %s skipped: %s", report.plugin, skipped.kind, skipped.id, skipped.reason
        )
    log.info(
        "plugin %s loaded from %s: %s",
        report.plugin,
        report.source,
        ", ".join(report.loaded) or "nothing",
    )
