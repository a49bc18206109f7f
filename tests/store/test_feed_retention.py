"""Retention prunes the global feed with the tasks it deletes (every backend), and the feed's
guarantees hold across the deletion: kept entries stay in order, positions keep growing."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from accord.store import MemoryStore, SqliteStore, TaskStore
from accord.store._base import FeedEntry
from accord.store._postgres import PostgresStore

from .records import new_task, push_config


async def whole_feed(store: TaskStore, after: int, last_task: str) -> list[FeedEntry]:
    """Every entry after ``after``, once an entry of ``last_task`` (the latest write) is in
    it: on PostgreSQL another client of the server may hold the feed back for a moment."""
    entries: list[FeedEntry] = []
    for _ in range(200):
        entries, position = [], after
        while page := await store.read_feed(position, None, limit=3):
            entries += page
            position = page[-1].position
        if any(entry.task_id == last_task for entry in entries):
            return entries
        await asyncio.sleep(0.05)
    pytest.fail(f"the feed after {after} never showed {last_task}: {entries}")


async def stored_feed_task_ids(store: TaskStore) -> set[str]:
    """Task ids of every feed row the backend still keeps, read past the store's API."""
    if isinstance(store, MemoryStore):
        return {entry.task_id for entry in store._feed}
    if isinstance(store, SqliteStore):
        conn = sqlite3.connect(store.path)
        try:
            return {row[0] for row in conn.execute("SELECT task_id FROM feed")}
        finally:
            conn.close()
    assert isinstance(store, PostgresStore)
    return {row[0] for row in await store.pool.fetch("SELECT task_id FROM feed")}


async def test_retention_removes_the_deleted_tasks_feed_entries(store: TaskStore) -> None:
    await new_task(store, "old-a", now_ms=1000, moves=("complete",))
    await store.put_push_config(push_config("old-a", "c1"))
    await new_task(store, "kept", now_ms=1000, moves=("work",))
    await store.put_push_config(push_config("kept", "c1"))
    await new_task(store, "new-done", now_ms=9000, moves=("complete",))
    # The newest entries belong to a task retention deletes.
    await new_task(store, "old-b", now_ms=1000, moves=("fail",))
    await store.put_push_config(push_config("old-b", "c1"))
    before = await whole_feed(store, 0, "old-b")
    newest = before[-1].position
    assert newest == max(entry.position for entry in before)
    assert [e.task_id for e in before].count("old-b") == 3  # created, failed, config

    assert await store.delete_terminal_before(5000) == 2

    after = await whole_feed(store, 0, "new-done")
    assert {e.task_id for e in after} == {"kept", "new-done"}
    assert after == [e for e in before if e.task_id in ("kept", "new-done")]
    assert await stored_feed_task_ids(store) == {"kept", "new-done"}
    # Positions keep growing past every one given before, deleted ones included.
    await new_task(store, "fresh", now_ms=9000)
    resumed = await whole_feed(store, newest, "fresh")
    assert [e.task_id for e in resumed] == ["fresh"]
    assert resumed[0].position > newest
    assert [e.task_id for e in await whole_feed(store, 0, "fresh")] == [
        e.task_id for e in after
    ] + ["fresh"]


async def test_a_tenant_reader_sees_the_same_pruned_feed(store: TaskStore) -> None:
    await new_task(store, "mine-old", tenant="t1", now_ms=1000, moves=("complete",))
    await new_task(store, "mine", tenant="t1", now_ms=1000, moves=("work",))
    await new_task(store, "theirs-old", tenant="t2", now_ms=1000, moves=("complete",))
    await whole_feed(store, 0, "theirs-old")
    assert await store.delete_terminal_before(5000) == 2
    mine = await store.read_feed(0, "t1")
    assert [e.task_id for e in mine] == ["mine", "mine"]
    assert await store.read_feed(0, "t2") == []


async def test_memory_store_lets_go_of_deleted_tasks_events() -> None:
    store = MemoryStore()
    await new_task(store, "old", now_ms=1000, moves=("work", "complete"))
    await store.put_push_config(push_config("old", "c1"))
    await new_task(store, "kept", now_ms=1000)
    assert len(store._feed) == 5
    assert await store.delete_terminal_before(5000) == 1
    assert [entry.task_id for entry in store._feed] == ["kept"]
    assert (await store.read_feed(0, None))[0].position == 5


async def test_opening_an_older_sqlite_database_drops_feed_rows_of_deleted_tasks(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.db")
    store = SqliteStore(path)
    await store.open()
    await new_task(store, "gone", now_ms=1000, moves=("complete",))
    await new_task(store, "kept", now_ms=1000)
    await store.close()
    # What a version-3 accord's retention left behind: the task deleted, its feed rows kept.
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX feed_by_task")
    conn.execute("DELETE FROM schema_version WHERE version >= 4")
    conn.execute("DELETE FROM events WHERE task_id = 'gone'")
    conn.execute("DELETE FROM tasks WHERE id = 'gone'")
    conn.commit()
    conn.close()
    store = SqliteStore(path)
    await store.open()
    try:
        assert await stored_feed_task_ids(store) == {"kept"}
        assert [e.task_id for e in await store.read_feed(0, None)] == ["kept"]
    finally:
        await store.close()


async def test_opening_an_older_postgres_database_drops_feed_rows_of_deleted_tasks(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    await store.open()
    try:
        await new_task(store, "gone", now_ms=1000, moves=("complete",))
        await new_task(store, "kept", now_ms=1000)
        # What a version-2 accord's retention left behind: the task deleted, its feed rows kept.
        await store.pool.execute("DROP INDEX feed_by_task")
        await store.pool.execute("DELETE FROM schema_version WHERE version >= 3")
        await store.pool.execute("DELETE FROM events WHERE task_id = 'gone'")
        await store.pool.execute("DELETE FROM tasks WHERE id = 'gone'")
        assert await stored_feed_task_ids(store) == {"gone", "kept"}
    finally:
        await store.close()
    store = PostgresStore(pg_url)
    await store.open()
    try:
        assert await stored_feed_task_ids(store) == {"kept"}
    finally:
        await store.close()
