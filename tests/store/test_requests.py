"""The request log of safe retries, on every backend: a key recorded with the append that
carried its request out, a second append with the same key refused and writing nothing,
answers recorded apart from appends, and forgetting by age."""

from __future__ import annotations

import asyncio

import pytest

from accord.core._records import RequestKey
from accord.store import TaskStore
from accord.store._base import DuplicateRequest, StoredRequest

from .records import continued, created, moved


def key(name: str, *, caller: str = "alice", tenant: str = "t1", at: int = 1000) -> RequestKey:
    return RequestKey(tenant, caller, name, b"digest-" + name.encode(), at)


async def test_an_append_records_its_request_and_a_second_one_is_refused(
    store: TaskStore,
) -> None:
    first = created("task-1")
    assert first.record is not None
    await store.append(first.record, first.events, 0, requests=[key("m:1")])
    found = await store.find_request("t1", "alice", "m:1")  # type: ignore[attr-defined]
    assert found == StoredRequest(key("m:1"), "task-1")

    again = created("task-2")  # the same request retried, decided as a new task
    assert again.record is not None
    with pytest.raises(DuplicateRequest) as refused:
        await store.append(again.record, again.events, 0, requests=[key("m:1")])
    assert refused.value.task_id == "task-1"
    assert await store.get_task("task-2", None) is None  # nothing of it was written


async def test_keys_are_per_caller_and_tenant(store: TaskStore) -> None:
    for number, who in enumerate([key("m:1"), key("m:1", caller="bob"), key("m:1", tenant="t2")]):
        outcome = created(f"task-{number}", tenant=who.tenant)
        assert outcome.record is not None
        await store.append(outcome.record, outcome.events, 0, requests=[who])
    assert (await store.find_request("t2", "alice", "m:1")).task_id == "task-2"  # type: ignore[attr-defined]
    assert await store.find_request("t1", "carol", "m:1") is None  # type: ignore[attr-defined]


async def test_a_continuation_with_several_keys_is_refused_whole(store: TaskStore) -> None:
    first = created("task-1")
    assert first.record is not None
    await store.append(first.record, first.events, 0)
    more = continued(first.record, "more", 2000)
    assert more.record is not None
    await store.append(more.record, more.events, first.record.seq, requests=[key("m:a")])
    again = moved(more.record, "work", 3000)
    assert again.record is not None
    with pytest.raises(DuplicateRequest):
        await store.append(
            again.record, again.events, more.record.seq, requests=[key("m:b"), key("m:a")]
        )
    assert (await store.get_task("task-1", None)).seq == more.record.seq  # type: ignore[union-attr]
    assert await store.find_request("t1", "alice", "m:b") is None  # type: ignore[attr-defined]


async def test_appends_racing_with_one_key_store_one_task(store: TaskStore) -> None:
    outcomes = [created(f"task-{n}") for n in range(8)]
    results = await asyncio.gather(
        *(
            store.append(o.record, o.events, 0, requests=[key("m:race")])  # type: ignore[arg-type]
            for o in outcomes
        ),
        return_exceptions=True,
    )
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, DuplicateRequest) for r in results if r is not None)
    stored = [o.record.id for o in outcomes if await store.get_task(o.record.id, None)]  # type: ignore[union-attr]
    assert len(stored) == 1
    assert (await store.find_request("t1", "alice", "m:race")).task_id == stored[0]  # type: ignore[attr-defined]


async def test_put_request_keeps_the_first_answer(store: TaskStore) -> None:
    first = StoredRequest(key("k:1"), "", b'{"id":"cfg-1"}')
    assert await store.put_request(first) is None  # type: ignore[attr-defined]
    second = StoredRequest(key("k:1", at=2000), "", b'{"id":"cfg-2"}')
    assert await store.put_request(second) == first  # type: ignore[attr-defined]
    assert await store.find_request("t1", "alice", "k:1") == first  # type: ignore[attr-defined]


async def test_old_requests_are_forgotten(store: TaskStore) -> None:
    for n in range(5):
        await store.put_request(StoredRequest(key(f"k:{n}", at=1000 + n)))  # type: ignore[attr-defined]
    assert await store.delete_requests_before(1003, limit=2) == 2  # type: ignore[attr-defined]
    assert await store.delete_requests_before(1003) == 1  # type: ignore[attr-defined]
    left = [n for n in range(5) if await store.find_request("t1", "alice", f"k:{n}")]  # type: ignore[attr-defined]
    assert left == [3, 4]
