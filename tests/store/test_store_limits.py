"""Limits enforced by the store in the writing transaction, on every backend: a creation over
the tenant's task limit and a new config over the task's config limit fail alone and write
nothing, however many writers race."""

from __future__ import annotations

import asyncio

import pytest

from accord.store import LimitExceeded, SqliteStore, TaskStore

from .records import commit, created, moved, new_task, push_config


async def create(store: TaskStore, task_id: str, limit: int | None, tenant: str = "t1") -> None:
    outcome = created(task_id, tenant=tenant)
    assert outcome.record is not None
    await store.append(outcome.record, outcome.events, 0, tenant_task_limit=limit)


async def test_a_creation_over_the_tenant_limit_fails_and_writes_nothing(
    store: TaskStore,
) -> None:
    await create(store, "task-1", 2)
    await create(store, "task-2", 2)
    with pytest.raises(LimitExceeded) as refused:
        await create(store, "task-3", 2)
    assert (refused.value.limit, refused.value.value, refused.value.task_id) == (
        "tasks_per_tenant",
        2,
        "task-3",
    )
    assert await store.get_task("task-3", None) is None
    assert await store.read_events("task-3", 0) == []
    assert all(entry.task_id != "task-3" for entry in await store.read_feed(0, None))
    assert await store.count_tasks("t1") == 2
    # Other tenants have their own count; a creation without a limit is not refused.
    await create(store, "task-4", 2, tenant="t2")
    await create(store, "task-5", None)
    assert await store.count_tasks("t1") == 3


async def test_the_limit_counts_only_creations(store: TaskStore) -> None:
    record = await new_task(store, "task-1")
    outcome = moved(record, "work", 1001)
    assert outcome.record is not None
    # An append to an existing task is no creation: the limit does not apply.
    await store.append(outcome.record, outcome.events, record.seq, tenant_task_limit=0)
    stored = await store.get_task("task-1", None)
    assert stored is not None and stored.seq == 2


async def test_concurrent_creations_leave_exactly_the_limit(store: TaskStore) -> None:
    results = await asyncio.gather(
        *(create(store, f"task-{n:02}", 5) for n in range(20)), return_exceptions=True
    )
    refused = [r for r in results if isinstance(r, LimitExceeded)]
    assert [r for r in results if r is not None and not isinstance(r, LimitExceeded)] == []
    assert len(refused) == 15
    assert await store.count_tasks("t1") == 5
    stored = [n for n in range(20) if await store.get_task(f"task-{n:02}", None) is not None]
    assert len(stored) == 5


async def test_an_over_limit_creation_fails_alone_among_concurrent_writes(
    store: TaskStore,
) -> None:
    existing = await new_task(store, "task-0")
    work = moved(existing, "work", 1001)
    assert work.record is not None
    outcome = created("other", tenant="t2")
    assert outcome.record is not None

    async def create_other() -> None:  # started with the others (an append may queue
        # when called: the SQLite store's does)
        assert outcome.record is not None
        await store.append(outcome.record, outcome.events, 0, tenant_task_limit=1)

    # One loop turn: on SQLite one transaction, whose one run of appends holds every write below.
    before = store.commit_stats if isinstance(store, SqliteStore) else None
    results = await asyncio.gather(
        create(store, "task-1", 2),
        create_other(),
        create(store, "task-2", 2),  # the creation just before it fills the tenant
        commit(store, existing, work),
        create(store, "task-3", None),
        return_exceptions=True,
    )
    assert [type(r).__name__ for r in results] == [
        "NoneType",
        "NoneType",
        "LimitExceeded",
        "TaskRecord",
        "NoneType",
    ]
    assert await store.get_task("task-1", None) is not None
    assert await store.get_task("other", None) is not None
    assert await store.get_task("task-2", None) is None
    assert await store.get_task("task-0", None) == work.record
    assert await store.get_task("task-3", None) is not None
    assert await store.count_tasks("t1") == 3
    if isinstance(store, SqliteStore):
        assert before is not None
        after = store.commit_stats
        assert after.commits == before.commits + 1  # the others committed with it
        assert after.replayed == before.replayed + 5  # its run, replayed one by one


async def test_a_new_config_over_the_task_limit_fails_a_replacement_does_not(
    store: TaskStore,
) -> None:
    await new_task(store, "task-1")
    await store.put_push_config(push_config("task-1", "c1"), max_per_task=2)
    await store.put_push_config(push_config("task-1", "c2"), max_per_task=2)
    with pytest.raises(LimitExceeded) as refused:
        await store.put_push_config(push_config("task-1", "c3"), max_per_task=2)
    assert (refused.value.limit, refused.value.value, refused.value.task_id) == (
        "push_configs_per_task",
        2,
        "task-1",
    )
    replacement = push_config("task-1", "c1", url="https://hooks.example/b")
    await store.put_push_config(replacement, max_per_task=2)
    stored = await store.list_push_configs("task-1")
    assert [c.config.id for c in stored] == ["c1", "c2"]
    assert stored[0].config.url == "https://hooks.example/b"
    assert await store.get_push_delivery("task-1", "c3") is None
    # Without a limit the store stores what it is given.
    await store.put_push_config(push_config("task-1", "c3"))
    assert len(await store.list_push_configs("task-1")) == 3


async def test_concurrent_new_configs_leave_exactly_the_limit(store: TaskStore) -> None:
    await new_task(store, "task-1")
    results = await asyncio.gather(
        *(store.put_push_config(push_config("task-1", f"c{n}"), max_per_task=3) for n in range(10)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, LimitExceeded) for r in results) == 7
    assert sum(r is None for r in results) == 3
    assert len(await store.list_push_configs("task-1")) == 3
