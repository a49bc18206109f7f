"""The channel outbox (accord.harness.channels._outbox_store) on every backend: rows owed per (task,
recipient, message), claimed in message order per recipient under a lease, retried, given
up, forgotten once delivered, and gone with their task; the feed position only grows."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from accord.harness.channels._outbox_store import (
    CHANNEL_TABLES,
    Delivery,
    Owed,
    channel_outbox,
)
from accord.store import SqliteStore, TaskStore

from .records import new_task

STORE_EXTENSIONS = (CHANNEL_TABLES,)  # (the store fixture opens its stores with them)
LEASE = 30_000


def keys(deliveries: list[Delivery]) -> list[tuple[str, str, int]]:
    return [(d.task_id, d.recipient, d.seq) for d in deliveries]


def owed(task_id: str, recipient: str, seq: int) -> Owed:
    return Owed("t1", task_id, recipient, seq)


async def test_rows_are_added_once_and_the_position_only_grows(store: TaskStore) -> None:
    outbox = channel_outbox(store)
    start = await outbox.position()
    await outbox.add([owed("a", "helper", 3), owed("a", "scout", 3)], start + 5)
    await outbox.add([owed("a", "helper", 3)], start + 2)  # again, from an older read
    assert await outbox.position() == start + 5
    rows = await outbox.deliveries("a")
    assert keys(rows) == [("a", "helper", 3), ("a", "scout", 3)]
    assert {(r.state, r.failures, r.last_error, r.tenant) for r in rows} == {
        ("pending", 0, "", "t1")
    }
    claimed = await outbox.claim(100, LEASE, 10)
    await outbox.delivered("a", "helper", 3, 200)
    # Added again (a crash between a delivery and the position's move): it stays delivered.
    await outbox.add([owed("a", "helper", 3)], start + 6)
    assert [r.state for r in await outbox.deliveries("a")] == ["delivered", "pending"]
    assert sorted(keys(claimed)) == [("a", "helper", 3), ("a", "scout", 3)]


async def test_a_recipient_gets_a_tasks_messages_in_order(store: TaskStore) -> None:
    outbox = channel_outbox(store)
    await outbox.add([owed("a", "helper", 5), owed("a", "helper", 3), owed("b", "helper", 2)], 1)
    first = await outbox.claim(100, LEASE, 10)
    assert sorted(keys(first)) == [("a", "helper", 3), ("b", "helper", 2)]
    assert {d.next_attempt_ms for d in first} == {100 + LEASE}
    # a:5 waits for a:3 until a:3 is delivered, even once a:3's lease is over.
    again = await outbox.claim(100 + LEASE, LEASE, 10)
    assert sorted(keys(again)) == [("a", "helper", 3), ("b", "helper", 2)]
    await outbox.delivered("a", "helper", 3, 500)
    await outbox.delivered("b", "helper", 2, 500)
    assert keys(await outbox.claim(100 + 3 * LEASE, LEASE, 10)) == [("a", "helper", 5)]


async def test_a_claim_is_a_lease(store: TaskStore) -> None:
    outbox = channel_outbox(store)
    await outbox.add([owed("a", "helper", 3)], 1)
    assert keys(await outbox.claim(1000, LEASE, 10)) == [("a", "helper", 3)]
    assert await outbox.claim(1000 + LEASE - 1, LEASE, 10) == []
    # The holder died: once the lease is over, the next claimer takes the row.
    assert keys(await outbox.claim(1000 + LEASE, LEASE, 10)) == [("a", "helper", 3)]


async def test_concurrent_claims_never_return_the_same_row(store: TaskStore) -> None:
    outbox = channel_outbox(store)
    await outbox.add([owed(f"t{n}", "helper", 2) for n in range(6)], 1)
    batches = await asyncio.gather(*(outbox.claim(100, LEASE, 2) for _ in range(5)))
    claimed = sorted(key for batch in batches for key in keys(batch))
    assert claimed == [(f"t{n}", "helper", 2) for n in range(6)]


async def test_a_failed_row_waits_for_its_retry_and_a_failing_one_lets_the_next_go(
    store: TaskStore,
) -> None:
    outbox = channel_outbox(store)
    await outbox.add([owed("a", "helper", 3), owed("a", "helper", 4)], 1)
    await outbox.claim(100, LEASE, 10)
    await outbox.failed("a", "helper", 3, failures=1, error="refused", retry_at_ms=900)
    assert await outbox.claim(899, LEASE, 10) == []
    [again] = await outbox.claim(900, LEASE, 10)
    assert (again.seq, again.failures, again.last_error) == (3, 1, "refused")
    await outbox.failed("a", "helper", 3, failures=2, error="still refused", retry_at_ms=None)
    assert keys(await outbox.claim(2000, LEASE, 10)) == [("a", "helper", 4)]
    failing = (await outbox.deliveries("a"))[0]
    assert (failing.state, failing.failures, failing.last_error) == ("failing", 2, "still refused")


async def test_delivered_rows_are_forgotten_after_a_while(store: TaskStore) -> None:
    outbox = channel_outbox(store)
    await outbox.add([owed("a", "helper", 3), owed("a", "scout", 3)], 1)
    await outbox.claim(100, LEASE, 10)
    await outbox.delivered("a", "helper", 3, 500)
    assert await outbox.forget_delivered(500) == 0
    assert await outbox.forget_delivered(501) == 1
    assert keys(await outbox.deliveries("a")) == [("a", "scout", 3)]


async def test_rows_go_with_their_task(store: TaskStore) -> None:
    outbox = channel_outbox(store)
    await new_task(store, "old", now_ms=1000, moves=("complete",))
    await new_task(store, "kept", now_ms=1000, moves=("work",))
    await outbox.add([owed("old", "helper", 2), owed("kept", "helper", 2)], 1)
    assert await store.delete_terminal_before(5000) == 1
    assert await outbox.deliveries("old") == []
    assert keys(await outbox.deliveries("kept")) == [("kept", "helper", 2)]


async def test_a_database_opened_with_messages_starts_the_outbox_at_the_feeds_end(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    store = SqliteStore(str(path))
    channel_outbox(store)
    await store.open()
    await new_task(store, "before", moves=("work",))
    await store.close()
    # As a database made before the outbox existed: its migration runs again.
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE channel_feed")
    conn.execute("DELETE FROM store_extensions WHERE name = 'channels'")
    conn.commit()
    conn.close()
    store = SqliteStore(str(path))
    outbox = channel_outbox(store)
    await store.open()
    try:
        feed = await store.read_feed(0, None)
        assert await outbox.position() == feed[-1].position > 0
    finally:
        await store.close()
