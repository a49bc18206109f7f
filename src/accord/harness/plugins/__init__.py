"""Plugins: directories in the tiny-harness plugin layout (``plugin.json``, ``skills/``,
``mcp.json``, and the namespace folder's ``hooks.json``, ``commands.json``, ``prompts/`` and
``systemprompt.md``) and installed packages declaring an ``accord.plugins`` entry point. See
docs/harness.md, "Plugins"."""

from accord.harness.plugins._loader import (
    ENTRY_POINT_GROUP,
    Loading,
    LoadReport,
    PluginHost,
    load_directory,
    load_entry_point,
    load_plugins,
)
from accord.harness.plugins._manifest import NAMESPACE
from accord.harness.plugins._prompts import Prompt, Prompts
from accord.harness.plugins._servers import MCP_SCHEMA_ID, ComponentError

__all__ = [
    "ENTRY_POINT_GROUP",
    "MCP_SCHEMA_ID",
    "NAMESPACE",
    "ComponentError",
    "LoadReport",
    "Loading",
    "PluginHost",
    "Prompt",
    "Prompts",
    "load_directory",
    "load_entry_point",
    "load_plugins",
]
