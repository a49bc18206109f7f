"""A plugin's MCP servers (``mcp.json``, a skill's own ``mcp.json``, a hook's ``mcp``
transport), and the rules every path of a plugin follows.

``mcp.json`` is the Agent Plugins 1.0.0 file: ``{"$schema": MCP_SCHEMA_ID, "mcpServers":
{name: server}}`` and nothing else; a server is ``stdio`` (``command``, ``args``, ``env``,
``cwd``), ``streamable-http`` (``url``, ``headers``) or the legacy ``sse``, which accord does
not speak (it cannot load, as in tiny-harness). The rules are tiny-harness's:

- every path of a plugin — a skill's directory, a prompt, ``cwd``, a ``./`` command —
  resolves inside the plugin's directory (``cwd`` may be rooted in its data directory
  instead): symbolic links out of it are refused;
- only ``${PLUGIN_ROOT}`` and ``${PLUGIN_DATA}`` expand, in ``args``, ``env`` values and
  ``cwd``, never in ``command``; the server gets both in its environment too;
- ``python`` (``python3``) is the interpreter running accord, as in ``[[harness.mcp]]``.

A fault of the file as a whole is a ConfigError naming the file and the field; a fault of
one server (a :class:`ComponentError` for the loader) is that server's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from accord import config as check
from accord.config import ConfigError
from accord.errors import AccordError
from accord.harness.tools._mcp import McpServerSettings

MCP_SCHEMA_ID = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
PLUGIN_ROOT = "PLUGIN_ROOT"
PLUGIN_DATA = "PLUGIN_DATA"
_ROOT_VAR = "${" + PLUGIN_ROOT + "}"
_DATA_VAR = "${" + PLUGIN_DATA + "}"
_FIELDS = {
    "stdio": ("type", "command", "args", "env", "cwd"),
    "streamable-http": ("type", "url", "headers"),
    "sse": ("type", "url", "headers"),
}
DEFAULT_TIMEOUT_S = 60.0

ServerType = Literal["stdio", "streamable-http", "sse"]


class ComponentError(AccordError, ValueError):
    """One component of a plugin cannot load; the message says why."""


@dataclass(frozen=True, slots=True)
class ServerDef:
    """One server as ``mcp.json`` (or a hook's ``mcp``) declares it, before its paths and
    variables are resolved."""

    type: ServerType
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()


def parse_mcp(data: Any, where: str) -> dict[str, ServerDef | ComponentError]:
    """``mcp.json``: each server by name, or why it cannot load. ConfigError for the file as
    a whole (not the object the schema describes, another Agent Plugins version)."""
    if not isinstance(data, dict):
        raise check.refuse(where, "a JSON object", data)
    for key in data:
        if key not in ("$schema", "mcpServers"):
            raise ConfigError(f"{where}: {key}: unknown field (known fields: $schema, mcpServers)")
    if data.get("$schema") != MCP_SCHEMA_ID:
        raise ConfigError(
            f"{where}: $schema: expected {MCP_SCHEMA_ID!r}, got {check.shown(data.get('$schema'))}"
        )
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        raise check.refuse(f"{where}: mcpServers", "an object of servers by name", servers)
    found: dict[str, ServerDef | ComponentError] = {}
    for name, value in servers.items():
        try:
            found[name] = parse_server(value, f"{where}: mcpServers.{name}")
        except ConfigError as exc:
            found[name] = ComponentError(str(exc))
    return found


def parse_server(value: Any, field: str) -> ServerDef:
    """One server's declaration (ConfigError naming the field)."""
    if not isinstance(value, dict):
        raise check.refuse(field, "an object", value)
    kind = value.get("type")
    if kind not in _FIELDS:
        raise check.refuse(f"{field}.type", "stdio, streamable-http or sse", kind)
    for key in value:
        if key not in _FIELDS[kind]:
            known = ", ".join(_FIELDS[kind])
            raise ConfigError(f"{field}.{key}: unknown field of a {kind} server ({known})")
    if kind == "stdio":
        if "command" not in value:
            raise ConfigError(f"{field}.command: missing")
        env = _strings(value.get("env", {}), f"{field}.env")
        for key, _ in env:
            if key in (PLUGIN_ROOT, PLUGIN_DATA):
                raise ConfigError(f"{field}.env.{key}: set by the harness, not by a plugin")
        cwd = check.text(value.get("cwd", ""), f"{field}.cwd")
        if (
            cwd
            and not cwd.startswith(("./", _ROOT_VAR + "/", _DATA_VAR + "/"))
            and cwd
            not in (
                _ROOT_VAR,
                _DATA_VAR,
            )
        ):
            raise ConfigError(
                f"{field}.cwd: ./-relative, or rooted in ${{PLUGIN_ROOT}} or ${{PLUGIN_DATA}}, "
                f"got {cwd!r}"
            )
        return ServerDef(
            "stdio",
            command=check.text(value["command"], f"{field}.command", empty=False),
            args=tuple(check.texts(value.get("args", []), f"{field}.args")),
            env=env,
            cwd=cwd,
        )
    if "url" not in value:
        raise ConfigError(f"{field}.url: missing")
    return ServerDef(
        kind,
        url=check.text(value["url"], f"{field}.url", empty=False),
        headers=_strings(value.get("headers", {}), f"{field}.headers"),
    )


def _strings(value: Any, field: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise check.refuse(field, "an object of strings", value)
    return tuple((str(key), check.text(item, f"{field}.{key}")) for key, item in value.items())


# --- containment and expansion ---------------------------------------------------------------


def contained(path: Path, root: Path) -> Path:
    """``path`` resolved (its links followed), inside ``root``; else ComponentError."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ComponentError(f"{path} is outside {root} (a plugin's paths stay inside it)")
    return resolved


def expand(value: str, root: Path, data: Path) -> str:
    """``${PLUGIN_ROOT}`` and ``${PLUGIN_DATA}`` expanded; nothing else is."""
    return value.replace(_ROOT_VAR, str(root)).replace(_DATA_VAR, str(data))


def resolve_cwd(cwd: str, root: Path, data: Path) -> Path:
    if cwd.startswith(_DATA_VAR):
        return contained(Path(expand(cwd, root, data)), data)
    if cwd.startswith(_ROOT_VAR):
        return contained(Path(expand(cwd, root, data)), root)
    return contained(root / cwd, root)


def server_settings(
    name: str,
    server: ServerDef,
    root: Path,
    data: Path,
    *,
    origin: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> McpServerSettings:
    """The connection settings of ``server`` (ComponentError when it cannot load): paths
    resolved inside ``root`` (its plugin's directory, or a skill's) or ``data`` (its data
    directory, made when missing), the two variables expanded where they may be."""
    if server.type == "sse":
        raise ComponentError("legacy HTTP+SSE servers are not supported (use streamable-http)")
    if server.type == "streamable-http":
        try:
            url = check.url(server.url, f"{name}.url")
        except ConfigError as exc:
            raise ComponentError(str(exc)) from None
        return McpServerSettings(
            name=name,
            url=url,
            headers=server.headers,
            timeout_s=timeout_s,
            annotated=True,
            origin=origin,
        )
    command = server.command
    if "${" in command:
        raise ComponentError(f"command {command!r}: variables do not expand in command")
    if command.startswith("./"):
        command = str(contained(root / command, root))
    root, data = root.resolve(), data.resolve()
    try:
        data.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ComponentError(f"its data directory {data} cannot be made ({exc.strerror})") from None
    env = tuple((key, expand(value, root, data)) for key, value in server.env)
    return McpServerSettings(
        name=name,
        command=(command, *(expand(arg, root, data) for arg in server.args)),
        env=(*env, (PLUGIN_ROOT, str(root)), (PLUGIN_DATA, str(data))),
        cwd=str(resolve_cwd(server.cwd, root, data)) if server.cwd else "",
        timeout_s=timeout_s,
        annotated=True,
        origin=origin,
    )


def plugin_data(base: Path, plugin: str) -> Path:
    """A plugin's data directory (``${PLUGIN_DATA}``): ``<plugin_data>/<plugin name>``."""
    return Path(os.path.expanduser(str(base))) / plugin
