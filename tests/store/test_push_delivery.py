"""The push-delivery part of the TaskStore contract (the durable outbox's cursor and state),
run against every backend."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from accord.store import SqliteStore, TaskStore
from accord.store._base import PushDelivery

from .records import artifact, commit, moved, new_task, push_config

LEASE = 30_000


def keys(deliveries: list[PushDelivery]) -> list[tuple[str, str]]:
    return [(d.config.config.task_id, d.config.config.id) for d in deliveries]


async def test_a_new_config_delivers_only_later_events(store: TaskStore) -> None:
    record = await new_task(store, "task-1", moves=("work",))
    config = push_config("task-1", "c1")
    await store.put_push_config(config)
    delivery = await store.get_push_delivery("task-1", "c1")
    assert delivery == PushDelivery(
        config=config,
        cursor=2,
        state="active",
        failures=0,
        last_error="",
        next_attempt_ms=0,
        task_seq=2,
    )
    assert await store.claim_push_deliveries(100, LEASE) == []  # nothing after seq 2 yet
    await commit(store, record, artifact(record, 1005))
    claimed = await store.claim_push_deliveries(100, LEASE)
    assert keys(claimed) == [("task-1", "c1")]
    assert claimed[0].cursor == 2 and claimed[0].task_seq == 3


async def test_deliver_after_sets_the_starting_cursor(store: TaskStore) -> None:
    await new_task(store, "task-1", moves=("work",))
    await store.put_push_config(push_config("task-1", "c1"), deliver_after=0)
    delivery = await store.get_push_delivery("task-1", "c1")
    assert delivery is not None and delivery.cursor == 0
    assert keys(await store.claim_push_deliveries(100, LEASE)) == [("task-1", "c1")]


async def test_a_claim_is_a_lease(store: TaskStore) -> None:
    await new_task(store, "task-1", moves=("work",))
    await store.put_push_config(push_config("task-1", "c1"), deliver_after=0)
    first = await store.claim_push_deliveries(1000, LEASE)
    assert keys(first) == [("task-1", "c1")] and first[0].next_attempt_ms == 1000 + LEASE
    # Held: nobody else gets it while the lease runs.
    assert await store.claim_push_deliveries(1000 + LEASE - 1, LEASE) == []
    assert await store.claim_push_deliveries(1000, LEASE, task_id="task-1") == []
    # The holder died: once the lease is over the next claimer resumes from the cursor.
    again = await store.claim_push_deliveries(1000 + LEASE, LEASE)
    assert keys(again) == [("task-1", "c1")] and again[0].cursor == 0


async def test_concurrent_claims_never_return_the_same_config(store: TaskStore) -> None:
    for index in range(6):
        await new_task(store, f"task-{index}", moves=("work",))
        await store.put_push_config(push_config(f"task-{index}", "c1"), deliver_after=0)
    batches = await asyncio.gather(
        *(store.claim_push_deliveries(100, LEASE, limit=2) for _ in range(5))
    )
    claimed = [key for batch in batches for key in keys(batch)]
    assert sorted(claimed) == [(f"task-{index}", "c1") for index in range(6)]


async def test_claim_by_task_and_order_by_due_time(store: TaskStore) -> None:
    for task_id in ("task-a", "task-b"):
        await new_task(store, task_id, moves=("work",))
        for config_id in ("c2", "c1"):
            await store.put_push_config(push_config(task_id, config_id), deliver_after=0)
    await store.update_push_delivery(
        "task-a", "c1", cursor=0, state="active", failures=1, last_error="x", next_attempt_ms=50
    )
    only_b = await store.claim_push_deliveries(100, LEASE, task_id="task-b")
    assert keys(only_b) == [("task-b", "c1"), ("task-b", "c2")]
    rest = await store.claim_push_deliveries(100, LEASE)
    assert keys(rest) == [("task-a", "c2"), ("task-a", "c1")]  # due at 0 before due at 50


async def test_update_moves_the_cursor_forward_only(store: TaskStore) -> None:
    await new_task(store, "task-1", moves=("work", "complete"))
    await store.put_push_config(push_config("task-1", "c1"), deliver_after=0)
    assert await store.update_push_delivery(
        "task-1", "c1", cursor=2, state="active", failures=0, last_error="", next_attempt_ms=9
    )
    # A holder whose lease ran out reports older progress: the cursor stays.
    assert await store.update_push_delivery(
        "task-1",
        "c1",
        cursor=1,
        state="active",
        failures=3,
        last_error="HTTP 503",
        next_attempt_ms=70,
    )
    delivery = await store.get_push_delivery("task-1", "c1")
    assert delivery is not None
    assert (delivery.cursor, delivery.failures, delivery.last_error) == (2, 3, "HTTP 503")
    assert delivery.next_attempt_ms == 70 and delivery.task_seq == 3


async def test_failing_and_done_configs_are_not_claimed(store: TaskStore) -> None:
    await new_task(store, "task-1", moves=("work",))
    for config_id in ("c1", "c2"):
        await store.put_push_config(push_config("task-1", config_id), deliver_after=0)
    await store.update_push_delivery(
        "task-1", "c1", cursor=0, state="failing", failures=8, last_error="x", next_attempt_ms=0
    )
    await store.update_push_delivery(
        "task-1", "c2", cursor=0, state="done", failures=0, last_error="", next_attempt_ms=0
    )
    assert await store.claim_push_deliveries(100, LEASE) == []
    failing = await store.list_push_deliveries("failing")
    assert keys(failing) == [("task-1", "c1")] and failing[0].failures == 8
    assert keys(await store.list_push_deliveries("done")) == [("task-1", "c2")]
    assert await store.list_push_deliveries("active") == []


async def test_replacing_a_config_revives_it_and_keeps_its_cursor(store: TaskStore) -> None:
    await new_task(store, "task-1", moves=("work",))
    await store.put_push_config(push_config("task-1", "c1"), deliver_after=0)
    await store.update_push_delivery(
        "task-1",
        "c1",
        cursor=1,
        state="failing",
        failures=8,
        last_error="HTTP 500",
        next_attempt_ms=99,
    )
    fixed = push_config("task-1", "c1", url="https://hooks.example/fixed")
    await store.put_push_config(fixed, deliver_after=0)
    delivery = await store.get_push_delivery("task-1", "c1")
    assert delivery is not None
    assert delivery.config == fixed
    assert (delivery.cursor, delivery.state, delivery.failures) == (1, "active", 0)
    assert (delivery.last_error, delivery.next_attempt_ms) == ("", 0)
    assert keys(await store.claim_push_deliveries(100, LEASE)) == [("task-1", "c1")]


async def test_deleting_a_config_or_its_task_drops_its_delivery(store: TaskStore) -> None:
    record = await new_task(store, "task-1", moves=("work",))
    await store.put_push_config(push_config("task-1", "c1"), deliver_after=0)
    await store.put_push_config(push_config("task-1", "c2"), deliver_after=0)
    assert await store.delete_push_config("task-1", "c1")
    assert await store.get_push_delivery("task-1", "c1") is None
    assert not await store.update_push_delivery(
        "task-1", "c1", cursor=2, state="active", failures=0, last_error="", next_attempt_ms=0
    )
    await commit(store, record, moved(record, "complete", 1100))
    assert await store.delete_terminal_before(10_000) == 1
    assert await store.get_push_delivery("task-1", "c2") is None
    assert await store.claim_push_deliveries(100, LEASE) == []


async def test_migration_starts_existing_configs_at_their_task_end(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    store = SqliteStore(path)
    await store.open()
    await new_task(store, "task-1", moves=("work", "complete"))
    await store.put_push_config(push_config("task-1", "c1"), deliver_after=0)
    await store.close()
    # Undo migration 2 by hand: the database a version-1 accord left behind.
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX push_due")
    for column in (
        "delivered_seq",
        "delivery_state",
        "failures",
        "last_error",
        "next_attempt_ms",
    ):
        conn.execute(f"ALTER TABLE push_configs DROP COLUMN {column}")
    conn.execute("DELETE FROM schema_version WHERE version >= 2")
    conn.commit()
    conn.close()
    store = SqliteStore(path)
    await store.open()
    try:
        delivery = await store.get_push_delivery("task-1", "c1")
        assert delivery is not None and delivery.cursor == 3 and delivery.state == "active"
        assert await store.claim_push_deliveries(100, LEASE) == []
    finally:
        await store.close()
