"""The harness's moves on a task, and ``task.state_changed``.

Every state change the harness makes (a turn starting, parking, a completion, a command's
answer parking a new conversation, a child created) goes through :class:`Moves`; when
``task.state_changed`` is hooked, each change is told to the hooks once it is durable, all
three phases in order. It is a notification: the change stands whatever the hooks answer
(an abort is logged). Unhooked, a move costs what it did before hooks existed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from accord.agents import Decision, TaskHandle
from accord.core import Event, Outcome, TaskRecord
from accord.harness._wire import STATUS_KEY, Role, TaskExtension
from accord.harness.core._subtasks import state_name
from accord.harness.hooks._base import HookAbort
from accord.harness.hooks._operations import TASK_STATE_CHANGED, TaskStateChanged
from accord.harness.hooks._registry import Hooks
from accord.wire import UNSET, Task, TaskState, TaskStatus, TaskStatusUpdateEvent

log = logging.getLogger("accord.harness.hooks")


class Decides(Protocol):
    """What the harness's moves need of a task: a run's TaskHandle, or a task decided on
    from outside any run (accord.harness.delegation._stored)."""

    @property
    def task_id(self) -> str: ...

    async def current(self) -> Task: ...

    async def decide(self, decide: Decision) -> Outcome: ...


@dataclass(frozen=True, slots=True)
class Who:
    """Whom an operation is for: every hook context names them."""

    sender: str
    role: Role | None = None
    correlation_id: str = ""

    @classmethod
    def on(cls, extension: TaskExtension | None, sender: str, correlation_id: str = "") -> Who:
        """``sender`` with their role on the task ``extension`` describes."""
        role = extension.role_of(sender) if extension is not None else None
        return cls(sender, role, correlation_id)

    def fields(self, task_id: str) -> dict[str, Any]:
        return {
            "task_id": task_id,
            "sender": self.sender,
            "sender_role": self.role,
            "correlation_id": self.correlation_id,
        }


class Moves:
    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        # Per task, the telling of its latest changes (the next one waits for it).
        self._telling: dict[str, asyncio.Future[None]] = {}

    async def decide(self, task: Decides, decision: Decision, who: Who) -> Outcome:
        """``task.decide(decision)``, then ``task.state_changed`` for each change it made."""
        if not self.hooks.wants(TASK_STATE_CHANGED):
            return await task.decide(decision)
        decided_on: list[TaskRecord | None] = [None]

        def observed(record: TaskRecord | None, now_ms: int) -> Outcome:
            decided_on[0] = record  # (the last call is the one that was stored)
            return decision(record, now_ms)

        # Queued before the decision is made: whoever waits for the change to be told
        # (drain) after seeing it durable finds it queued.
        decided: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()

        def told() -> list[TaskStateChanged]:
            before = decided_on[0]
            previous = before.state if before is not None else None
            events = decided.result().events
            return self._contexts(task.task_id, previous, statuses(events), who)

        job = self._queue(task.task_id, decided, told)
        try:
            outcome = await task.decide(observed)
        except BaseException:
            decided.cancel()
            raise
        decided.set_result(outcome)
        await asyncio.shield(job)
        return outcome

    async def start_turn(self, task: TaskHandle, who: Who) -> None:
        """WORKING: the turn begins, without waiting for the move to be durable (it is told
        to the hooks once it is, while the turn goes on)."""
        if not self.hooks.wants(TASK_STATE_CHANGED):
            await task.start_working()
            return
        before = (await task.current()).status.state
        await task.start_working()
        after = await task.current()
        durable = asyncio.ensure_future(task.flush())
        changes = [(after.status, after.metadata)]
        self._queue(
            task.task_id, durable, lambda: self._contexts(task.task_id, before, changes, who)
        )

    async def created(self, task: Task, who: Who) -> None:
        """A task the harness opened (a child), moved on from SUBMITTED at its creation."""
        if self.hooks.wants(TASK_STATE_CHANGED):
            changes = [(task.status, task.metadata)]
            contexts = self._contexts(task.id, TaskState.SUBMITTED, changes, who)
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            await asyncio.shield(self._queue(task.id, done, lambda: contexts))

    async def drain(self) -> None:
        """Wait until every change decided so far has been told."""
        while self._telling:
            await asyncio.gather(*self._telling.values(), return_exceptions=True)

    def _queue(
        self,
        task_id: str,
        decided: asyncio.Future[Any],
        contexts: Callable[[], list[TaskStateChanged]],
    ) -> asyncio.Future[None]:
        """Tell ``contexts()`` once ``decided`` is, after the task's earlier changes. The
        telling outlives the run that asked for it (a turn cut by a completion still tells
        of its parking)."""
        job = asyncio.ensure_future(self._tell(self._telling.get(task_id), decided, contexts))
        self._telling[task_id] = job
        job.add_done_callback(partial(self._told, task_id))
        return job

    async def _tell(
        self,
        before: asyncio.Future[None] | None,
        decided: asyncio.Future[Any],
        contexts: Callable[[], list[TaskStateChanged]],
    ) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        await asyncio.gather(decided, return_exceptions=True)
        if decided.cancelled() or decided.exception() is not None:
            return  # not made, or not durable: nothing to tell
        for context in contexts():
            try:
                await self.hooks.perform(TASK_STATE_CHANGED, context)
            except HookAbort as abort:
                log.warning("task.state_changed on %s: %s (the change stands)",
                            context.task_id, abort)  # fmt: skip

    def _told(self, task_id: str, job: asyncio.Future[None]) -> None:
        if self._telling.get(task_id) is job:
            del self._telling[task_id]

    @staticmethod
    def _contexts(
        task_id: str,
        previous: TaskState | int | None,
        statuses: list[tuple[TaskStatus, Any]],
        who: Who,
    ) -> list[TaskStateChanged]:
        """A context for every state change among ``statuses`` (each a status and the
        metadata it came with; ``previous``: the state before them)."""
        contexts = []
        for status, metadata in statuses:
            state = status.state
            if state == previous:
                continue
            value = metadata.get(STATUS_KEY) if isinstance(metadata, dict) else None
            message = status.message
            contexts.append(
                TaskStateChanged(
                    **who.fields(task_id),
                    previous=state_name(previous) if previous is not None else "",
                    state=state_name(state),
                    sub_state=value.get("sub_state") if isinstance(value, dict) else None,
                    text=message.text() if message is not UNSET else "",
                )
            )
            previous = state
        return contexts


def statuses(events: list[Event]) -> list[tuple[TaskStatus, Any]]:
    """The statuses ``events`` set, with their metadata (a task snapshot's is the task's)."""
    found: list[tuple[TaskStatus, Any]] = []
    for event in events:
        body = event.body
        if isinstance(body, TaskStatusUpdateEvent | Task):
            found.append((body.status, body.metadata))
    return found
