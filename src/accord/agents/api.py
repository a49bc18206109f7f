"""What an agent author writes against.

An agent is either an async function ``async def agent(ctx, task) -> None`` or an object with
``async execute(ctx, task)`` and ``async cancel(ctx, task)``. ``ctx`` says what was asked
(:class:`RequestContext`); ``task`` (:class:`TaskHandle`) is how the agent answers: its methods
are the agent commands of the core. A move the lifecycle does not allow raises
:class:`WrongStateError` and changes nothing.

Example::

    async def shout(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await task.update_artifact(text=ctx.text.upper(), last_chunk=True)
        await task.complete()
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from accord.core.caller import Caller
from accord.wire.model import Artifact, Message, Part, Task


class AgentError(Exception):
    """An agent used the handle in a way the protocol does not allow."""


class WrongStateError(AgentError):
    """The lifecycle has no such move from the task's current state; nothing changed."""

    def __init__(self, message: str, state: str) -> None:
        super().__init__(message)
        self.state = state


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What the client asked, and who asked.

    ``task`` is the task as it stood when the message arrived if the message continues one
    (its history ends with this message), else None. ``task_id`` / ``context_id`` are the ids
    the task has or will have if the agent answers with a task.
    """

    message: Message
    task_id: str
    context_id: str
    caller: Caller
    task: Task | None = None
    extensions: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.message.text()

    @property
    def tenant(self) -> str:
        return self.caller.tenant


MessageLike = str | Message | list[Part] | None


class TaskHandle(Protocol):
    """The agent commands, bound to one task."""

    @property
    def task_id(self) -> str: ...

    @property
    def context_id(self) -> str: ...

    async def start_working(self, message: MessageLike = None) -> None: ...

    async def update_artifact(
        self,
        artifact: Artifact | None = None,
        *,
        text: str | None = None,
        parts: list[Part] | None = None,
        artifact_id: str | None = None,
        name: str = "",
        append: bool = False,
        last_chunk: bool = False,
    ) -> str:
        """Emit an artifact or a chunk of one; returns its artifactId."""
        ...

    async def require_input(self, message: MessageLike = None) -> None: ...

    async def require_auth(self, message: MessageLike = None) -> None: ...

    async def complete(self, message: MessageLike = None) -> None: ...

    async def fail(self, message: MessageLike = None) -> None: ...

    async def reject(self, message: MessageLike = None) -> None: ...

    async def reply(self, message: MessageLike) -> None:
        """Answer with a direct message and create no task (only as the first answer to a
        message that does not continue a task)."""
        ...

    async def flush(self) -> None:
        """Wait until everything emitted so far is durable."""
        ...


ExecutorFunction = Callable[[RequestContext, TaskHandle], Awaitable[None]]


@runtime_checkable
class Executor(Protocol):
    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None: ...

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None: ...
