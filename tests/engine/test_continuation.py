"""A message that continues an interrupted task (INPUT_REQUIRED, AUTH_REQUIRED) starts a new
turn: its stream follows that turn to its own end (the next interrupted or terminal status),
and a blocking SendMessage returns the task as that turn left it, never as it began."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from accord.agents._api import RequestContext, TaskHandle
from accord.core._caller import Caller
from accord.engine import Engine, StreamItem
from accord.store._base import TaskStore
from accord.store._memory import MemoryStore
from accord.store._sqlite import SqliteStore
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)

ALICE = Caller(identity="alice", tenant="t1")
S = TaskState


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    if request.param == "sqlite":
        return SqliteStore(str(tmp_path / "accord.db"))
    return MemoryStore()


def message(text: str, task_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=f"m-{text}-{task_id}",
            role=Role.USER,
            parts=[Part(text=text)],
            task_id=task_id,
        )
    )


async def responses(items: AsyncIterator[StreamItem | None]) -> list[StreamResponse]:
    return [item.response for item in [i async for i in items] if item is not None]


def states(stream: list[StreamResponse]) -> list[TaskState]:
    """The state each task or status item of a stream shows, in order."""
    shown: list[TaskState] = []
    for response in stream:
        status = response.task.status if response.task else None
        if response.status_update:
            status = response.status_update.status
        if status is not None:
            assert isinstance(status.state, TaskState)
            shown.append(status.state)
    return shown


async def booking(ctx: RequestContext, task: TaskHandle) -> None:
    """Asks how many people until it gets a number (examples/multi_turn.py)."""
    await task.start_working()
    if ctx.task is None or not ctx.text.isdigit():
        await task.require_input("For how many people?")
        return
    await task.update_artifact(text=f"table for {ctx.text}", last_chunk=True)
    await task.complete()


async def parked(engine: Engine, text: str = "book a table") -> Task:
    task = await engine.send_message(message(text), ALICE)
    assert isinstance(task, Task) and task.status.state is S.INPUT_REQUIRED
    return task


async def test_stream_of_a_continuation_follows_the_new_turn_to_its_end(
    store: TaskStore,
) -> None:
    async with Engine(store, booking) as engine:
        task = await parked(engine)
        stream = await responses(await engine.send_streaming_message(message("4", task.id), ALICE))
        assert [r.which for r in stream] == [
            "task",
            "status_update",
            "artifact_update",
            "status_update",
        ]
        # The opening task is the one the message continued, with that message in its history.
        first = stream[0].task
        assert first is not None and first.history[-1].text() == "4"
        assert states(stream) == [S.INPUT_REQUIRED, S.WORKING, S.COMPLETED]
        stored = await engine.get_task(task.id, ALICE)
        assert stored.status.state is S.COMPLETED


async def test_stream_of_a_continuation_asked_again_ends_at_the_new_interruption(
    store: TaskStore,
) -> None:
    async with Engine(store, booking) as engine:
        task = await parked(engine)
        again = await responses(
            await engine.send_streaming_message(message("several", task.id), ALICE)
        )
        assert states(again) == [S.INPUT_REQUIRED, S.WORKING, S.INPUT_REQUIRED]
        last = again[-1].status_update
        assert last is not None and last.status.message
        assert last.status.message.text() == "For how many people?"
        # The second parked turn is continued like the first one.
        done = await responses(await engine.send_streaming_message(message("2", task.id), ALICE))
        assert states(done) == [S.INPUT_REQUIRED, S.WORKING, S.COMPLETED]
        assert [m.text() for m in (await engine.get_task(task.id, ALICE)).history] == [
            "book a table",
            "For how many people?",
            "several",
            "For how many people?",
            "2",
        ]


async def test_stream_of_a_continuation_of_an_auth_required_task(store: TaskStore) -> None:
    async def guarded(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        if ctx.task is None:
            await task.require_auth("sign in at the bank, then say done")
            return
        await task.complete("paid")

    async with Engine(store, guarded) as engine:
        task = await engine.send_message(message("pay the bill"), ALICE)
        assert isinstance(task, Task) and task.status.state is S.AUTH_REQUIRED
        stream = await responses(
            await engine.send_streaming_message(message("done", task.id), ALICE)
        )
        assert states(stream) == [S.AUTH_REQUIRED, S.WORKING, S.COMPLETED]


async def test_blocking_continuation_returns_the_task_after_the_new_turn(
    store: TaskStore,
) -> None:
    """The agent adds an artifact while the task is still INPUT_REQUIRED, and only then
    works on it: the answer waits for the turn's end, not for the first change."""
    noted = asyncio.Event()
    go_on = asyncio.Event()

    async def notes_first(ctx: RequestContext, task: TaskHandle) -> None:
        if ctx.task is None:
            await task.start_working()
            await task.require_input("anything else?")
            return
        await task.update_artifact(text="noted", last_chunk=True)
        await task.flush()
        noted.set()
        await go_on.wait()
        await task.start_working()
        await task.complete("done")

    async with Engine(store, notes_first) as engine:
        task = await engine.send_message(message("start"), ALICE)
        assert isinstance(task, Task) and task.status.state is S.INPUT_REQUIRED
        send = asyncio.ensure_future(engine.send_message(message("no", task.id), ALICE))
        await noted.wait()
        # The artifact is durable, and the blocking send, woken by it, has looked.
        for _ in range(10):
            await asyncio.sleep(0)
        assert not send.done()
        go_on.set()
        answer = await send
        assert isinstance(answer, Task)
        assert answer.status.state is S.COMPLETED
        assert [a.parts[0].text for a in answer.artifacts] == ["noted"]


async def test_blocking_continuation_asked_again_returns_the_new_question(
    store: TaskStore,
) -> None:
    async with Engine(store, booking) as engine:
        task = await parked(engine)
        again = await engine.send_message(message("several", task.id), ALICE)
        assert isinstance(again, Task) and again.status.state is S.INPUT_REQUIRED
        assert [m.text() for m in again.history][-2:] == ["several", "For how many people?"]


async def test_subscribe_to_an_interrupted_task_follows_every_turn_until_terminal(
    store: TaskStore,
) -> None:
    async with Engine(store, booking) as engine:
        task = await parked(engine)
        watcher = asyncio.ensure_future(responses(await engine.subscribe(task.id, ALICE)))
        again = await engine.send_message(message("several", task.id), ALICE)
        assert isinstance(again, Task) and again.status.state is S.INPUT_REQUIRED
        done = await engine.send_message(message("3", task.id), ALICE)
        assert isinstance(done, Task) and done.status.state is S.COMPLETED
        seen = await watcher
        assert states(seen) == [
            S.INPUT_REQUIRED,
            S.WORKING,
            S.INPUT_REQUIRED,
            S.WORKING,
            S.COMPLETED,
        ]
