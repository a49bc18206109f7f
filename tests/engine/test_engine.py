"""The engine with the in-memory store: executors, streams, cancel, failures, recovery."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

import pytest
from tests.waiting import until

from accord.agents._api import AgentError, RequestContext, TaskHandle, WrongStateError
from accord.agents._echo import echo
from accord.core._caller import Caller
from accord.core._events import fold
from accord.core.views import TaskQuery
from accord.engine import Engine, StreamItem
from accord.engine._engine import FAILED_MESSAGE
from accord.store._memory import MemoryStore
from accord.wire import A2AError, ErrorKind
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
BOB = Caller(identity="bob", tenant="t2")


def request(text: str, task_id: str = "", message_id: str = "m1") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=message_id, role=Role.USER, parts=[Part(text=text)], task_id=task_id
        )
    )


async def collect(items: AsyncIterator[StreamItem | None]) -> list[StreamItem]:
    return [item async for item in items if item is not None]


@pytest.fixture
async def store() -> MemoryStore:
    return MemoryStore()


async def test_echo_blocking_send_returns_completed_task_with_artifact(store: MemoryStore) -> None:
    async with Engine(store, echo) as engine:
        task = await engine.send_message(request("hello"), ALICE)
        assert isinstance(task, Task)
        assert task.status.state is TaskState.COMPLETED
        assert [p.text for a in task.artifacts for p in a.parts] == ["echo: hello"]
        record = await store.get_task(task.id, "t1")
        assert record is not None
        assert fold(await store.read_events(task.id, 0)) == record.task
        assert [e.seq for e in await store.read_events(task.id, 0)] == [1, 2, 3, 4]


async def test_echo_stream_yields_task_then_updates_in_order(store: MemoryStore) -> None:
    async with Engine(store, echo) as engine:
        items = await collect(await engine.send_streaming_message(request("hi"), ALICE))
        kinds = [item.response.which for item in items]
        assert kinds == ["task", "status_update", "artifact_update", "status_update"]
        assert [item.seq for item in items] == sorted(item.seq or 0 for item in items)
        last = items[-1].response.status_update
        assert last and last.status.state is TaskState.COMPLETED


async def test_direct_reply_creates_no_task(store: MemoryStore) -> None:
    async def replier(ctx: RequestContext, task: TaskHandle) -> None:
        await task.reply(f"you said {ctx.text}")

    async with Engine(store, replier) as engine:
        answer = await engine.send_message(request("x"), ALICE)
        assert isinstance(answer, Message)
        assert answer.text() == "you said x"
        assert await store.count_tasks("t1") == 0
        items = await collect(await engine.send_streaming_message(request("y"), ALICE))
        assert [i.response.which for i in items] == ["message"]


async def test_finished_runs_leave_nothing_for_the_garbage_collector(store: MemoryStore) -> None:
    # A run and its handle used to refer to each other: every SendMessage left its run, its
    # task, context and live record in a cycle that only a collector pass freed (~6 µs of
    # collection per request under load).
    async with Engine(store, echo) as engine:
        await engine.send_message(request("warm up"), ALICE)
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for index in range(20):
                await engine.send_message(request(f"hello {index}", message_id=f"m{index}"), ALICE)
                await collect(await engine.send_streaming_message(request("again"), ALICE))
            await until(lambda: not engine._live, "the runs to end")
            await asyncio.sleep(0)  # and their asyncio tasks to finish
            gc.collect()
            left = {type(o).__name__ for o in gc.garbage}
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert not left & {"Run", "LiveHandle", "LiveTask", "RequestContext"}, left


async def test_a_handle_kept_past_its_run_refuses_to_reply(store: MemoryStore) -> None:
    kept: list[TaskHandle] = []

    async def keeper(ctx: RequestContext, task: TaskHandle) -> None:
        kept.append(task)
        await task.complete("done")

    async with Engine(store, keeper) as engine:
        answer = await engine.send_message(request("x"), ALICE)
        assert isinstance(answer, Task)
        await until(lambda: not engine._live, "the run to end")
        with pytest.raises(AgentError, match="has ended"):
            await kept[0].reply("too late")


async def test_failing_agent_fails_task_without_leaking_internals(store: MemoryStore) -> None:
    async def broken(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        raise RuntimeError("secret database password is hunter2")

    async with Engine(store, broken) as engine:
        task = await engine.send_message(request("x"), ALICE)
        assert isinstance(task, Task)
        assert task.status.state is TaskState.FAILED
        assert task.status.message
        text = task.status.message.text()
        assert text == FAILED_MESSAGE and "hunter2" not in text


async def test_cancel_stops_running_executor(store: MemoryStore) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async with Engine(store, slow) as engine:
        send = asyncio.ensure_future(engine.send_message(request("x"), ALICE))
        await asyncio.wait_for(started.wait(), 2)
        (record,) = (await store.list_tasks(TaskQuery("t1"))).records
        with pytest.raises(A2AError) as other:
            await engine.cancel_task(record.id, BOB)
        assert other.value.kind is ErrorKind.TASK_NOT_FOUND
        canceled = await engine.cancel_task(record.id, ALICE)
        assert canceled.status.state is TaskState.CANCELED
        await asyncio.wait_for(cancelled.wait(), 2)
        result = await asyncio.wait_for(send, 2)
        assert isinstance(result, Task) and result.status.state is TaskState.CANCELED
        with pytest.raises(A2AError) as again:
            await engine.cancel_task(record.id, ALICE)
        assert again.value.kind is ErrorKind.TASK_NOT_CANCELABLE


async def test_input_required_then_continue(store: MemoryStore) -> None:
    async def asker(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        if ctx.task is None:
            await task.require_input("what is your name?")
        else:
            await task.complete(f"hello {ctx.text}")

    async with Engine(store, asker) as engine:
        first = await engine.send_message(request("hi"), ALICE)
        assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
        second = await engine.send_message(request("ann", task_id=first.id, message_id="m2"), ALICE)
        assert isinstance(second, Task) and second.status.state is TaskState.COMPLETED
        assert [m.text() for m in second.history] == [
            "hi",
            "what is your name?",
            "ann",
            "hello ann",
        ]
        with pytest.raises(A2AError) as terminal:
            await engine.send_message(request("more", task_id=first.id, message_id="m3"), ALICE)
        assert terminal.value.kind is ErrorKind.UNSUPPORTED_OPERATION


async def test_wrong_state_move_raises_in_agent(store: MemoryStore) -> None:
    seen: list[str] = []

    async def confused(ctx: RequestContext, task: TaskHandle) -> None:
        await task.complete()
        try:
            await task.start_working()
        except WrongStateError as exc:
            seen.append(exc.state)

    async with Engine(store, confused) as engine:
        task = await engine.send_message(request("x"), ALICE)
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert seen == ["Completed"]


async def test_subscribe_follows_until_terminal_and_resumes_after_seq(store: MemoryStore) -> None:
    gate = asyncio.Event()

    async def gated(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await gate.wait()
        await task.update_artifact(text="a", last_chunk=True)
        await task.complete()

    async with Engine(store, gated) as engine:
        created = await engine.send_message(
            SendMessageRequest(
                message=request("x").message,
                configuration=SendMessageConfiguration(return_immediately=True),
            ),
            ALICE,
        )
        assert isinstance(created, Task)
        stream = await engine.subscribe(created.id, ALICE)
        watchers = [asyncio.ensure_future(collect(stream)) for _ in range(1)]
        await until(lambda: engine.bus.subscriber_count(created.id), "the watcher to follow")
        gate.set()
        (items,) = await asyncio.gather(*watchers)
        assert items[0].response.which == "task"
        assert items[-1].response.status_update is not None
        assert items[-1].response.status_update.status.state is TaskState.COMPLETED
        # Resume after the second event: exactly the later ones, nothing repeated.
        all_seqs = [i.seq for i in items]
        resumed = await collect(await engine.subscribe(created.id, ALICE, after_seq=2))
        assert [i.seq for i in resumed] == [s for s in all_seqs if s and s > 2]
        with pytest.raises(A2AError) as terminal:
            await engine.subscribe(created.id, ALICE)
        assert terminal.value.kind is ErrorKind.UNSUPPORTED_OPERATION


async def test_recovery_fails_tasks_left_running(store: MemoryStore) -> None:
    started = asyncio.Event()

    async def hang(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        started.set()
        await asyncio.sleep(30)

    engine = Engine(store, hang)
    await engine.start()
    send = asyncio.ensure_future(engine.send_message(request("x"), ALICE))
    await asyncio.wait_for(started.wait(), 2)
    await until(lambda: store.tasks_in_states(frozenset({TaskState.WORKING})), "a WORKING task")
    send.cancel()
    # Simulate a dead process: a new engine on the same store, without stopping the first.
    fresh = Engine(store, echo)
    await fresh.start()
    records = await store.tasks_in_states(frozenset({TaskState.FAILED}))
    assert len(records) == 1
    assert records[0].task.status.message
    await fresh.stop()
    await engine.stop()
