"""The running service around the core: store, bus, executors, followers, recovery."""

from accord.engine.engine import Engine, EngineConfig, StreamItem

__all__ = ["Engine", "EngineConfig", "StreamItem"]
