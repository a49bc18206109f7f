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
from typing import Any, Literal, Protocol, runtime_checkable

from accord.core import Caller, Outcome, TaskRecord
from accord.core.intake import Admit as Admit
from accord.core.intake import Divert as Divert
from accord.core.intake import Verdict as Verdict
from accord.errors import AccordError
from accord.wire import Artifact, Message, Part, SendMessageRequest, Task


class AgentError(AccordError):
    """An agent used the handle in a way the protocol does not allow."""


class WrongStateError(AgentError):
    """The lifecycle has no such move from the task's current state; nothing changed."""

    def __init__(self, message: str, state: str) -> None:
        super().__init__(message)
        self.state = state


class TurnEndedError(AgentError):
    """Someone else ended this turn (a participant's completion, a cancel, a move by another
    node or a remote worker): the run's moves are refused from here on; nothing changed."""


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


Decision = Callable[[TaskRecord | None, int], Outcome]


class TaskHandle(Protocol):
    """The agent commands, bound to one task. ``metadata`` on a status move is the status
    update's own (an extension's annotation of this status)."""

    @property
    def task_id(self) -> str: ...

    @property
    def context_id(self) -> str: ...

    async def start_working(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None: ...

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

    async def require_input(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None: ...

    async def require_auth(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None: ...

    async def complete(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None: ...

    async def fail(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None: ...

    async def reject(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None: ...

    async def reply(self, message: MessageLike) -> None:
        """Answer with a direct message and create no task (only as the first answer to a
        message that does not continue a task)."""
        ...

    async def note(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        """A status update in the task's current state (a message that moves nothing)."""
        ...

    async def set_metadata(self, metadata: dict[str, Any]) -> None:
        """Replace Task.metadata (streams and push get the task with it)."""
        ...

    async def journal(self, data: dict[str, Any]) -> int:
        """Record ``data`` in the task's log as the agent's own (not streamed, not in the
        snapshot), durable on return; its sequence number."""
        ...

    async def journal_entries(
        self, after_seq: int = 0, *, since_working: bool = False
    ) -> list[tuple[int, dict[str, Any]]]:
        """The agent's records after ``after_seq``, with their sequence numbers, in order
        (``since_working``: only those written since the task last moved into WORKING from
        another state — the current stretch of work, whichever message started it)."""
        ...

    async def current(self) -> Task:
        """The task as it stands now, with what this run (and any other) decided so far."""
        ...

    async def decide(self, decide: Decision) -> Outcome:
        """Apply a core decision (``decide(record, now_ms) -> Outcome``, as accord.core's
        commands are) and wait until it is durable. It is decided again, against the task as
        stored, when another writer (another node) changed the task first."""
        ...

    async def flush(self) -> None:
        """Wait until everything emitted so far is durable."""
        ...

    async def create_task(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        message: Message | None = None,
        context_id: str | None = None,
        then: Decision | None = None,
        task_id: str | None = None,
    ) -> Task:
        """Open a new task of this agent in this task's tenant and (unless ``context_id``)
        context: SUBMITTED, with ``metadata`` as its Task.metadata and ``message``, if any,
        as its first history message; ``then`` decides its first moves (parking it until a
        client's first message, say) in the same append. No executor runs on it: a message
        sent to it does. ``task_id`` names it (default: a new id; a sub-task is named after
        its parent). This task, if new, is stored first. Durable on return; returns the
        new task (AgentError when it cannot be created, e.g. over the tenant's task limit,
        or a task of that id exists)."""
        ...

    async def get_task(self, task_id: str) -> Task | None:
        """Another task of this task's tenant as it stands now (None when there is none)."""
        ...


ExecutorFunction = Callable[[RequestContext, TaskHandle], Awaitable[None]]


# --- intake: judging a message before it is stored ---------------------------------------


# Admit, Divert and Verdict: accord.core.intake (the pure decision they are part of).

# What an agent's access check is asked about an existing task.
Access = Literal["read", "subscribe", "cancel", "push-config"]


@runtime_checkable
class Executor(Protocol):
    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None: ...

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None: ...


@runtime_checkable
class Intake(Protocol):
    """Optional methods of an :class:`Executor` object that judges what reaches it.

    ``intake`` sees every SendMessage before anything of it is stored: the request, the task
    it continues (None for a new task) and the authenticated caller. It raises
    :class:`~accord.wire._errors.A2AError` to refuse (nothing is stored; the client gets that
    error), or returns :class:`Admit` or :class:`Divert`. It must be pure: it may be asked
    again when another writer changed the task in between.

    ``access`` is asked before any other operation on an existing task (GetTask, ListTasks,
    SubscribeToTask, CancelTask, the push-config operations) and raises to refuse; a task
    the caller must not know of is refused with the task-not-found error, so that it looks
    exactly like an unknown id. ListTasks leaves out the tasks it refuses."""

    def intake(self, request: SendMessageRequest, task: Task | None, caller: Caller) -> Verdict: ...

    def access(self, operation: Access, task: Task, caller: Caller) -> None: ...


@runtime_checkable
class CancelRecord(Protocol):
    """An optional method of an :class:`Executor` object: what a cancel records of the task.

    ``canceled_metadata`` is asked inside the decision of every cancel (CancelTask: a
    client's once ``access`` let it, or one the server decides itself), with the task as it
    then stands, and returns the task's metadata as the cancel leaves it (None: unchanged),
    logged as a task snapshot in the same append as the CANCELED status. A terminal task
    never changes again, so what its metadata says of things the cancel ends (a harness's
    references to the sub-tasks it cancels with the task) is written then or never. It must
    be pure: it is asked again when another writer changed the task in between."""

    def canceled_metadata(self, task: Task) -> dict[str, Any] | None: ...


# --- gates: the engine's own judgement of every message, before any agent's intake -------


@dataclass(frozen=True, slots=True)
class Screened:
    """A gate's judgement of one message, from what the gate looked up in ``screen``.

    ``judge(task)`` is asked inside the decision with the task the message continues as it
    then stands (None for a new task). It must be pure: it is asked again when another writer
    changed the task in between. It raises :class:`~accord.wire._errors.A2AError` to refuse
    (nothing is stored; the client gets that error), returns a :class:`Divert` to take the
    message from the agent (the handler runs instead of the agent's intake and execute, on a
    new task too: its first move creates the task, or it ``reply()``s), or None to pass the
    message on. ``admitted(task_id)``, when given, is awaited once the message was taken."""

    judge: Callable[[Task | None], Divert | None]
    admitted: Callable[[str], Awaitable[None]] | None = None


@dataclass(frozen=True, slots=True)
class Answered:
    """A gate's answer to a message that is the gate's business alone (a protocol message
    between servers, such as a contract notice): the client gets ``message`` as the direct
    reply (the one item of a stream), and nothing else happens — no task is created and
    nothing of the request is stored, whatever its configuration (returnImmediately, an
    inline push config, historyLength) or its context id; no agent and no later gate sees
    it. A retry is screened again."""

    message: Message


class Gate(Protocol):
    """An engine-level check of every SendMessage on every binding, whatever the agent
    (``Engine.add_gate``). ``screen`` may do I/O (look something up); it returns None for a
    message it has no opinion on — which must cost next to nothing, every message pays it —
    a :class:`Screened` judgement, or an :class:`Answered` reply; it may raise A2AError to
    refuse outright."""

    async def screen(
        self, request: SendMessageRequest, caller: Caller
    ) -> Screened | Answered | None: ...
