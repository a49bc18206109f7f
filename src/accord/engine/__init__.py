"""The running service around the core: store, bus, executors, followers, recovery."""

from accord.engine._engine import PAGE_TOKEN_SECRET, Engine, EngineConfig
from accord.engine._errors import failure_error
from accord.engine._remote import Claims, RemoteAgent
from accord.engine._streams import StreamItem

__all__ = [
    "PAGE_TOKEN_SECRET",
    "Claims",
    "Engine",
    "EngineConfig",
    "RemoteAgent",
    "StreamItem",
    "failure_error",
]
