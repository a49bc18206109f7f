"""PostgreSQL going away under running agents (its connections cut at a proxy the test
controls, as a stopped server or a network blip would): the runs wait and go on as soon as
the database answers again, not at the next recovery sweep, with every event once and in
order; an append the database committed but whose answer was lost counts once."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest
from tests.cuttable_proxy import CuttableProxy

from accord.agents._api import RequestContext, TaskHandle
from accord.core._caller import Caller
from accord.core._events import fold
from accord.engine import Engine, EngineConfig
from accord.store._postgres import PostgresStore
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)

ALICE = Caller(identity="alice", tenant="t1")
PG_ADDRESS = "127.0.0.1:5432"
CHUNKS = 30


@pytest.fixture
def proxy() -> Iterator[CuttableProxy]:
    with CuttableProxy(5432) as started:
        yield started


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=f"m-{text}", role=Role.USER, parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=True),
    )


class Ticks:
    """Streams CHUNKS chunks of one artifact, 50 ms apart, then completes; notes when
    (time.monotonic()) each chunk was handed over."""

    def __init__(self) -> None:
        self.moved: dict[str, list[float]] = {}

    async def __call__(self, ctx: RequestContext, task: TaskHandle) -> None:
        moved = self.moved.setdefault(task.task_id, [])
        await task.start_working()
        for index in range(CHUNKS):
            await asyncio.sleep(0.05)
            last = index == CHUNKS - 1
            await task.update_artifact(
                text=f"{index};", artifact_id="ticks", append=index > 0, last_chunk=last
            )
            moved.append(time.monotonic())
        await task.complete("done")

    def resumed(self, since: float) -> list[float]:
        """Per task that was still running at ``since``: how long after it the agent moved."""
        return [
            min(t for t in times if t > since) - since
            for times in self.moved.values()
            if times and times[-1] > since
        ]


async def finished(store: PostgresStore, task_ids: list[str], patience: float) -> None:
    """Once every one of ``task_ids`` is terminal."""
    deadline = time.monotonic() + patience
    pending = set(task_ids)
    while pending:
        for task_id in list(pending):
            record = await store.get_task(task_id, None)
            if record is not None and record.state not in (TaskState.SUBMITTED, TaskState.WORKING):
                pending.discard(task_id)
        assert time.monotonic() < deadline, f"{len(pending)} tasks still running"
        await asyncio.sleep(0.02)


async def test_runs_go_on_as_soon_as_the_database_answers_again(
    pg_url: str, proxy: CuttableProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="accord.engine")
    store = PostgresStore(proxy.dsn(pg_url, PG_ADDRESS))
    config = EngineConfig(recovery_interval_s=30.0)  # the default: no sweep within the test
    agent = Ticks()
    async with Engine(store, agent, config, bus=store.bus()) as engine:
        tasks: list[str] = []
        for index in range(6):
            created = await engine.send_message(request(f"job {index}"), ALICE)
            assert isinstance(created, Task)
            tasks.append(created.id)
        await asyncio.sleep(0.4)  # (mid-way through their chunks)
        late = await engine.send_message(request("stored just before"), ALICE)
        assert isinstance(late, Task)
        tasks.append(late.id)
        proxy.cut()
        await asyncio.sleep(2.0)  # the database is away for 2 s while they run
        proxy.restore()
        restored = time.monotonic()
        await finished(store, tasks, patience=20.0)
        for task_id in tasks:
            record = await store.get_task(task_id, None)
            assert record is not None and record.state is TaskState.COMPLETED, task_id
            [artifact] = record.task.artifacts
            assert "".join(p.text for p in artifact.parts) == "".join(
                f"{n};" for n in range(CHUNKS)
            )
            events = await store.read_events(task_id, 0, 1000)
            assert [e.seq for e in events] == list(range(1, record.seq + 1))
            assert fold(events) == record.task
        resumed = agent.resumed(restored)
        assert len(resumed) == len(tasks)  # every run was paused by the outage
        print(f"runs went on {min(resumed):.2f}-{max(resumed):.2f} s after the database was back")
        assert max(resumed) < 3.0  # not at the next sweep (30 s)


async def test_an_append_committed_whose_answer_was_lost_counts_once(
    pg_url: str, proxy: CuttableProxy
) -> None:
    """The database commits a run's journal entry and the connection drops before the answer
    arrives: written again, the entry is found in the log as it is, and not added twice."""
    go = asyncio.Event()

    async def journaling(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await task.flush()
        await go.wait()
        await task.journal({"step": "refund order 48213"})
        await task.complete("done")

    store = PostgresStore(proxy.dsn(pg_url, PG_ADDRESS))
    async with Engine(store, journaling, bus=store.bus()) as engine:
        created = await engine.send_message(request("refund"), ALICE)
        assert isinstance(created, Task)
        proxy.lose_answer_with = b"INSERT 0 "  # (an append's answer: INSERT INTO events)
        go.set()
        await finished(store, [created.id], patience=20.0)
        assert proxy.lost == 1
        record = await store.get_task(created.id, None)
        assert record is not None and record.state is TaskState.COMPLETED
        events = await store.read_events(created.id, 0, 1000)
        assert [e.kind for e in events].count("journal") == 1
        assert [e.seq for e in events] == list(range(1, record.seq + 1))
        assert fold(events) == record.task


async def test_a_task_cancelled_on_another_node_while_its_writes_wait_stays_cancelled(
    pg_url: str, proxy: CuttableProxy, caplog: pytest.LogCaptureFixture
) -> None:
    """Node A's agent finishes while A cannot reach the database; node B cancels the task
    meanwhile. When A is back, its held writes are refused (the task moved on): they fail
    as a conflicting append does, and the task stays CANCELED with B's status only."""
    caplog.set_level(logging.INFO, logger="accord.engine")
    go = asyncio.Event()

    async def finishing(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await task.flush()
        await go.wait()
        await task.update_artifact(text="late report", artifact_id="r", last_chunk=True)
        await task.complete("done")

    async def idle(ctx: RequestContext, task: TaskHandle) -> None:
        await task.complete()

    store_a = PostgresStore(proxy.dsn(pg_url, PG_ADDRESS))
    store_b = PostgresStore(pg_url)
    async with (
        Engine(store_a, finishing, bus=store_a.bus()) as node_a,
        Engine(store_b, idle, bus=store_b.bus()) as node_b,
    ):
        created = await node_a.send_message(request("report"), ALICE)
        assert isinstance(created, Task)
        proxy.cut()
        go.set()
        deadline = time.monotonic() + 10
        while not any(
            f"append to task {created.id} failed" in r.getMessage() for r in caplog.records
        ):
            assert time.monotonic() < deadline, "node A's append did not fail"
            await asyncio.sleep(0.02)
        cancelled = await node_b.cancel_task(created.id, ALICE)
        assert cancelled.status.state is TaskState.CANCELED
        proxy.restore()
        while node_a.running(created.id):  # its held writes are refused, its run ends
            assert time.monotonic() < deadline + 10, "node A still runs the task"
            await asyncio.sleep(0.02)
        record = await store_b.get_task(created.id, None)
        assert record is not None and record.state is TaskState.CANCELED
        assert record.task.artifacts == []
        events = await store_b.read_events(created.id, 0, 1000)
        assert [e.kind for e in events] == ["task", "status", "status"]
        assert fold(events) == record.task
