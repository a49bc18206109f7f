"""The engine and a store that says which node runs a task (TaskHolds), with holds on and
off (``EngineConfig.task_holds``)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.agents._echo import echo
from accord.core._caller import Caller
from accord.engine import Engine
from accord.engine._engine import EngineConfig
from accord.store._memory import MemoryStore
from accord.wire._model import Message, Part, Role, SendMessageRequest, Task, TaskState

ALICE = Caller(identity="alice", tenant="t1")


class HoldingStore(MemoryStore):
    """A MemoryStore that records holds; ``elsewhere`` are tasks another node runs."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []
        self.elsewhere: set[str] = set()

    async def hold_task(self, task_id: str) -> bool:
        self.calls.append(("hold", task_id))
        return True

    async def release_task(self, task_id: str) -> None:
        self.calls.append(("release", task_id))

    async def task_held_elsewhere(self, task_id: str) -> bool:
        return task_id in self.elsewhere


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id="m1", role=Role.USER, parts=[Part(text=text)])
    )


async def test_a_run_is_held_and_released() -> None:
    store = HoldingStore()
    async with Engine(store, echo) as engine:
        task = await engine.send_message(request("hello"), ALICE)
        assert isinstance(task, Task)
        # the release runs in the background once the run has ended
        await until(lambda: len(store.calls) == 2, "the release")
    assert store.calls == [("hold", task.id), ("release", task.id)]


async def test_with_task_holds_off_nothing_is_held() -> None:
    store = HoldingStore()
    async with Engine(store, echo, EngineConfig(task_holds=False)) as engine:
        task = await engine.send_message(request("hello"), ALICE)
        assert isinstance(task, Task)
        assert task.status.state is TaskState.COMPLETED
    assert store.calls == []


async def test_recovery_spares_a_task_held_elsewhere_unless_holds_are_off() -> None:
    store = HoldingStore()
    started = asyncio.Event()

    async def hang(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        started.set()
        await asyncio.sleep(30)

    other_node = Engine(store, hang)
    await other_node.start()
    send = asyncio.ensure_future(other_node.send_message(request("x"), ALICE))
    await asyncio.wait_for(started.wait(), 2)
    (working,) = await until(
        lambda: store.tasks_in_states(frozenset({TaskState.WORKING})), "the task to be WORKING"
    )
    store.elsewhere.add(working.id)

    holding = Engine(store, echo)
    await holding.start()
    assert await store.tasks_in_states(frozenset({TaskState.FAILED})) == []
    await holding.stop()

    unaware = Engine(store, echo, EngineConfig(task_holds=False))
    await unaware.start()
    (failed,) = await store.tasks_in_states(frozenset({TaskState.FAILED}))
    assert failed.id == working.id
    await unaware.stop()
    send.cancel()
    await other_node.stop()


class ReconnectingStore(HoldingStore):
    """The node running ``retaking`` lost its lock connection: its lock is free at the first
    probe, and held again (taken back) after."""

    def __init__(self) -> None:
        super().__init__()
        self.retaking = ""
        self.probes = 0

    async def task_held_elsewhere(self, task_id: str) -> bool:
        if task_id != self.retaking:
            return await super().task_held_elsewhere(task_id)
        self.probes += 1
        return self.probes > 1


async def test_the_periodic_sweep_spares_a_task_whose_node_takes_its_lock_back() -> None:
    store = ReconnectingStore()
    started = asyncio.Event()

    async def hang(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        started.set()
        await asyncio.sleep(30)

    sweeping = Engine(store, echo)
    await sweeping.start()
    other_node = Engine(store, hang)
    await other_node.start()
    send = asyncio.ensure_future(other_node.send_message(request("x"), ALICE))
    try:
        await asyncio.wait_for(started.wait(), 2)
        (working,) = await store.tasks_in_states(frozenset({TaskState.WORKING}))
        store.retaking = working.id

        # Looked at again a moment later, the lock is held: the task is spared.
        assert await sweeping.recover(confirm_s=0.05) == 0
        assert store.probes == 2
        assert await store.tasks_in_states(frozenset({TaskState.FAILED})) == []

        # A sweep that does not look again (after a node was seen gone) takes it.
        store.probes = 0
        assert await sweeping.recover() == 1
        (failed,) = await store.tasks_in_states(frozenset({TaskState.FAILED}))
        assert failed.id == working.id
    finally:
        send.cancel()
        await other_node.stop()
        await sweeping.stop()


class GatedCommitStore(HoldingStore):
    """Appends wait for ``gate``, which closing the store opens: a commit still on its way
    when the engine stops."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.appending = 0  # appends on their way (waiting at the gate or being stored)

    async def append(self, *args: Any, **kwargs: Any) -> None:
        self.appending += 1
        try:
            await self.gate.wait()
            await super().append(*args, **kwargs)
        finally:
            self.appending -= 1

    async def close(self) -> None:
        self.gate.set()
        await until(lambda: not self.appending, "the appends to complete while the store closes")
        await super().close()


async def test_a_run_whose_commit_completes_while_stopping_starts_no_release() -> None:
    # Closing the store lets go of its holds; a release started then would run on a closed
    # store. The run still finishes, and its client still gets the task.
    store = GatedCommitStore()
    engine = Engine(store, echo)
    await engine.start()
    send = asyncio.ensure_future(engine.send_message(request("hello"), ALICE))
    # held: the run has started, its commit waits at the gate
    await until(lambda: store.calls and store.appending, "the run's commit to wait at the gate")
    await engine.stop()
    task = await asyncio.wait_for(send, 2)
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    await asyncio.sleep(0.05)  # a window: a release, had one started, would be recorded by now
    assert store.calls == [("hold", task.id)]


class ContestedStore(HoldingStore):
    """Another node holds the tasks in ``elsewhere``: a hold of one of them is refused."""

    async def hold_task(self, task_id: str) -> bool:
        taken = task_id not in self.elsewhere
        self.calls.append(("hold" if taken else "refused", task_id))
        return taken


async def ask_for_input(ctx: RequestContext, task: TaskHandle) -> None:
    await task.require_input("more?")


async def task_waiting_for_input(store: ContestedStore) -> Task:
    """A task another node runs: it asked for input, and the next message may reach any node."""
    async with Engine(store, ask_for_input) as other_node:
        created = await other_node.send_message(request("x"), ALICE)
    assert isinstance(created, Task) and created.status.state is TaskState.INPUT_REQUIRED
    store.elsewhere.add(created.id)
    store.calls.clear()
    return created


def follow_up(task: Task) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id="m2", role=Role.USER, parts=[Part(text="more")], task_id=task.id)
    )


async def test_a_run_whose_task_is_held_elsewhere_still_runs_and_releases_at_its_end() -> None:
    """The store keeps trying for a hold it refused until the task is released: the run's
    end must release it even though the hold was never taken."""
    store = ContestedStore()
    created = await task_waiting_for_input(store)
    async with Engine(store, echo) as engine:
        answer = await engine.send_message(follow_up(created), ALICE)
        assert isinstance(answer, Task) and answer.status.state is TaskState.COMPLETED
        # the release runs in the background once the run has ended
        await until(lambda: len(store.calls) == 2, "the release")
    assert store.calls == [("refused", created.id), ("release", created.id)]
