"""The HTTP command surface of the seed ``a2a-agent-command-surface``: commands with declared
outcomes, views, and the Agent feed remote workers read (see docs/command-surface.md)."""

from accord.surface._app import SurfaceApp, handles

__all__ = ["SurfaceApp", "handles"]
