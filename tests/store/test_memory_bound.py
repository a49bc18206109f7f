"""The in-memory store at size: ended tasks bounded on request, and tasks held where the
cyclic garbage collector does not walk them (docs/storage.md, "The memory store at size")."""

from __future__ import annotations

import gc

import pytest

from accord.core.views import TaskQuery
from accord.store import MemoryStore, open_store
from accord.wire._model import TaskState

from .records import commit, continued, created, new_task, push_config


async def test_the_oldest_ended_tasks_go_past_the_bound() -> None:
    store = MemoryStore(max_ended_tasks=32)
    await store.open()
    waiting = await new_task(store, "waiting", moves=("work", "require_input"))
    for n in range(100):
        await new_task(store, f"task-{n:03}", moves=("work", "complete"))
    await store.put_push_config(push_config("task-099", "c1"))
    page = await store.list_tasks(TaskQuery(tenant="t1", page_size=100))
    ids = {record.id for record in page.records}
    assert "waiting" in ids  # not ended: never deleted this way
    ended = ids - {"waiting"}
    assert len(ended) <= 32
    assert "task-099" in ended and "task-000" not in ended
    assert ended == {f"task-{n:03}" for n in range(100 - len(ended), 100)}  # the newest kept
    assert await store.get_task("task-000", "t1") is None
    assert await store.read_events("task-000", 0) == []
    feed = await store.read_feed(0, None, limit=1000)
    assert {entry.task_id for entry in feed} == ids
    # a waiting task that goes on and ends counts from then
    record = await commit(store, waiting, continued(waiting, "more", 5000))
    assert await store.get_task("waiting", "t1") == record


async def test_without_a_bound_every_task_is_kept() -> None:
    store = MemoryStore()
    await store.open()
    for n in range(100):
        await new_task(store, f"task-{n:03}", moves=("work", "complete"))
    assert await store.count_tasks("t1") == 100


async def test_the_bound_is_a_store_url_option() -> None:
    store = open_store("memory://?max_ended_tasks=4")
    assert isinstance(store, MemoryStore)
    await store.open()
    for n in range(10):
        await new_task(store, f"task-{n}", moves=("work", "complete"))
    assert await store.count_tasks("t1") <= 4
    for url in ("memory://?max_ended_tasks=0", "memory://?max_ended_tasks=x", "memory://?x=1"):
        with pytest.raises(ValueError, match="memory://"):
            open_store(url)


async def test_stored_tasks_leave_nothing_for_the_collector_to_walk() -> None:
    """A full collection's cost does not grow with the tasks stored: they add no object the
    collector tracks (each used to add ~13)."""
    store = MemoryStore()
    await store.open()
    for n in range(1000):  # past the records kept decoded; the codecs' caches warm
        await commit(store, None, created(f"warm-{n}", now_ms=1000 + n))
    gc.collect()
    before = len(gc.get_objects())
    for n in range(2000):
        record = await commit(store, None, created(f"task-{n}", now_ms=1000 + n))
        assert record.state is TaskState.SUBMITTED
    gc.collect()
    gc.collect()
    assert len(gc.get_objects()) - before < 200
