"""Reading a plugin's declarations: ``plugin.json`` (the Agent Plugins 1.0.0 manifest) and,
in the namespace folder ``io.github.madarauchiha-314.tiny-harness/``, ``hooks.json`` and
``commands.json`` — the formats tiny-harness plugins are written in, read unchanged.

A fault in a file as a whole (not JSON, not the expected object, a manifest field wrong)
refuses the plugin: ConfigError naming the file and the field. A fault in one entry of
``hooks.json`` or ``commands.json`` skips that entry, with the reason (naming the file and
the field), and the rest loads.

accord reads a few more optional fields than tiny-harness writes: a hook's ``timeout_s``,
and a command's ``arguments`` (declared arguments, checked before the command runs) and
``changes`` (``never``, ``with-arguments`` or ``always``: whether it changes the task, which
the role policy reads; ``always`` when not said).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, cast

from accord import config as check
from accord.config import ConfigError
from accord.harness.commands._spec import (
    ARGUMENT_TYPES,
    CHANGES,
    NAME_PATTERN,
    Argument,
    ArgumentType,
    Changes,
)
from accord.harness.plugins._servers import ServerDef, parse_server

NAMESPACE = "io.github.madarauchiha-314.tiny-harness"
PLUGIN_SCHEMA_ID = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
_PLUGIN_NAME = re.compile(r"(?!.*(?:--|\.\.))[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")
_MANIFEST_TEXTS = ("version", "description", "homepage", "repository", "license")
_AUTHOR_FIELDS = ("name", "email", "url")
_HOOK_FIELDS = ("name", "priority", "points", "import_path", "url", "mcp", "timeout_s")
_COMMAND_FIELDS = ("name", "description", "argument_hint", "hook", "arguments", "changes")
_ARGUMENT_FIELDS = ("name", "type", "choices", "required", "rest", "description")
_MANIFEST_KEYS = ("$schema", "name", *_MANIFEST_TEXTS, "author", "keywords", "extensions")


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    version: str = ""
    description: str = ""
    notes: tuple[str, ...] = ()  # what was ignored, as the specification allows


@dataclass(frozen=True, slots=True)
class HookDef:
    name: str
    priority: int
    points: tuple[str, ...] | None
    import_path: str | None = None
    url: str | None = None
    mcp: ServerDef | None = None  # the MCP server whose hooks.<point> tools it calls
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True)
class CommandDef:
    name: str
    description: str
    argument_hint: str
    hook: str
    arguments: tuple[Argument, ...] | None = None
    changes: Changes = "always"


@dataclass(frozen=True, slots=True)
class Skipped:
    kind: str  # hook, command, plugin part
    id: str
    reason: str


def is_path(entry: str) -> bool:
    """Whether a ``plugins`` entry names a directory (else an installed plugin's name)."""
    return "/" in entry or os.sep in entry or entry.startswith((".", "~"))


def parse_manifest(data: Any, where: str) -> Manifest:
    """``plugin.json``: ``$schema`` and ``name`` required, the rest optional. Unknown
    top-level fields and a non-object ``extensions`` are ignored (noted), as the
    specification makes them non-fatal."""
    if not isinstance(data, dict):
        raise check.refuse(where, "a JSON object", data)
    notes = [f"ignored unknown field {key!r}" for key in data if key not in _MANIFEST_KEYS]
    schema = data.get("$schema")
    if schema != PLUGIN_SCHEMA_ID:
        raise ConfigError(f"{where}: $schema: expected {PLUGIN_SCHEMA_ID!r}, got {_got(schema)}")
    if "name" not in data:
        raise ConfigError(f"{where}: name: missing")
    name = check.text(data["name"], f"{where}: name")
    if len(name) > 64 or _PLUGIN_NAME.fullmatch(name) is None:
        raise ConfigError(
            f"{where}: name: expected at most 64 lower-case letters, digits, '.' and '-' "
            f"(starting and ending with a letter or digit), got {name!r}"
        )
    texts = {
        key: check.text(data[key], f"{where}: {key}") for key in _MANIFEST_TEXTS if key in data
    }
    if "author" in data:
        author = data["author"]
        if not isinstance(author, dict):
            raise check.refuse(f"{where}: author", "an object", author)
        for key, value in author.items():
            if key not in _AUTHOR_FIELDS:
                raise ConfigError(f"{where}: author.{key}: unknown field")
            check.text(value, f"{where}: author.{key}")
    if "keywords" in data:
        check.texts(data["keywords"], f"{where}: keywords")
    extensions = data.get("extensions", {})
    if not isinstance(extensions, dict):
        notes.append("ignored extensions: not an object")
    else:
        for key, value in extensions.items():
            if not isinstance(value, dict):
                raise check.refuse(f"{where}: extensions.{key}", "an object", value)
    return Manifest(
        name,
        texts.get("version", ""),
        texts.get("description", ""),
        tuple(notes),
    )


def parse_hooks(data: Any, where: str) -> tuple[list[HookDef], list[Skipped]]:
    """``hooks.json``: ``{"hooks": [{name, priority?, points?, import_path | url | mcp}]}``."""
    entries = _entries(data, where, "hooks")
    hooks: list[HookDef] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        field = f"{where}: hooks[{index}]"
        try:
            hook = _hook(entry, field)
            if hook.name in seen:
                raise ConfigError(f"{field}.name: {hook.name!r} is declared twice")
        except ConfigError as exc:
            skipped.append(Skipped("hook", _label(entry, index), str(exc)))
            continue
        seen.add(hook.name)
        hooks.append(hook)
    return hooks, skipped


def parse_commands(data: Any, where: str) -> tuple[list[CommandDef], list[Skipped], set[str]]:
    """``commands.json``: ``{"commands": [{name, description, argument_hint?, hook}]}``.
    Also returns every hook name an entry claims, valid or not: such a hook is a command's
    body and never loads as an ordinary hook (it would see every command)."""
    entries = _entries(data, where, "commands")
    commands: list[CommandDef] = []
    skipped: list[Skipped] = []
    claimed: set[str] = set()
    for index, entry in enumerate(entries):
        field = f"{where}: commands[{index}]"
        if isinstance(entry, dict) and isinstance(entry.get("hook"), str):
            claimed.add(entry["hook"])
        try:
            commands.append(_command(entry, field))
        except ConfigError as exc:
            skipped.append(Skipped("command", _label(entry, index), str(exc)))
    return commands, skipped, claimed


def _entries(data: Any, where: str, key: str) -> list[Any]:
    if not isinstance(data, dict):
        raise check.refuse(where, "a JSON object", data)
    for other in data:
        if other != key:
            raise ConfigError(f"{where}: {other}: unknown field (known fields: {key})")
    entries = data.get(key, [])
    if not isinstance(entries, list):
        raise check.refuse(f"{where}: {key}", "a list", entries)
    return entries


def _hook(entry: Any, field: str) -> HookDef:
    values = _object(entry, field, _HOOK_FIELDS)
    name = _required_text(values, "name", field)
    priority = values.get("priority", 500)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise check.refuse(f"{field}.priority", "an integer", priority)
    points = values.get("points")
    if points is not None:
        points = tuple(check.texts(points, f"{field}.points"))
    transports = [key for key in ("import_path", "url", "mcp") if values.get(key) is not None]
    if len(transports) != 1:
        raise ConfigError(f"{field}: a hook needs exactly one of import_path, url or mcp")
    timeout = values.get("timeout_s")
    if timeout is not None and (check.number(timeout, f"{field}.timeout_s") <= 0):
        raise ConfigError(f"{field}.timeout_s: must be more than 0")
    url = values.get("url")
    import_path = values.get("import_path")
    return HookDef(
        name,
        priority,
        points,
        import_path=check.text(import_path, f"{field}.import_path") if import_path else None,
        url=check.url(url, f"{field}.url") if url is not None else None,
        mcp=_hook_server(values.get("mcp"), f"{field}.mcp"),
        timeout_s=float(timeout) if timeout is not None else None,
    )


def _hook_server(value: Any, field: str) -> ServerDef | None:
    if value is None:
        return None
    server = parse_server(value, field)
    if server.type == "sse":
        raise ConfigError(f"{field}.type: stdio or streamable-http (legacy sse is not spoken)")
    return server


def _command(entry: Any, field: str) -> CommandDef:
    values = _object(entry, field, _COMMAND_FIELDS)
    name = _required_text(values, "name", field)
    if NAME_PATTERN.fullmatch(name) is None:
        raise ConfigError(f"{field}.name: expected [a-z][a-z0-9-]*, got {name!r}")
    if "description" not in values:
        raise ConfigError(f"{field}.description: missing")
    description = check.text(values["description"], f"{field}.description")
    hint = check.text(values.get("argument_hint", ""), f"{field}.argument_hint")
    hook = _required_text(values, "hook", field)
    changes = values.get("changes", "always")
    if changes not in CHANGES:
        raise check.refuse(f"{field}.changes", "one of " + ", ".join(CHANGES), changes)
    arguments = None
    if "arguments" in values:
        raw = values["arguments"]
        if not isinstance(raw, list):
            raise check.refuse(f"{field}.arguments", "a list", raw)
        arguments = tuple(
            _argument(item, f"{field}.arguments[{i}]", last=i == len(raw) - 1)
            for i, item in enumerate(raw)
        )
    return CommandDef(name, description, hint, hook, arguments, cast(Changes, changes))


def _argument(entry: Any, field: str, *, last: bool) -> Argument:
    values = _object(entry, field, _ARGUMENT_FIELDS)
    name = _required_text(values, "name", field)
    kind = values.get("type", "string")
    if kind not in ARGUMENT_TYPES:
        raise check.refuse(f"{field}.type", "one of " + ", ".join(ARGUMENT_TYPES), kind)
    choices = tuple(check.texts(values.get("choices", []), f"{field}.choices"))
    required = check.boolean(values.get("required", False), f"{field}.required")
    rest = check.boolean(values.get("rest", False), f"{field}.rest")
    if rest and not last:
        raise ConfigError(f"{field}.rest: only the last argument takes the rest")
    description = check.text(values.get("description", ""), f"{field}.description")
    return Argument(name, cast(ArgumentType, kind), choices, required, rest, description)


def _object(entry: Any, field: str, known: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise check.refuse(field, "an object", entry)
    for key in entry:
        if key not in known:
            raise ConfigError(f"{field}.{key}: unknown field (known fields: {', '.join(known)})")
    return entry


def _required_text(values: dict[str, Any], key: str, field: str) -> str:
    if key not in values:
        raise ConfigError(f"{field}.{key}: missing")
    return check.text(values[key], f"{field}.{key}", empty=False)


def _label(entry: Any, index: int) -> str:
    name = entry.get("name") if isinstance(entry, dict) else None
    return name if isinstance(name, str) and name else f"#{index}"


def _got(value: Any) -> str:
    return "nothing" if value is None else check.shown(value)
