"""The global feed of a store: every append and push-config change, in commit order, per
tenant, resumable from a position (memory, SQLite and PostgreSQL behave the same)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.marks import STORES
from tests.store.records import new_task

from accord.core._records import PushConfigRecord, TaskRecord
from accord.core.agent import move
from accord.store._base import TaskStore
from accord.store._memory import MemoryStore
from accord.store._postgres import PostgresStore
from accord.store._sqlite import SqliteStore
from accord.wire._model import (
    TaskPushNotificationConfig,
    TaskState,
)


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    chosen: TaskStore
    if request.param == "memory":
        chosen = MemoryStore()
    elif request.param == "sqlite":
        chosen = SqliteStore(str(tmp_path / "feed.db"), synchronous="NORMAL")
    else:
        chosen = PostgresStore(request.getfixturevalue("pg_url"))
    await chosen.open()
    yield chosen
    await chosen.close()


async def advance(store: TaskStore, record: TaskRecord, move_name: str) -> TaskRecord:
    outcome = move(record, move_name, 2000)
    assert outcome.record is not None
    await store.append(outcome.record, outcome.events, record.seq)
    return outcome.record


async def test_feed_orders_appends_across_tasks_and_resumes(store: TaskStore) -> None:
    a = await new_task(store, "a", tenant="t1")
    b = await new_task(store, "b", tenant="t1")
    a = await advance(store, a, "work")
    await advance(store, b, "complete")
    await advance(store, a, "complete")

    feed = await store.read_feed(0, None)
    assert [(e.task_id, [ev.seq for ev in e.events]) for e in feed] == [
        ("a", [1]),
        ("b", [1]),
        ("a", [2]),
        ("b", [2]),
        ("a", [3]),
    ]
    positions = [e.position for e in feed]
    assert positions == sorted(positions) and len(set(positions)) == 5
    assert feed[0].events[0].kind == "task"
    # resume after the second entry: exactly the rest
    rest = await store.read_feed(positions[1], None)
    assert [e.position for e in rest] == positions[2:]
    assert await store.read_feed(positions[-1], None) == []
    assert [e.position for e in await store.read_feed(0, None, limit=2)] == positions[:2]


async def test_feed_is_scoped_by_tenant(store: TaskStore) -> None:
    await new_task(store, "mine", tenant="t1")
    await new_task(store, "theirs", tenant="t2")
    assert [e.task_id for e in await store.read_feed(0, "t1")] == ["mine"]
    assert [e.task_id for e in await store.read_feed(0, "t2")] == ["theirs"]
    assert [e.task_id for e in await store.read_feed(0, "")] == []


async def test_feed_carries_push_config_changes(store: TaskStore) -> None:
    record = await new_task(store, "p", tenant="t1")
    config = TaskPushNotificationConfig(id="c1", task_id="p", url="https://example.com/hook")
    await store.put_push_config(PushConfigRecord(config=config, tenant="t1", created_ms=1))
    feed = await store.read_feed(0, "t1")
    assert [(e.config_id, e.config is not None) for e in feed] == [("", False), ("c1", True)]
    assert feed[1].config is not None and feed[1].config.config.url == "https://example.com/hook"
    await store.delete_push_config("p", "c1")
    feed = await store.read_feed(feed[1].position, "t1")
    assert [(e.config_id, e.config) for e in feed] == [("c1", None)]
    assert record.state is TaskState.SUBMITTED
