"""The LISTEN/NOTIFY bus: followers on one node wake when another node notifies.

Each "node" here is a bus (or an engine with its own store and bus) in this process, with its
own connections, as separate processes would have. The catch-up safety net is set to an hour
wherever a test is about NOTIFY, so a wake-up can only come from a notification.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest
from tests.waiting import until

from accord.agents._api import RequestContext, TaskHandle
from accord.bus._postgres import PostgresBus
from accord.core._caller import Caller
from accord.engine import Engine, StreamItem
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

HOUR = 3600.0
PATIENCE = 20.0  # a guard against hanging, not a timing assertion
ALICE = Caller(identity="alice", tenant="t1")


@pytest.fixture
async def nodes(pg_url: str) -> AsyncIterator[tuple[PostgresBus, PostgresBus]]:
    first, second = PostgresBus(pg_url, catch_up_s=HOUR), PostgresBus(pg_url, catch_up_s=HOUR)
    async with first, second:
        yield first, second


async def test_a_notify_on_one_node_wakes_followers_on_another(
    nodes: tuple[PostgresBus, PostgresBus],
) -> None:
    a, b = nodes
    with b.subscribe("task-1") as follower, b.subscribe("task-2") as bystander:
        follower.clear()
        bystander.clear()
        a.notify("task-1")
        assert await follower.wait(PATIENCE)
        assert b.received >= 1
        assert not await bystander.wait(0.2)  # another task's follower sleeps on


async def test_local_followers_wake_and_a_node_ignores_its_own_echo(
    nodes: tuple[PostgresBus, PostgresBus],
) -> None:
    a, b = nodes
    with a.subscribe("task-1") as local, b.subscribe("task-1") as remote:
        local.clear()
        remote.clear()
        a.notify("task-1")
        assert await local.wait(PATIENCE)
        assert await remote.wait(PATIENCE)
        local.clear()
        await asyncio.sleep(0.2)  # a window: the echo of a's NOTIFY comes back, and is dropped
        assert a.received == 0 and b.received == 1
        assert not await local.wait(0.01)


async def test_remote_listeners_hear_other_nodes_only(
    nodes: tuple[PostgresBus, PostgresBus],
) -> None:
    a, b = nodes
    heard: list[str | None] = []
    arrived = asyncio.Event()

    def listener(task_id: str | None) -> None:
        heard.append(task_id)
        arrived.set()

    b.add_remote_listener(listener)
    b.notify("local-task")  # b's own: not remote
    a.notify("task-1")
    await asyncio.wait_for(arrived.wait(), PATIENCE)
    assert heard == ["task-1"]


async def test_many_notifies_at_once_reach_every_follower(
    nodes: tuple[PostgresBus, PostgresBus],
) -> None:
    a, b = nodes
    followers = [b.subscribe(f"task-{i}") for i in range(200)]
    for follower in followers:
        follower.clear()
    for i in range(200):
        a.notify(f"task-{i}")
    woken = await asyncio.gather(*(f.wait(PATIENCE) for f in followers))
    assert all(woken)
    assert a.published < 200  # batched: ids notified together share NOTIFY round trips
    for follower in followers:
        follower.close()
    assert b.subscriber_count("task-0") == 0


async def test_the_catch_up_wakes_followers_when_a_notification_was_lost(pg_url: str) -> None:
    async with PostgresBus(pg_url, catch_up_s=0.2) as bus:
        anything: list[str | None] = []
        bus.add_remote_listener(anything.append)
        with bus.subscribe("task-1") as follower:
            follower.clear()
            # Nobody notifies (say, the writing node died between its commit and its NOTIFY).
            assert await follower.wait(PATIENCE)
        assert None in anything  # remote listeners hear "anything may have changed"


async def test_a_lost_listen_connection_is_replaced_and_followers_reread(
    nodes: tuple[PostgresBus, PostgresBus], pg_database: str
) -> None:
    a, b = nodes
    with b.subscribe("task-1") as follower:
        follower.clear()
        admin = await asyncpg.connect(pg_database)
        try:
            killed = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query LIKE 'LISTEN%'"
            )
        finally:
            await admin.close()
        assert killed >= 2  # a's and b's (a backend just closed may still be listed)
        # Reconnecting wakes every follower: what was missed meanwhile is found by re-reading.
        assert await follower.wait(PATIENCE)
        follower.clear()
        received = b.received
        a.notify("task-1")
        assert await follower.wait(PATIENCE)
        assert b.received > received


async def test_start_fails_when_the_database_cannot_be_reached() -> None:
    bus = PostgresBus("postgresql://postgres@127.0.0.1:1/none")
    with pytest.raises(OSError):
        await bus.start()


# --- engines on two nodes ------------------------------------------------------------------


def _request(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id="m1", role=Role.USER, parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=True),
    )


async def _collect(items: AsyncIterator[StreamItem | None]) -> list[StreamItem]:
    return [item async for item in items if item is not None]


async def test_a_follower_on_another_engine_sees_every_event_in_order(pg_url: str) -> None:
    gate = asyncio.Event()

    async def chatty(ctx: RequestContext, task: TaskHandle) -> None:
        await task.start_working()
        await gate.wait()
        for index in range(20):
            await task.update_artifact(text=f"chunk {index}", artifact_id="a1", append=index > 0)
        await task.complete()

    store_a, store_b = PostgresStore(pg_url), PostgresStore(pg_url)
    bus_a, bus_b = store_a.bus(catch_up_s=HOUR), store_b.bus(catch_up_s=HOUR)
    async with (
        Engine(store_a, chatty, bus=bus_a) as node_a,
        Engine(store_b, chatty, bus=bus_b) as node_b,
    ):
        created = await node_a.send_message(_request("go"), ALICE)
        assert isinstance(created, Task)

        async def working() -> bool:  # then both followers start from the same snapshot
            return (await node_b.get_task(created.id, ALICE)).status.state == TaskState.WORKING

        await until(working, "the task WORKING on node B", timeout_s=PATIENCE)
        remote = asyncio.ensure_future(_collect(await node_b.subscribe(created.id, ALICE)))
        local = asyncio.ensure_future(_collect(await node_a.subscribe(created.id, ALICE)))
        # both followers reach their wait (not needed for the result)
        await until(
            lambda: bus_a.subscriber_count(created.id) and bus_b.subscriber_count(created.id),
            "both followers waiting",
            timeout_s=PATIENCE,
        )
        gate.set()
        remote_items, local_items = await asyncio.wait_for(asyncio.gather(remote, local), PATIENCE)
        seqs = [item.seq for item in remote_items]
        assert seqs == [item.seq for item in local_items]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # no gap, no duplicate
        kinds = [item.response.which for item in remote_items[1:]]
        assert kinds.count("artifact_update") == 20
        last = remote_items[-1].response.status_update
        assert last is not None and last.status.state is TaskState.COMPLETED
        assert bus_b.received > 0
