"""Tasks with an executor running in this process, and the handle their executor drives.

While an executor runs, the engine keeps the task's latest decided record here so the agent's
commands are decided without a store read and appended back to back (the store's group commit
then makes them durable together). Followers still read only what is durable.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accord.agents import AgentError, Decision, MessageLike, RequestContext
from accord.core import Event, JournalEntry, Outcome, PushConfigRecord, TaskRecord, leaves_work
from accord.core import agent as agent_commands
from accord.engine._errors import message_lost
from accord.wire import Artifact, Message, Part, Role, Task

if TYPE_CHECKING:
    from accord.core import RequestKey
    from accord.engine._engine import Engine
    from accord.store import TaskStore


# Per live task: a turn's few events; a follower further behind reads the store (events can
# be large, so the count stays small).
RECENT_EVENTS = 16
JOURNAL_BATCH = 256  # events read from the store at a time when reading a journal


@dataclass(eq=False)
class Run:
    """One execution of the agent for one incoming message."""

    ctx: RequestContext
    handle: LiveHandle
    start: TaskRecord  # the task as this turn began (new, or with the message appended)
    task: asyncio.Task[None] | None = None
    reply: Message | None = None
    ending: bool = False  # the agent is done; the run is making its last writes durable
    # Cut by an interrupting message or by another writer's end of its turn: its client's
    # turn ends when that turn's end is in the log, not when the run stops.
    cut: bool = False
    finished: bool = False


@dataclass(eq=False)
class LiveTask:
    task_id: str
    tenant: str
    record: TaskRecord | None  # latest decided; None means "reload from the store"
    pending: Outcome | None = None  # a creation not yet appended (the agent has not answered)
    pending_configs: list[PushConfigRecord] = field(default_factory=list)  # stored with it
    # A message continuing the task, decided and held for the run's first command (one
    # append for both, on a store only this process writes): the record its append ends
    # with; 0 when no message waits so. Until ``durable`` reaches it, the message is not
    # stored, and a failed append loses it (as a new task's creation).
    message_seq: int = 0
    runs: set[Run] = field(default_factory=set)
    last_commit: asyncio.Future[None] | None = None
    sending: int = 0  # appends handed to the store and not answered yet
    durable: TaskRecord | None = None  # the latest record the store has acknowledged
    batch: PendingWrite | None = None  # appends decided this loop turn, written as one
    broken: BaseException | None = None
    # Appends the store failed to take (unreachable, disk full), held in order until it takes
    # them again (accord.engine._outage); None while the store answers.
    stall: Stall | None = None
    # The newest acknowledged events, consecutive and ending at ``durable``, so that this
    # process's streams of the task follow it without reading back what it just wrote.
    recent: list[Event] = field(default_factory=list)

    @property
    def created(self) -> bool:
        return self.pending is None

    @property
    def held(self) -> bool:
        """A message waits, decided and unwritten, for the run's first command."""
        return self.batch is not None and self.batch.held

    @property
    def holds_message(self) -> bool:
        """A message held for the run's first command is not durable (yet, or at all)."""
        durable = self.durable
        return self.message_seq > 0 and (durable is None or durable.seq < self.message_seq)

    @property
    def writing(self) -> bool:
        """An append of this process is decided and not yet acknowledged (its
        acknowledgement, or its failure, wakes the task's followers)."""
        return self.batch is not None or (
            self.last_commit is not None and not self.last_commit.done()
        )

    def acknowledged(self, record: TaskRecord, events: list[Event]) -> None:
        """The store holds ``events``, ending with ``record``."""
        if self.durable is not None and record.seq <= self.durable.seq:
            return  # older than what is known (an acknowledgement that came late)
        recent = self.recent
        if not recent or not events or recent[-1].seq + 1 != events[0].seq:
            recent = []  # a gap (another writer's append): the store has the rest
        recent = [*recent, *events]
        self.recent = recent[-RECENT_EVENTS:]
        self.durable = record

    def events_after(self, seq: int) -> list[Event] | None:
        """The durable events after ``seq`` as far as they are known here (an empty list when
        there are none yet), or None when only the store can tell."""
        recent = self.recent
        durable = self.durable
        if not recent or durable is None or recent[-1].seq != durable.seq:
            return None
        if seq >= durable.seq:
            return []
        first = recent[0].seq
        if seq + 1 < first:
            return None
        return recent[seq + 1 - first :]


