"""Loading plugins into a harness: plugin directories and Python packages.

``[harness] plugins`` lists them in loading order. An entry that is a path (it has a ``/``,
or starts with ``.`` or ``~``) is a plugin directory: ``plugin.json`` and the namespace
folder with ``hooks.json`` and ``commands.json`` (:mod:`.manifest`). A bare name is an
installed package's plugin: an entry point of the ``accord.plugins`` group by that name,
naming either a function that gets the harness (and registers hooks and commands on its
``hooks`` and ``commands``) or a plugin directory the package ships.

A refused manifest stops the loading (ConfigError naming the file and the field: ``accord
serve`` exits non-zero). So does a component that cannot load (a hook whose import fails,
whose URL the SSRF guard refuses, an MCP hook, a command whose hook is missing …): a policy
skipped would leave a silent hole, so the ConfigError names the plugin, the component and
why. Only with ``[harness] plugins_strict = false`` (:attr:`Loading.strict` False) is such a
component skipped and logged with the reason, and the harness serves without it. A plugin
command with a built-in's name replaces the built-in.

Parts of the plugin format accord does not load yet (skills, MCP servers, prompts, the
system prompt) are neither: the plugin loads without them, and the log warns that they are
not loaded.
"""

from __future__ import annotations

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
from accord.errors import AccordError
from accord.harness.commands._registry import COMMAND_IN, CommandRegistry
from accord.harness.commands._spec import CommandSpec
from accord.harness.hooks._base import Executor, FunctionExecutor, Reprioritised
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
from accord.push import Guard, RefusedTarget

log = logging.getLogger("accord.harness.plugins")

ENTRY_POINT_GROUP = "accord.plugins"
# Parts of the Agent Plugins format this harness does not load (yet): warned of, not refused.
_NOT_LOADED = {
    "skills": "skills",
    "mcp.json": "MCP servers",
    f"{NAMESPACE}/prompts": "prompts",
    f"{NAMESPACE}/systemprompt.md": "the system prompt",
}


class PluginHost(Protocol):
    """What a plugin registers on (the harness agent)."""

    @property
    def hooks(self) -> Hooks: ...

    @property
    def commands(self) -> CommandRegistry: ...


@dataclass
class LoadReport:
    plugin: str
    source: str
    loaded: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # parts accord does not load yet


@dataclass(frozen=True, slots=True)
class Loading:
    """What loading needs besides the plugin: the guard for remote hooks' URLs, their
    default timeout, and whether a component that cannot load stops the loading
    (``strict``, the default) or is skipped with a warning."""

    guard: Guard
    timeout_s: float = DEFAULT_TIMEOUT_S
    strict: bool = True


class ComponentError(AccordError, ValueError):
    """One component cannot load; the message says why."""


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
    for part, what in _NOT_LOADED.items():
        if (root / part).exists():
            report.unsupported.append(
                f"{what} ({part}) not loaded: accord's harness does not load {what} yet "
                "(only hooks and commands); it serves without them"
            )
    register(host, report, hooks, commands, claimed, loading)
    return report


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
            host.commands.register_executor(spec, executor(hook, loading), replace=replace)
        except (ComponentError, ValueError) as exc:
            report.skipped.append(Skipped("command", command.name, str(exc)))
            continue
        owners[command.hook] = command.name
        report.loaded.append(f"/{command.name}")
    for hook in hooks:
        if hook.name in claimed:
            continue
        try:
            host.hooks.register(executor(hook, loading))
        except (ComponentError, ValueError) as exc:
            report.skipped.append(Skipped("hook", hook.name, str(exc)))
            continue
        report.loaded.append(f"hook {hook.name}")


def executor(hook: HookDef, loading: Loading) -> Executor:
    """The executor a hooks.json entry describes; ComponentError when it cannot be made."""
    for name in hook.points or ():
        check_point(name)
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
    raise ComponentError("MCP hook executors are not supported yet; use url or import_path")


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
    for part in report.unsupported:
        log.warning("plugin %s: %s", report.plugin, part)
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
