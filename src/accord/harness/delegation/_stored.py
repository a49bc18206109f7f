"""A task the harness decides on from outside any run (a parent told of its sub-task, a
help request relaying a sub-task's question): the :class:`~accord.harness._moves.Decides`
of the engine's agent commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from accord.agents import AgentError, Decision, WrongStateError
from accord.core import Outcome
from accord.wire import Task

if TYPE_CHECKING:
    from accord.agents import Host


class StoredTask:
    def __init__(self, engine: Host, task_id: str, tenant: str) -> None:
        self.engine = engine
        self.tenant = tenant
        self._task_id = task_id

    @property
    def task_id(self) -> str:
        return self._task_id

    async def current(self) -> Task:
        record = await self.engine.read_task(self._task_id, self.tenant)
        if record is None:
            raise AgentError(f"task {self._task_id} is gone")
        return record.task

    async def decide(self, decide: Decision) -> Outcome:
        """``decide`` against the task as stored, durable on return (AgentError when it is
        refused, e.g. the task ended meanwhile)."""
        outcome = await self.engine.agent_command(self._task_id, self.tenant, decide)
        if not outcome.ok:
            message = outcome.error.message if outcome.error is not None else outcome.name
            if outcome.name == "wrong-state":
                raise WrongStateError(message, str((outcome.payload or {}).get("state", "")))
            raise AgentError(message)
        return outcome
