"""Plugins: directories in the tiny-harness plugin layout (``plugin.json`` and the namespace
folder's ``hooks.json`` and ``commands.json``) and installed packages declaring an
``accord.plugins`` entry point. See docs/harness.md, "Plugins"."""

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

__all__ = [
    "ENTRY_POINT_GROUP",
    "NAMESPACE",
    "LoadReport",
    "Loading",
    "PluginHost",
    "load_directory",
    "load_entry_point",
    "load_plugins",
]
