"""What an agent object may offer besides :class:`~accord.agents._api.Executor` — each an
optional capability, declared here as a runtime-checkable Protocol and found with
``isinstance`` by the engine and the application (docs/executor.md, "Optional capabilities").
An agent offers one by having its methods; nothing is registered.

And what the engine offers the agents and features that work beside it (:class:`Host`): the
operations they need, never the engine itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from accord.agents._api import ExecutorFunction, Gate, RequestContext, TaskHandle
from accord.core import Caller, Outcome, TaskRecord
from accord.store import TaskStore
from accord.wire import AgentExtension, Message, SendMessageRequest, Task

if TYPE_CHECKING:  # (the HTTP request of an agent's own endpoint: accord.server's types)
    import asyncio

    from accord.server import Request, Send


@runtime_checkable
class Resumable(Protocol):
    """Runs the tasks a dead process left SUBMITTED or WORKING instead of their failing (the
    engine's recovery, and ``Host.run_task``): a run as for the task's newest message."""

    async def resume(self, ctx: RequestContext, task: TaskHandle) -> None: ...


@runtime_checkable
class Lifespan(Protocol):
    """Brackets the engine: ``startup`` once the store is open (before recovery, which may
    resume its runs), ``shutdown`` when the engine stops."""

    async def startup(self) -> None: ...

    async def shutdown(self) -> None: ...


@runtime_checkable
class ReplaysOnSubscribe(Protocol):
    """SubscribeToTask on one of the agent's tasks answers the Task, then replays the task's
    log before following it live, so that a client rendering events sees what happened
    (tiny-harness's clients do): the streamed events among the newest
    ``subscribe_replay(task)`` events of its log (0: none, the stream follows from the
    Task). A subscription resumed from a ``Last-Event-ID`` replays nothing: it goes on after
    that event."""

    def subscribe_replay(self, task: Task) -> int: ...


@runtime_checkable
class ActsAfterFirstMove(Protocol):
    """Acts outside accord on a message continuing one of its tasks only once a command of
    the run is durable (``flush``, ``decide``, ``journal``): the engine may then store such a
    message with the run's first command, in one append, instead of before the run starts —
    on a store only this process writes (memory, SQLite), where no other writer can refuse
    it (docs/executor.md, "Optional capabilities"). ``acts_after_first_move`` True opts in."""

    acts_after_first_move: bool


@runtime_checkable
class DeclaresMediaTypes(Protocol):
    """The media types the agent takes and gives, for its card (under the settings' [card]
    and its module's ``card``)."""

    input_modes: Sequence[str]
    output_modes: Sequence[str]


@runtime_checkable
class CardExtensions(Protocol):
    """The A2A extensions the agent declares on its card."""

    def card_extensions(self) -> list[AgentExtension]: ...


@runtime_checkable
class Endpoint(Protocol):
    """An HTTP endpoint beside A2A: the paths it answers, and answering them."""

    def handles(self, path: str) -> bool: ...

    async def handle(self, request: Request, send: Send) -> None: ...


@runtime_checkable
class ServesEndpoint(Protocol):
    """Serves an HTTP endpoint of its own beside A2A (the harness's doorbell for pushes from
    the agents it delegates to), taking bodies of at most ``max_body`` bytes; None: none."""

    def inbound_endpoint(self, max_body: int) -> Endpoint | None: ...


@runtime_checkable
class ContractActions(Protocol):
    """Says which action of an interaction contract a message asks for (None: it cannot
    tell), beside what the message declares (docs/contracts.md, "Enforcement")."""

    def contract_action(self, message: Message) -> str | None: ...


class Host(Protocol):
    """What the engine offers an agent (or a feature) that works beside it: reading and
    deciding tasks, running work on them, and hearing of what happens — the operations it
    needs, never the engine itself. The store is the one the engine runs on (a feature keeps
    its own tables there through the store's extension seam)."""

    @property
    def store(self) -> TaskStore: ...

    def clock(self) -> int:
        """Now, in milliseconds since the epoch (the engine's clock)."""

    @property
    def recovery_interval_s(self) -> float:
        """How often the engine looks for the tasks of dead nodes (several nodes)."""

    async def read_task(self, task_id: str, tenant: str) -> TaskRecord | None:
        """A task as it stands now, in this process or in the store (None: none)."""

    def running(self, task_id: str) -> bool:
        """Whether a run works on the task in this process."""

    async def run_task(self, task_id: str, tenant: str) -> bool:
        """Start the agent's run (its ``resume``) on a task nobody runs."""

    async def run_stored(
        self, record: TaskRecord, message: Message, body: ExecutorFunction
    ) -> bool:
        """Run ``body`` on a message stored on the task already (what a dead process stored
        and did not handle); False when another node holds the task."""

    async def send_message(
        self,
        request: SendMessageRequest,
        caller: Caller,
        extensions: list[str] | None = None,
        idempotency_key: str = "",
    ) -> Task | Message:
        """SendMessage, as a client's (a harness telling a parent of its child's end)."""

    async def cancel_task(self, task_id: str, caller: Caller, *, guard: bool = True) -> Task:
        """CancelTask, as a client's (``guard=False``: the server's own decision)."""

    async def agent_command(
        self, task_id: str, tenant: str, decide: Callable[[TaskRecord | None, int], Outcome]
    ) -> Outcome:
        """An agent command on a task no run of this process holds: decided against its
        latest record and made durable."""

    def add_gate(self, gate: Gate) -> None:
        """Screen every SendMessage with ``gate``, before the agent's own intake."""

    def add_commit_listener(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(task_id)`` after every durable append in this process."""

    def add_remote_listener(self, listener: Callable[[str | None], None]) -> None:
        """Call ``listener(task_id)`` when another node appends to a task (None: to any,
        after a reconnect); never called on a single-node store."""

    def on_start(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Await ``hook`` at the end of every engine start, with the store open."""

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` beside the engine; it is cancelled when the engine stops."""


@runtime_checkable
class WorksBesideEngine(Protocol):
    """Works beside the engine that runs it (the harness: following sub-tasks, delivering
    channel messages, judging messages at the gate): attached once, before the engine
    starts, to the engine's :class:`Host`."""

    def attach_engine(self, host: Host) -> None: ...


class MediaFiles(Protocol):
    """The files of a task's messages, as the media feature keeps them (accord.media)."""

    @property
    def text_chars(self) -> int:
        """Of a text file, how many characters a model reads."""

    async def load(self, tenant: str, task_id: str, media_id: str) -> tuple[str, str, bytes] | None:
        """The media type, file name and bytes of file ``media_id`` of the task (None: no
        such file of that task)."""


@runtime_checkable
class ReadsMedia(Protocol):
    """Reads the files of its tasks' messages (the harness shows images to a model): handed
    the media feature's files once, before the engine starts, when media is on."""

    def attach_media(self, files: MediaFiles) -> None: ...
