"""Limits under concurrent requests: creations that all pass the engine's check before the
first of them is stored are refused by the store, and the clients over the limit get the
check's own RESOURCE_EXHAUSTED error; the refused tasks leave nothing behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.marks import STORES
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.agents._echo import echo
from accord.core._caller import Caller
from accord.core._limits import Limits
from accord.engine import Engine, EngineConfig
from accord.engine._remote import RemoteAgent
from accord.store import MemoryStore, SqliteStore, TaskStore
from accord.store._postgres import PostgresStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

ALICE = Caller(identity="alice", tenant="t1")
LIMIT = 3
BURST = 12


def request(text: str, *, immediate: bool = False) -> SendMessageRequest:
    message = Message(message_id=f"m-{text}", role=Role.USER, parts=[Part(text=text)])
    if immediate:
        return SendMessageRequest(
            message=message, configuration=SendMessageConfiguration(return_immediately=True)
        )
    return SendMessageRequest(message=message)


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "sqlite":
        return SqliteStore(str(tmp_path / "t.db"))
    return PostgresStore(request.getfixturevalue("pg_url"))


def limited(tasks: int | None = LIMIT, configs: int | None = 10) -> EngineConfig:
    return EngineConfig(limits=Limits(tasks_per_tenant=tasks, push_configs_per_task=configs))


def assert_task_limit(results: list[object]) -> list[A2AError]:
    """Exactly LIMIT successes; the rest are the task-limit refusal."""
    refused = [r for r in results if isinstance(r, A2AError)]
    assert [r for r in results if isinstance(r, BaseException) and r not in refused] == []
    assert len(refused) == BURST - LIMIT
    for error in refused:
        assert error.kind is ErrorKind.RESOURCE_EXHAUSTED
        assert error.message == f"the tenant already holds {LIMIT} tasks"
        assert error.metadata == {"limit": str(LIMIT)}
    return refused


async def settled(engine: Engine) -> None:
    """Every run has ended (runs stop in the background after their client is answered)."""
    await until(lambda: not engine._live, "every run to end")


async def test_a_burst_of_sends_creates_exactly_the_limit(store: TaskStore) -> None:
    async with Engine(store, echo, limited()) as engine:
        results = await asyncio.gather(
            *(engine.send_message(request(f"m{n}"), ALICE) for n in range(BURST)),
            return_exceptions=True,
        )
        assert_task_limit(results)
        done = [r for r in results if isinstance(r, Task)]
        assert len(done) == LIMIT
        assert all(t.status.state is TaskState.COMPLETED for t in done)
        assert await store.count_tasks("t1") == LIMIT
        await settled(engine)
        # Still full: the next one is refused by the check before the store.
        with pytest.raises(A2AError) as refused:
            await engine.send_message(request("late"), ALICE)
        assert refused.value.kind is ErrorKind.RESOURCE_EXHAUSTED


async def test_a_burst_of_streams_creates_exactly_the_limit(store: TaskStore) -> None:
    async with Engine(store, echo, limited()) as engine:

        async def stream(n: int) -> list[str]:
            items = await engine.send_streaming_message(request(f"m{n}"), ALICE)
            return [item.response.which async for item in items if item is not None]

        results = await asyncio.gather(*(stream(n) for n in range(BURST)), return_exceptions=True)
        assert_task_limit(results)
        streams = [r for r in results if isinstance(r, list)]
        assert streams == [["task", "status_update", "artifact_update", "status_update"]] * LIMIT
        assert await store.count_tasks("t1") == LIMIT
        await settled(engine)


async def test_a_burst_returning_immediately_creates_exactly_the_limit(store: TaskStore) -> None:
    started: list[str] = []

    async def slow(ctx: RequestContext, task: TaskHandle) -> None:
        started.append(ctx.task_id)
        await asyncio.sleep(0.05)
        await task.complete("done")

    async with Engine(store, slow, limited()) as engine:
        results = await asyncio.gather(
            *(engine.send_message(request(f"m{n}", immediate=True), ALICE) for n in range(BURST)),
            return_exceptions=True,
        )
        assert_task_limit(results)
        assert sum(isinstance(r, Task) for r in results) == LIMIT
        await settled(engine)
        assert await store.count_tasks("t1") == LIMIT
        assert len(started) == BURST  # every agent started; the refused ones were stopped


async def test_the_run_of_a_refused_creation_is_stopped(store: TaskStore) -> None:
    stopped: list[str] = []

    async def long_work(ctx: RequestContext, task: TaskHandle) -> None:
        try:
            await task.start_working()
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.append(ctx.task_id)
            raise
        await task.complete()

    async with Engine(store, long_work, limited()) as engine:
        results = await asyncio.gather(
            *(engine.send_message(request(f"m{n}", immediate=True), ALICE) for n in range(BURST)),
            return_exceptions=True,
        )
        assert_task_limit(results)
        await until(
            lambda: len(stopped) == BURST - LIMIT and len(engine._live) == LIMIT,
            "the refused runs to stop",
        )
        assert len(stopped) == BURST - LIMIT  # the refused ones, long before their 60 s
        assert set(engine._live) == {r.id for r in results if isinstance(r, Task)}
        assert [await store.get_task(t, None) for t in stopped] == [None] * len(stopped)


async def test_remote_mode_creations_stop_at_the_limit(store: TaskStore) -> None:
    remote = RemoteAgent()
    engine = Engine(store, remote.execute, limited())
    remote.bind(engine)
    async with engine:

        async def first_item(n: int) -> str:
            items = await engine.send_streaming_message(request(f"m{n}"), ALICE)
            async for item in items:
                if item is not None:
                    await items.aclose()  # type: ignore[attr-defined]
                    return item.response.which
            raise AssertionError("no first item")

        results = await asyncio.gather(
            *(first_item(n) for n in range(BURST)), return_exceptions=True
        )
        assert_task_limit(results)
        assert results.count("task") == LIMIT
        assert await store.count_tasks("t1") == LIMIT
        # the refused ones' runs end; the created ones wait for workers
        await until(lambda: len(engine._live) == LIMIT, "the refused runs to end")
        assert len(engine._live) == LIMIT


async def test_concurrent_push_configs_stop_at_the_limit(store: TaskStore) -> None:
    async with Engine(store, echo, limited(tasks=None, configs=2)) as engine:
        task = await engine.send_message(request("hooked"), ALICE)
        assert isinstance(task, Task)

        def config(n: int) -> TaskPushNotificationConfig:
            return TaskPushNotificationConfig(
                task_id=task.id, id=f"c{n}", url=f"https://hooks.example/{n}"
            )

        results = await asyncio.gather(
            *(engine.create_push_config(config(n), ALICE) for n in range(8)),
            return_exceptions=True,
        )
        refused = [r for r in results if isinstance(r, A2AError)]
        assert len(refused) == 6 and len(results) - len(refused) == 2
        for error in refused:
            assert error.kind is ErrorKind.RESOURCE_EXHAUSTED
            assert error.metadata == {"limit": "2", "taskId": task.id}
        kept = await engine.list_push_configs(task.id, ALICE)
        assert len(kept) == 2
        # Replacing one at the limit is allowed.
        again = int(kept[1].id[1:])
        stored = await engine.create_push_config(config(again), ALICE)
        assert stored.id == kept[1].id