@dataclass(eq=False)
class PendingWrite:
    """Consecutive appends to one task, merged into one store append (one snapshot write)."""

    expected_seq: int
    record: TaskRecord
    events: list[Event]
    configs: list[PushConfigRecord]
    done: asyncio.Future[None]
    requests: list[RequestKey] = field(default_factory=list)  # safe retries' keys
    # A continued message held for the run's first command: written once one comes (or the
    # run ends, or something must be durable), not at the end of this loop turn.
    held: bool = False


@dataclass(eq=False)
class Stall:
    """A live task's appends the store failed, or that followed one that failed: written
    again, in order, as soon as the store answers (accord.engine._outage). The run's next
    agent command waits for that (``cleared``), so a paused agent holds at most what it
    decided before it learned of the failure."""

    since: float  # (monotonic) when the first of them failed
    error: BaseException  # the latest failure
    writes: list[PendingWrite] = field(default_factory=list)  # by expected_seq
    cleared: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, write: PendingWrite) -> None:
        """Keep ``write`` in its place (appends that were on their way answer in any order)."""
        writes = self.writes
        at = len(writes)
        while at and writes[at - 1].expected_seq > write.expected_seq:
            at -= 1
        writes.insert(at, write)


async def durable_record(
    store: TaskStore, live: LiveTask, run: Run, tenant: str
) -> TaskRecord | None:
    """The task as the store holds it, for the client waiting on ``run`` (None: not stored
    yet); raises what that client is told when the task's creation could not be stored."""
    record = live.durable
    # Not read while the creation waits for the agent (the store cannot have it), nor while
    # an append is on its way (what it makes durable comes with its acknowledgement).
    if (record is None or record.seq < run.start.seq) and live.created and not live.writing:
        record = await store.get_task(live.task_id, tenant)
    failed = message_lost(live) if record is None or record.seq < live.message_seq else None
    if failed is not None:
        raise failed
    return record


def as_message(value: MessageLike, task_id: str = "", context_id: str = "") -> Message | None:
    """A status or reply message from what an agent author passed."""
    if value is None:
        return None
    if isinstance(value, Message):
        return value
    parts = [Part(text=value)] if isinstance(value, str) else list(value)
    return Message(
        message_id=os.urandom(16).hex(),
        role=Role.AGENT,
        parts=parts,
        task_id=task_id,
        context_id=context_id,
    )


