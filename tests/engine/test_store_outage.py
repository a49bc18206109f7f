"""A disk that fills while an agent works (SQLite on a small tmpfs the test fills and empties):
the run's appends wait for the store and go on as soon as it takes them again; past the bound
(``store_outage_s``) the run is stopped and its task failed, with a clear status, as soon as
the store answers. Never a task left WORKING with no run on it. (Harness turns:
tests/harness/test_turns_on_a_full_disk.py; PostgreSQL: tests/engine/test_store_outage_pg.py.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from tests.full_disk import small_disk

from accord.agents._api import RequestContext, TaskHandle
from accord.core._caller import Caller
from accord.core._events import fold
from accord.engine import Engine, EngineConfig, StreamItem
from accord.store._sqlite import SqliteStore
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)

# (they mount a small tmpfs with mount(8): a program)
pytestmark = pytest.mark.processes

ALICE = Caller(identity="alice", tenant="t1")


def request(text: str, *, immediate: bool = False) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=f"m-{text}", role=Role.USER, parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=immediate),
    )


async def until(
    check: Callable[[], Awaitable[bool] | bool], what: str, patience: float = 10.0
) -> None:
    deadline = asyncio.get_running_loop().time() + patience
    while True:
        found = check()
        if not isinstance(found, bool):
            found = await found
        if found:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.02)


def append_failed(caplog: pytest.LogCaptureFixture, task_id: str) -> bool:
    return any(f"append to task {task_id} failed" in r.getMessage() for r in caplog.records)


async def stored_state(store: SqliteStore, task_id: str) -> TaskState | None:
    record = await store.get_task(task_id, None)
    return record.state if record is not None else None


async def collect(items: AsyncIterator[StreamItem | None]) -> list[StreamItem]:
    return [item async for item in items if item is not None]


def last_state(items: list[StreamItem]) -> TaskState | None:
    update = items[-1].response.status_update
    return update.status.state if update is not None else None  # type: ignore[return-value]


class Gated:
    """An agent that starts working, waits for ``go``, then emits a report and completes."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.working = asyncio.Event()

    async def __call__(self, ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await task.flush()
        self.working.set()
        await self.go.wait()
        await task.update_artifact(text=f"report on {ctx.text}", artifact_id="r", last_chunk=True)
        await task.complete("done")


async def check_log(store: SqliteStore, task_id: str) -> None:
    """The log is gap-free and the snapshot is its fold."""
    record = await store.get_task(task_id, None)
    assert record is not None
    events = await store.read_events(task_id, 0, 1000)
    assert [e.seq for e in events] == list(range(1, record.seq + 1))
    assert fold(events) == record.task


async def test_a_run_whose_writes_meet_a_full_disk_goes_on_once_there_is_space(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="accord.engine")
    agent = Gated()
    with small_disk(tmp_path) as disk:
        store = SqliteStore(str(disk.path / "accord.db"))
        async with Engine(store, agent) as engine:
            answer = asyncio.ensure_future(engine.send_message(request("q3"), ALICE))
            await asyncio.wait_for(agent.working.wait(), 10)
            [record] = await store.tasks_in_states(frozenset({TaskState.WORKING}))
            following = asyncio.ensure_future(collect(await engine.subscribe(record.id, ALICE)))

            disk.fill()
            agent.go.set()  # its next appends meet the full disk
            await until(lambda: append_failed(caplog, record.id), "the append to fail")
            assert engine.running(record.id)  # the run waits; its task is not left behind
            assert await stored_state(store, record.id) is TaskState.WORKING
            assert not answer.done() and not following.done()

            disk.free()
            task = await asyncio.wait_for(answer, 10)  # the blocking client gets its answer
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            assert [a.parts[0].text for a in task.artifacts] == ["report on q3"]
            items = await asyncio.wait_for(following, 10)
            assert last_state(items) is TaskState.COMPLETED
            await check_log(store, record.id)


async def test_a_message_that_arrives_while_the_disk_is_full_gets_its_task_once_there_is_space(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Even the task's creation waits: nothing was acknowledged, nothing is refused."""
    caplog.set_level(logging.INFO, logger="accord.engine")
    agent = Gated()
    agent.go.set()
    with small_disk(tmp_path) as disk:
        store = SqliteStore(str(disk.path / "accord.db"))
        async with Engine(store, agent) as engine:
            disk.fill()
            answer = asyncio.ensure_future(engine.send_message(request("q4"), ALICE))
            await until(
                lambda: any("append to task" in r.getMessage() for r in caplog.records),
                "the creation to fail",
            )
            assert not answer.done()
            disk.free()
            task = await asyncio.wait_for(answer, 10)
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            await check_log(store, task.id)


async def test_a_run_the_store_fails_past_the_bound_is_stopped_and_its_task_failed_once_it_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="accord.engine")
    agent = Gated()
    with small_disk(tmp_path) as disk:
        store = SqliteStore(str(disk.path / "accord.db"))
        async with Engine(store, agent, EngineConfig(store_outage_s=0.2)) as engine:
            created = await engine.send_message(request("q5", immediate=True), ALICE)
            assert isinstance(created, Task)
            await asyncio.wait_for(agent.working.wait(), 10)
            following = asyncio.ensure_future(collect(await engine.subscribe(created.id, ALICE)))

            disk.fill()
            agent.go.set()
            await until(lambda: append_failed(caplog, created.id), "the append to fail")
            await until(lambda: not engine.running(created.id), "the run to be stopped")
            assert await stored_state(store, created.id) is TaskState.WORKING  # (cannot write)

            disk.free()  # the task is failed as soon as the store takes a write again
            await until(
                lambda: stored_state_is(store, created.id, TaskState.FAILED), "the task to fail"
            )
            task = await engine.get_task(created.id, ALICE)
            assert task.status.message is not None
            assert "could not store this task's progress" in task.status.message.text()
            items = await asyncio.wait_for(following, 10)
            assert last_state(items) is TaskState.FAILED
            await check_log(store, created.id)


async def stored_state_is(store: SqliteStore, task_id: str, state: TaskState) -> bool:
    return await stored_state(store, task_id) is state
