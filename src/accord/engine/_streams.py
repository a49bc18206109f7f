"""Streams for clients: the turn of SendStreamingMessage, and SubscribeToTask.

A stream reads only the task's durable log, woken by the bus: nothing is shown before it is
durable, and any number of followers read the same log in bounded batches. While the task runs
in this process its newest acknowledged events are in memory (``LiveTask.recent``) and are
read there; everything else comes from the store.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from accord.bus import LocalBus
from accord.core import Caller, Event, TaskRecord, lifecycle, views
from accord.core import client as client_commands
from accord.engine._live import LiveTask, Run, durable_record
from accord.store import TaskStore
from accord.wire import StreamResponse, Task, TaskState, task_not_found

READ_BATCH = 256


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One element of a stream: the StreamResponse and its log sequence number (None for a
    direct message, which is in no log)."""

    response: StreamResponse
    seq: int | None


class Streams:
    """Follows tasks' logs for the engine. ``live`` is the engine's map of tasks with a run
    in this process (read, never changed here): a turn with no run left ends."""

    def __init__(self, store: TaskStore, bus: LocalBus, live: Mapping[str, LiveTask]) -> None:
        self.store = store
        self.bus = bus
        self.live = live

    async def turn(
        self,
        live: LiveTask,
        run: Run,
        tenant: str,
        history_length: int | None,
        heartbeat: float | None,
    ) -> AsyncIterator[StreamItem | None]:
        """The items of one SendStreamingMessage: the agent's direct reply, or the task as
        this turn began (once durable) and its updates until the turn ends.

        A message that continues an interrupted task begins in that task's INPUT_REQUIRED
        or AUTH_REQUIRED state: the turn ends at the next such status (or a terminal one)
        in the log after the message, never at the state it started in."""
        start = run.start
        with self.bus.subscribe(live.task_id) as sub:
            while True:  # the first item: a reply, or the task as this turn began, once durable
                sub.clear()
                if run.reply is not None:
                    yield StreamItem(StreamResponse(message=run.reply), None)
                    return
                record = await durable_record(self.store, live, run, tenant)
                if record is not None and record.seq >= start.seq:
                    break
                if not await sub.wait(heartbeat):
                    yield None
            yield StreamItem(
                StreamResponse(task=views.present(start.task, history_length)), start.seq
            )
            async for event in self._follow(
                sub,
                live.task_id,
                start.seq,
                until_turn_end=True,
                heartbeat=heartbeat,
                live=live,
                run=run,
            ):
                yield None if event is None else StreamItem(event.stream_response(), event.seq)

    async def _follow(
        self,
        sub: Any,
        task_id: str,
        after_seq: int,
        *,
        until_turn_end: bool,
        heartbeat: float | None = None,
        live: LiveTask | None = None,
        run: Run | None = None,
    ) -> AsyncIterator[Event | None]:
        """Streamed events after ``after_seq``, in order, until the task is terminal (or its
        turn ends); None when ``heartbeat`` seconds pass with nothing new. Reads the log in
        bounded batches (see _read_after), so a slow follower holds no more than one batch.
        The turn of a ``run`` that was cut ends when whoever cut it ends it, in the log."""
        cursor = after_seq
        ends = event_ends_turn if until_turn_end else event_ends_task
        while True:
            sub.clear()
            events = await self._read_after(task_id, cursor, live)
            for event in events:
                cursor = event.seq
                if not event.streamed:
                    continue
                yield event
                if ends(event):
                    return
            if events:
                continue
            running = self.live.get(task_id)
            cut = run is not None and run.cut
            if until_turn_end and not cut and (running is None or not running.runs):
                # No executor will move the task further in this process.
                if not await self.store.read_events(task_id, cursor, 1):
                    return
                continue
            if not await sub.wait(heartbeat):
                yield None

    async def _read_after(self, task_id: str, cursor: int, live: LiveTask | None) -> list[Event]:
        """One bounded batch of the durable events after ``cursor``: from the task's live
        record when it has them (``live``: a turn's, readable after its run ended), else from
        the store, which also has the last word when memory knows of nothing new."""
        source = self.live.get(task_id) or live
        known = source.events_after(cursor) if source is not None else None
        if known:
            return known[:READ_BATCH]
        return await self.store.read_events(task_id, cursor, READ_BATCH)

    async def turn_ended(self, live: LiveTask, run: Run) -> bool:
        """Whether the log holds the end of ``run``'s turn: a status after the turn began that
        leaves the task terminal or interrupted. (The task's state alone cannot tell when
        the turn continued an interrupted task: that is the state it began in.)"""
        cursor = run.start.seq
        while events := await self._read_after(live.task_id, cursor, live):
            for event in events:
                cursor = event.seq
                if event_ends_turn(event):
                    return True
        return False

    async def subscribe(
        self,
        task_id: str,
        caller: Caller,
        after_seq: int | None,
        heartbeat: float | None,
        *,
        streaming: bool,
        replay: Callable[[Task], int] | None = None,
    ) -> AsyncIterator[StreamItem | None]:
        """SubscribeToTask: decided here (errors raise), then the current task, the streamed
        events among the newest ``replay(task)`` events of its log (each under its own
        sequence number), and every update until the task is terminal. With ``after_seq``
        (SSE Last-Event-ID) the stream resumes after that event instead of starting with the
        task (and replays nothing)."""
        record = await self.store.get_task(task_id, caller.tenant)
        if after_seq is None:
            outcome = client_commands.subscribe(
                record, tenant=caller.tenant, task_id=task_id, streaming=streaming
            )
            if outcome.error is not None:
                raise outcome.error
        elif record is None:
            raise task_not_found(task_id)
        assert record is not None
        replayed = replay(record.task) if replay is not None and after_seq is None else 0
        return self._stream_task(record, after_seq, heartbeat, replayed)

    async def _stream_task(
        self,
        record: TaskRecord,
        after_seq: int | None,
        heartbeat: float | None,
        replayed: int = 0,
    ) -> AsyncIterator[StreamItem | None]:
        with self.bus.subscribe(record.id) as sub:
            if after_seq is None:
                yield StreamItem(StreamResponse(task=record.task), record.seq)
                after_seq = record.seq
                cursor = max(0, record.seq - replayed)
                while cursor < record.seq:  # (the log up to the Task, in bounded batches)
                    batch = min(READ_BATCH, record.seq - cursor)
                    events = await self.store.read_events(record.id, cursor, batch)
                    if not events:
                        break
                    for logged in events:
                        cursor = logged.seq
                        if logged.streamed and logged.seq <= record.seq:
                            yield StreamItem(logged.stream_response(), logged.seq)
            # A Last-Event-ID past the log's end has seen everything there is.
            after_seq = min(after_seq, record.seq)
            if lifecycle.is_terminal(record.state):
                # The log is final: replay what follows after_seq, then end (following it
                # would wait forever for a terminal event the client has already seen).
                while events := await self.store.read_events(record.id, after_seq, READ_BATCH):
                    for logged in events:
                        after_seq = logged.seq
                        if logged.streamed:
                            yield StreamItem(logged.stream_response(), logged.seq)
                return
            async for event in self._follow(
                sub, record.id, after_seq, until_turn_end=False, heartbeat=heartbeat
            ):
                yield None if event is None else StreamItem(event.stream_response(), event.seq)


def event_ends_turn(event: Event) -> bool:
    """The event leaves the task terminal or interrupted: its turn ends with it."""
    state = _state_after(event)
    return state is not None and lifecycle.ends_turn(state)


def event_ends_task(event: Event) -> bool:
    """The event leaves the task terminal: nothing follows it."""
    state = _state_after(event)
    return state is not None and lifecycle.is_terminal(state)


def _state_after(event: Event) -> TaskState | None:
    """The state a status (or creation) event leaves the task in; None for other kinds."""
    if event.kind == "status" or event.kind == "task":
        state = getattr(event.body, "status").state  # noqa: B009
        assert isinstance(state, TaskState)
        return state
    return None
