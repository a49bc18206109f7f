"""The composition root: settings in, a running application out — the store, the bus, the
engine, the agent and its features, and the bindings that serve them."""

from accord.app._build import build_app
from accord.app._mount import asgi, lifespan
from accord.app._settings import Settings, load

__all__ = [
    "Settings",
    "asgi",
    "build_app",
    "lifespan",
    "load",
]
