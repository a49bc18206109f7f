"""The executor API agents are written against, and the built-in agents."""

from accord.agents._api import (
    AgentError,
    Executor,
    ExecutorFunction,
    RequestContext,
    TaskHandle,
    WrongStateError,
)

__all__ = [
    "AgentError",
    "Executor",
    "ExecutorFunction",
    "RequestContext",
    "TaskHandle",
    "WrongStateError",
]
