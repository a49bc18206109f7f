"""Streams of a task running in this process follow its newest acknowledged events in memory
(LiveTask.recent) and read the store only for what memory cannot tell: every event still
arrives, in order, exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.agents._echo import echo
from accord.core._caller import Caller
from accord.core._events import Event
from accord.engine import Engine, StreamItem
from accord.engine._live import RECENT_EVENTS, LiveTask
from accord.store._memory import MemoryStore
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

ALICE = Caller(identity="alice", tenant="t1")


class CountingStore(MemoryStore):
    """Counts reads; with ``gate`` set, every append waits for it before it is stored."""

    def __init__(self) -> None:
        super().__init__()
        self.event_reads = 0
        self.task_reads = 0
        self.gate: asyncio.Event | None = None
        self.at_gate = 0  # appends waiting for it

    async def read_events(self, task_id: str, after_seq: int, limit: int = 1000) -> list[Event]:
        self.event_reads += 1
        return await super().read_events(task_id, after_seq, limit)

    async def get_task(self, task_id: str, tenant: str | None) -> Any:
        self.task_reads += 1
        return await super().get_task(task_id, tenant)

    async def append(self, *args: Any, **kwargs: Any) -> None:
        if self.gate is not None:
            self.at_gate += 1
            await self.gate.wait()
        await super().append(*args, **kwargs)


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id="m1", role=Role.USER, parts=[Part(text=text)])
    )


async def collect(items: AsyncIterator[StreamItem | None]) -> list[StreamItem]:
    return [item async for item in items if item is not None]


async def test_a_turn_stream_takes_the_running_tasks_events_from_memory() -> None:
    store = CountingStore()
    async with Engine(store, echo) as engine:
        items = await collect(await engine.send_streaming_message(request("hi"), ALICE))
        kinds = [item.response.which for item in items]
        assert kinds == ["task", "status_update", "artifact_update", "status_update"]
        assert [item.seq for item in items] == [1, 2, 3, 4]
        assert store.event_reads == 0
        # What was streamed is what the store holds.
        task_id = items[0].response.task.id  # type: ignore[union-attr]
        stored = [e.stream_response() for e in await store.read_events(task_id, 0)]
        assert stored[1:] == [item.response for item in items[1:]]


async def test_a_stream_read_after_its_run_ended_still_takes_the_turns_events_from_memory() -> None:
    store = CountingStore()
    async with Engine(store, echo) as engine:
        stream = await engine.send_streaming_message(request("hi"), ALICE)
        # the run ends (and leaves the engine) before the stream is read
        await until(lambda: not engine._live, "the run to end", every_s=0.001)
        items = await collect(stream)
        assert [item.seq for item in items] == [1, 2, 3, 4]
        assert (store.event_reads, store.task_reads) == (0, 0)


async def test_a_stream_waits_for_an_append_in_flight_without_reading_the_store() -> None:
    store = CountingStore()
    async with Engine(store, echo) as engine:
        store.gate = asyncio.Event()
        stream = await engine.send_streaming_message(request("hi"), ALICE)
        reading = asyncio.ensure_future(collect(stream))
        # the agent has decided everything; nothing is stored yet
        await until(lambda: store.at_gate, "an append to wait at the gate")
        assert not reading.done()
        store.gate.set()
        items = await reading
        assert [item.response.which for item in items][-1] == "status_update"
        assert (store.event_reads, store.task_reads) == (0, 0)


async def test_a_long_turn_streams_every_event_once_when_memory_holds_only_the_newest() -> None:
    count = RECENT_EVENTS * 3

    async def chatty(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        for i in range(count):  # one loop turn: a single append carrying them all
            await task.update_artifact(text=f"chunk {i}", artifact_id=f"a{i}")
        await task.complete()

    store = CountingStore()
    async with Engine(store, chatty) as engine:
        items = await collect(await engine.send_streaming_message(request("go"), ALICE))
        artifacts = [i.response.artifact_update for i in items if i.response.artifact_update]
        assert [a.artifact.artifact_id for a in artifacts] == [f"a{i}" for i in range(count)]
        seqs = [item.seq for item in items]
        assert seqs == sorted(set(seqs))
        assert store.event_reads >= 1  # the start of the turn was no longer in memory


async def test_a_stream_of_a_slow_agent_gets_each_step_as_it_becomes_durable() -> None:
    go = asyncio.Event()

    async def stepwise(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await task.flush()
        await go.wait()
        await task.update_artifact(text="late")
        await task.complete()

    store = CountingStore()
    async with Engine(store, stepwise) as engine:
        stream = await engine.send_streaming_message(request("go"), ALICE)
        first = [await anext(stream), await anext(stream)]  # type: ignore[arg-type]
        assert [i.response.which for i in first if i] == ["task", "status_update"]
        go.set()
        rest = await collect(stream)
        assert [i.response.which for i in rest] == ["artifact_update", "status_update"]
        assert rest[-1].response.status_update.status.state is TaskState.COMPLETED  # type: ignore[union-attr]


def _event(seq: int) -> Event:
    status = TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING)
    )
    return Event(task_id="t", seq=seq, kind="status", body=status, at_ms=0)


def _record(seq: int) -> Any:
    class Record:
        def __init__(self, seq: int) -> None:
            self.seq = seq
            self.task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING))

    return Record(seq)


def test_events_after_answers_only_what_memory_can_tell() -> None:
    live = LiveTask("t", "t1", None)
    assert live.events_after(0) is None  # nothing acknowledged yet: ask the store
    live.acknowledged(_record(2), [_event(1), _event(2)])
    assert [e.seq for e in live.events_after(0) or []] == [1, 2]
    assert [e.seq for e in live.events_after(1) or []] == [2]
    assert live.events_after(2) == []  # nothing newer is durable
    live.acknowledged(_record(3), [_event(3)])
    assert [e.seq for e in live.events_after(1) or []] == [2, 3]
    # Another writer's append (seq 4) reached the store but not memory: a gap.
    live.acknowledged(_record(6), [_event(5), _event(6)])
    assert live.events_after(3) is None
    assert [e.seq for e in live.events_after(4) or []] == [5, 6]
    # A late acknowledgement of something older changes nothing.
    live.acknowledged(_record(5), [_event(5)])
    assert [e.seq for e in live.events_after(4) or []] == [5, 6]
    # The durable record moved without these events (a refresh after another node's write).
    live.durable = _record(7)
    assert live.events_after(6) is None


def test_memory_keeps_only_the_newest_events() -> None:
    live = LiveTask("t", "t1", None)
    live.acknowledged(_record(40), [_event(seq) for seq in range(1, 41)])
    assert len(live.recent) == RECENT_EVENTS
    assert live.events_after(0) is None
    assert [e.seq for e in live.events_after(39) or []] == [40]
