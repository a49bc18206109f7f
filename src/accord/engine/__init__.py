"""The running service around the core: store, bus, executors, followers, recovery."""

from accord.engine.engine import Engine, EngineConfig
from accord.engine.streams import StreamItem

__all__ = ["Engine", "EngineConfig", "StreamItem"]