class LiveHandle:
    """The :class:`~accord.agents._api.TaskHandle` of a run: each method is one agent command."""

    def __init__(self, engine: Engine, live: LiveTask, ctx: RequestContext) -> None:
        self._engine = engine
        self._live = live
        self._ctx = ctx
        # The run this handle belongs to, held weakly: the run holds its handle, and a cycle
        # would keep every run's objects (task, context, live record) until the garbage
        # collector's next pass, whose cost grows with what it finds.
        self._run: weakref.ReferenceType[Run] | None = None

    def bind(self, run: Run) -> None:
        self._run = weakref.ref(run)

    @property
    def run(self) -> Run:
        """The run this handle belongs to (AgentError once it is gone)."""
        run = self._run() if self._run is not None else None
        if run is None:
            raise AgentError(f"the run on task {self.task_id} has ended")
        return run

    @property
    def task_id(self) -> str:
        return self._live.task_id

    @property
    def context_id(self) -> str:
        return self._ctx.context_id

    def _move(
        self, move: str, message: MessageLike, metadata: dict[str, Any] | None
    ) -> Awaitable[Outcome]:
        status = as_message(message, self.task_id, self.context_id)
        return self._engine.agent_act(
            self._live,
            lambda record, now: agent_commands.move(
                record, move, now, status, self.task_id, metadata
            ),
        )

    async def start_working(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        await self._move("work", message, metadata)

    async def require_input(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        await self._move("require_input", message, metadata)

    async def require_auth(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        await self._move("require_auth", message, metadata)

    async def complete(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        await self._move("complete", message, metadata)

    async def fail(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        await self._move("fail", message, metadata)

    async def reject(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        await self._move("reject", message, metadata)

    async def note(
        self, message: MessageLike = None, *, metadata: dict[str, Any] | None = None
    ) -> None:
        status = as_message(message, self.task_id, self.context_id)
        await self._engine.agent_act(
            self._live,
            lambda record, now: agent_commands.note(record, now, status, self.task_id, metadata),
        )

    async def set_metadata(self, metadata: dict[str, Any]) -> None:
        await self._engine.agent_act(
            self._live,
            lambda record, now: agent_commands.set_metadata(record, metadata, now, self.task_id),
        )

    async def journal(self, data: dict[str, Any]) -> int:
        outcome = await self.decide(
            lambda record, now: agent_commands.journal(record, data, now, self.task_id)
        )
        return outcome.events[-1].seq

    async def journal_entries(
        self, after_seq: int = 0, *, since_working: bool = False
    ) -> list[tuple[int, dict[str, Any]]]:
        found: list[tuple[int, dict[str, Any]]] = []
        store = self._engine.store
        while events := await store.read_events(self.task_id, after_seq, JOURNAL_BATCH):
            for event in events:
                after_seq = event.seq
                if isinstance(event.body, JournalEntry):
                    found.append((event.seq, event.body.data))
                elif since_working and leaves_work(event):
                    found.clear()
        return found

    async def current(self) -> Task:
        live = self._live
        record = live.record or (live.pending.record if live.pending is not None else None)
        if record is None:
            record = self._live.record = await self._engine.store.get_task(self.task_id, None)
        if record is None:  # (only a new task whose creation was never stored)
            raise AgentError(f"task {self.task_id} is not stored")
        return record.task

    async def decide(self, decide: Decision) -> Outcome:
        return await self._engine.apply_in_run(self._live, decide)

    async def create_task(
        self,
        *,
        metadata: dict[str, Any] | None = None,
        message: Message | None = None,
        context_id: str | None = None,
        then: Decision | None = None,
        task_id: str | None = None,
    ) -> Task:
        if self._live.pending is not None or self._live.holds_message:
            await self._engine.commit_created(self.task_id)  # the opener is stored first
        record = await self._engine.open_task(
            self._live.tenant,
            context_id or self.context_id,
            metadata=metadata,
            message=message,
            then=then,
            task_id=task_id,
        )
        return record.task

    async def get_task(self, task_id: str) -> Task | None:
        record = await self._engine.read_task(task_id, self._live.tenant)
        return record.task if record is not None else None

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
        if artifact is None:
            if parts is None:
                if text is None:
                    raise AgentError("update_artifact needs an artifact, parts or text")
                parts = [Part(text=text)]
            if append and not artifact_id:
                raise AgentError("appending a chunk needs the artifact_id of its artifact")
            artifact = Artifact(
                artifact_id=artifact_id or os.urandom(16).hex(), parts=parts, name=name
            )
        chosen = artifact

        def decide(record: TaskRecord | None, now: int) -> Outcome:
            return agent_commands.update_artifact(
                record,
                chosen,
                now,
                append_parts=append,
                last_chunk=last_chunk,
                task_id=self.task_id,
            )

        await self._engine.agent_act(self._live, decide)
        return chosen.artifact_id

    async def reply(self, message: MessageLike) -> None:
        reply = as_message(message, context_id=self.context_id)
        if reply is None:
            raise AgentError("reply needs a message")
        self._engine.agent_reply(self._live, self.run, reply)

    async def flush(self) -> None:
        self._engine.release_held(self._live)
        commit = self._live.last_commit
        if commit is not None:
            await asyncio.shield(commit)
