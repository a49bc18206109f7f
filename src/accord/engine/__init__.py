"""The running service around the core: store, bus, executors, followers, recovery."""

from accord.engine._engine import Engine, EngineConfig
from accord.engine._streams import StreamItem

__all__ = ["Engine", "EngineConfig", "StreamItem"]
