"""accord: a fast, durable A2A 1.0 platform for Python.

``accord.asgi(settings)`` is the whole server as an ASGI app to mount in a Starlette or FastAPI
application, ``accord.lifespan(*apps)`` runs them there (docs/server.md); the packages below
hold the rest (the README's table).
"""

from __future__ import annotations

from typing import Any

from accord._version import __version__

__all__ = ["__version__", "asgi", "lifespan"]


def __getattr__(name: str) -> Any:
    # Imported when first used: ``import accord`` (the CLI's start among others) stays light.
    if name in ("asgi", "lifespan"):
        from accord import app

        return getattr(app, name)
    raise AttributeError(f"module 'accord' has no attribute {name!r}")
