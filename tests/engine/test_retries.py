"""Safe retries in the engine: a request the caller sent already is answered with the first
one's result and carried out once — new tasks, continuations, a first request still running,
direct replies, streams, and Idempotency-Key calls; what is not a retry is carried out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.core._caller import Caller
from accord.core.views import TaskQuery
from accord.engine import Engine, EngineConfig
from accord.store import MemoryStore, SqliteStore, TaskStore
from accord.wire import A2AError, ErrorKind
from accord.wire._model import (
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

ALICE = Caller(identity="alice", tenant="t1")
BOB = Caller(identity="bob", tenant="t1")


def request(text: str, message_id: str, task_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=message_id, role=Role.USER, parts=[Part(text=text)], task_id=task_id
        )
    )


class Counting:
    """Counts turns; ``hold`` keeps every turn waiting until set; asks for more input."""

    def __init__(self) -> None:
        self.turns = 0
        self.hold = asyncio.Event()
        self.hold.set()

    async def __call__(self, ctx: RequestContext, task: TaskHandle) -> None:
        self.turns += 1
        await task.start_working()
        await self.hold.wait()
        await task.require_input(f"turn {self.turns}")


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> TaskStore:
    return MemoryStore() if request.param == "memory" else SqliteStore(str(tmp_path / "t.db"))


async def _count(store: TaskStore, tenant: str = "t1") -> int:
    return (await store.list_tasks(TaskQuery(tenant=tenant))).total_size


async def test_a_resent_first_message_gets_the_first_task_and_runs_nothing(
    store: TaskStore,
) -> None:
    agent = Counting()
    async with Engine(store, agent) as engine:
        first = await engine.send_message(request("hello", "m-1"), ALICE)
        again = await engine.send_message(request("hello", "m-1"), ALICE)
        assert isinstance(first, Task) and isinstance(again, Task)
        assert again.id == first.id
        assert again.status.state is TaskState.INPUT_REQUIRED
        assert agent.turns == 1
        assert await _count(store) == 1
        assert engine.retries.replayed == {"SendMessage": 1}


async def test_a_resent_continuation_is_stored_and_answered_once(store: TaskStore) -> None:
    agent = Counting()
    async with Engine(store, agent) as engine:
        task = await engine.send_message(request("hello", "m-1"), ALICE)
        assert isinstance(task, Task)
        more = request("more", "m-2", task_id=task.id)
        first = await engine.send_message(more, ALICE)
        again = await engine.send_message(more, ALICE)
        assert isinstance(again, Task) and isinstance(first, Task)
        assert again.id == task.id and again.status == first.status
        assert agent.turns == 2
        said = [m.message_id for m in again.history if m.role == Role.USER]
        assert said == ["m-1", "m-2"]


async def test_a_retry_while_the_first_runs_waits_for_its_turn(store: TaskStore) -> None:
    agent = Counting()
    agent.hold.clear()
    async with Engine(store, agent) as engine:
        first = asyncio.ensure_future(engine.send_message(request("slow", "m-1"), ALICE))
        await until(lambda: agent.turns, "the first turn")
        again = asyncio.ensure_future(engine.send_message(request("slow", "m-1"), ALICE))
        await asyncio.sleep(0.05)  # a window: the retry, were it not waiting, would answer now
        assert not again.done()  # it waits for the first one's turn, as the first does
        agent.hold.set()
        one, two = await asyncio.gather(first, again)
        assert isinstance(one, Task) and isinstance(two, Task)
        assert one.id == two.id and two.status.state is TaskState.INPUT_REQUIRED
        assert agent.turns == 1
        assert await _count(store) == 1


async def test_a_resent_stream_follows_the_first_turn(store: TaskStore) -> None:
    agent = Counting()
    async with Engine(store, agent) as engine:
        first = await engine.send_message(request("hello", "m-1"), ALICE)
        stream = await engine.send_streaming_message(request("hello", "m-1"), ALICE)
        items = [item async for item in stream if item is not None]
        assert isinstance(first, Task)
        assert [i.response.task.id for i in items if i.response.task] == [first.id]
        assert agent.turns == 1


async def test_a_direct_reply_is_given_again(store: TaskStore) -> None:
    replies = 0

    async def answer(ctx: RequestContext, task: TaskHandle) -> None:
        nonlocal replies
        replies += 1
        await task.reply(f"reply {replies}")

    async with Engine(store, answer) as engine:
        first = await engine.send_message(request("hi", "m-1"), ALICE)
        # The answer is recorded by a write of its own (keyed "m:" + the messageId).
        await until(lambda: store.find_request("t1", "alice", "m:m-1"), "the answer recorded")
        again = await engine.send_message(request("hi", "m-1"), ALICE)
        assert isinstance(first, Message) and isinstance(again, Message)
        assert again.parts[0].text == first.parts[0].text == "reply 1"
        assert replies == 1


async def test_what_is_not_a_retry_is_carried_out(store: TaskStore) -> None:
    agent = Counting()
    async with Engine(store, agent) as engine:
        first = await engine.send_message(request("hello", "m-1"), ALICE)
        other_text = await engine.send_message(request("other", "m-1"), ALICE)
        other_caller = await engine.send_message(request("hello", "m-1"), BOB)
        ids = {t.id for t in (first, other_text, other_caller) if isinstance(t, Task)}
        assert len(ids) == 3
        assert agent.turns == 3


async def test_an_idempotency_key_reused_for_another_request_is_refused(
    store: TaskStore,
) -> None:
    async with Engine(store, Counting()) as engine:
        first = await engine.send_message(request("hello", "m-1"), ALICE, idempotency_key="k-1")
        again = await engine.send_message(request("hello", "m-1"), ALICE, idempotency_key="k-1")
        assert isinstance(first, Task) and isinstance(again, Task) and again.id == first.id
        with pytest.raises(A2AError) as refused:
            await engine.send_message(request("changed", "m-2"), ALICE, idempotency_key="k-1")
        assert refused.value.kind is ErrorKind.INVALID_PARAMS
        assert await _count(store) == 1


async def test_a_cancel_with_the_same_key_answers_the_first_cancel(store: TaskStore) -> None:
    async with Engine(store, Counting()) as engine:
        task = await engine.send_message(request("hello", "m-1"), ALICE)
        assert isinstance(task, Task)
        cancel = CancelTaskRequest(id=task.id)

        def once() -> object:
            return engine.retries.once(
                ALICE, "k-c", "CancelTask", cancel, lambda: engine.cancel_task(task.id, ALICE), Task
            )

        first = await once()
        again = await once()  # without the key: TaskNotCancelableError
        assert isinstance(again, Task) and again == first
        assert again.status.state is TaskState.CANCELED
        with pytest.raises(A2AError):
            await engine.cancel_task(task.id, ALICE)


async def test_a_push_config_created_twice_with_one_key_is_one_config(store: TaskStore) -> None:
    async with Engine(store, Counting()) as engine:
        task = await engine.send_message(request("hello", "m-1"), ALICE)
        assert isinstance(task, Task)
        config = TaskPushNotificationConfig(url="https://hooks.example/a", task_id=task.id)

        async def create() -> TaskPushNotificationConfig:
            return await engine.retries.once(
                ALICE,
                "k-p",
                "CreateTaskPushNotificationConfig",
                config,
                lambda: engine.create_push_config(config, ALICE),
                TaskPushNotificationConfig,
            )

        first, again = await create(), await create()
        assert again.id == first.id
        assert len(await engine.list_push_configs(task.id, ALICE)) == 1


async def test_requests_are_forgotten_after_the_window(store: TaskStore) -> None:
    agent = Counting()
    now = [1_000_000]
    config = EngineConfig(idempotency_window_ms=60_000)
    async with Engine(store, agent, config, clock=lambda: now[0]) as engine:
        first = await engine.send_message(request("hello", "m-1"), ALICE)
        now[0] += 60_001
        assert await engine.retries.sweep() == 1
        again = await engine.send_message(request("hello", "m-1"), ALICE)
        assert isinstance(first, Task) and isinstance(again, Task)
        assert again.id != first.id and agent.turns == 2


async def test_without_retry_by_message_id_a_reused_id_makes_a_new_task(store: TaskStore) -> None:
    """For clients that reuse one messageId for different messages (against the
    specification, as the official conformance kit does): only an Idempotency-Key is a key."""
    agent = Counting()
    config = EngineConfig(retry_by_message_id=False)
    async with Engine(store, agent, config) as engine:
        first = await engine.send_message(request("hi", "m-same"), ALICE)
        again = await engine.send_message(request("hi", "m-same"), ALICE)
        assert isinstance(first, Task) and isinstance(again, Task)
        assert first.id != again.id and agent.turns == 2
