"""A message continuing a task, stored with its run's first command (one append, not two in
sequence) when the agent says it acts outside accord only after a command of its run is
durable (``ActsAfterFirstMove``) and no other process writes the store; the message is
never shown, nor its client answered, before that append is durable."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.waiting import until

from accord.agents import ActsAfterFirstMove, RequestContext, TaskHandle
from accord.core._caller import Caller
from accord.core._events import Event
from accord.core._records import TaskRecord
from accord.engine import Engine
from accord.store import SeqConflict
from accord.store._memory import MemoryStore
from accord.store._sqlite import SqliteStore
from accord.wire import A2AError
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatusUpdateEvent,
)

ALICE = Caller(identity="alice", tenant="t1")


async def refused(error: Exception) -> None:
    raise error


class Appends:
    """Remembers each append's events (the store's own ``append`` does the work)."""

    def __init__(self, store: MemoryStore | SqliteStore) -> None:
        self.appends: list[list[Event]] = []
        self.refuse_next = False
        original = store.append

        def append(
            record: TaskRecord, events: Sequence[Event], expected_seq: int, **kwargs: Any
        ) -> Any:
            if self.refuse_next:  # (as another writer's append would make it)
                self.refuse_next = False
                return refused(SeqConflict(record.id, expected_seq, expected_seq + 1))
            self.appends.append(list(events))
            return original(record, events, expected_seq, **kwargs)

        store.append = append  # type: ignore[method-assign]

    def holding(self, message_id: str) -> list[Event]:
        """The append that stored the message ``message_id``."""
        for events in self.appends:
            if any(isinstance(e.body, Message) and e.body.message_id == message_id for e in events):
                return events
        raise AssertionError(f"no append stored {message_id}")


def working_in(events: list[Event]) -> bool:
    return any(
        isinstance(e.body, TaskStatusUpdateEvent) and e.body.status.state is TaskState.WORKING
        for e in events
    )


class Parker:
    """Works on each message and asks for the next; ``gate`` (when set) holds a run before
    its first command."""

    acts_after_first_move = True

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()
        self.move_first = True
        self.journals = False

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if not self.move_first:
            return  # a run that makes no move: the message is stored all the same
        await task.start_working()
        if self.journals:
            await task.journal({"asked": ctx.text})  # (what a model's answer would be)
        await task.require_input(f"answered {ctx.text}")

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        return None


class PlainParker(Parker):
    """The same agent without the capability."""

    acts_after_first_move = False


def request(text: str, task_id: str = "", immediate: bool = False) -> SendMessageRequest:
    configuration = SendMessageConfiguration(return_immediately=True) if immediate else None
    return SendMessageRequest(
        message=Message(
            message_id=f"m-{text}-{task_id}",
            role=Role.USER,
            parts=[Part(text=text)],
            task_id=task_id,
        ),
        **({"configuration": configuration} if configuration is not None else {}),
    )


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryStore | SqliteStore:
    if request.param == "sqlite":
        return SqliteStore(str(tmp_path / "accord.db"))
    return MemoryStore()


async def parked(engine: Engine) -> Task:
    task = await engine.send_message(request("hello"), ALICE)
    assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
    return task


def test_the_capability_is_found_by_isinstance() -> None:
    assert isinstance(Parker(), ActsAfterFirstMove)


async def test_a_continued_message_is_stored_with_the_runs_first_command(
    store: MemoryStore | SqliteStore,
) -> None:
    seen = Appends(store)
    async with Engine(store, Parker()) as engine:
        task = await parked(engine)
        answered = await engine.send_message(request("again", task.id), ALICE)
        assert isinstance(answered, Task)
        assert answered.history[-1].text() == "answered again"
        assert working_in(seen.holding(f"m-again-{task.id}"))  # one append: message, WORKING


@pytest.mark.parametrize("case", ["agent without the capability", "store of several nodes"])
async def test_otherwise_the_message_is_stored_alone_before_the_run(case: str) -> None:
    shared = case == "store of several nodes"
    store = SharedMemory() if shared else MemoryStore()
    seen = Appends(store)
    async with Engine(store, Parker() if shared else PlainParker()) as engine:
        task = await parked(engine)
        await engine.send_message(request("again", task.id), ALICE)
        assert not working_in(seen.holding(f"m-again-{task.id}"))


class SharedMemory(MemoryStore):
    """A memory store that says several nodes share it (accord.store.SharedStore)."""

    def bus(self) -> Any:
        raise NotImplementedError

    def claim_table(self) -> Any:
        raise NotImplementedError

    async def nodes(self) -> list[Any]:
        return []


async def test_the_message_is_neither_shown_nor_answered_before_its_append(
    store: MemoryStore | SqliteStore,
) -> None:
    agent = Parker()
    async with Engine(store, agent) as engine:
        task = await parked(engine)
        agent.gate, agent.started = asyncio.Event(), asyncio.Event()
        sending = asyncio.ensure_future(engine.send_message(request("again", task.id), ALICE))
        await agent.started.wait()
        shown = await engine.get_task(task.id, ALICE)
        assert [m.text() for m in shown.history] == ["hello", "answered hello"]
        assert not sending.done()
        agent.gate.set()
        answered = await sending
        assert isinstance(answered, Task)
        stored = await store.get_task(task.id, None)
        assert stored is not None and stored.task.history[-2].text() == "again"


async def test_a_run_that_makes_no_move_still_stores_its_message(
    store: MemoryStore | SqliteStore,
) -> None:
    agent = Parker()
    async with Engine(store, agent) as engine:
        task = await parked(engine)
        agent.move_first = False
        answered = await engine.send_message(request("quiet", task.id), ALICE)
        assert isinstance(answered, Task) and answered.history[-1].text() == "quiet"
        stored = await store.get_task(task.id, None)
        assert stored is not None and stored.task.history[-1].text() == "quiet"


async def test_return_immediately_answers_once_the_message_alone_is_stored(
    store: MemoryStore | SqliteStore,
) -> None:
    seen = Appends(store)
    agent = Parker()
    async with Engine(store, agent) as engine:
        task = await parked(engine)
        agent.gate = asyncio.Event()  # the run waits: the answer does not
        answered = await engine.send_message(request("soon", task.id, immediate=True), ALICE)
        assert isinstance(answered, Task) and answered.history[-1].text() == "soon"
        assert not working_in(seen.holding(f"m-soon-{task.id}"))
        agent.gate.set()


async def test_a_held_message_the_store_refuses_is_an_error_and_no_turn(
    store: MemoryStore | SqliteStore,
) -> None:
    """Nothing of the run is stored without its message: its journal entry, decided behind
    the refused append, is not decided again on the task without it."""
    seen = Appends(store)
    agent = Parker()
    async with Engine(store, agent) as engine:
        task = await parked(engine)
        agent.journals = True
        seen.refuse_next = True
        with pytest.raises(A2AError):
            await engine.send_message(request("lost", task.id), ALICE)
        stored = await store.get_task(task.id, None)
        assert stored is not None
        assert [m.text() for m in stored.task.history] == ["hello", "answered hello"]
        assert not [e for e in await store.read_events(task.id, 0, 100) if e.kind == "journal"]
        await until(lambda: not engine.running(task.id), "the run to stop")
        again = await engine.send_message(request("later", task.id), ALICE)  # the task goes on
        assert isinstance(again, Task) and again.history[-1].text() == "answered later"
