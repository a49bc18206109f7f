"""One suite, run against every backend: the TaskStore contract users and the engine rely on."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from accord.core._events import fold
from accord.core._records import TaskRecord
from accord.core.lifecycle import ACTIVE, TERMINAL
from accord.core.views import Cursor, TaskQuery, matches, sort_key
from accord.store import MemoryStore, SeqConflict, SqliteStore, StoreError, TaskGone, TaskStore
from accord.store._base import TaskSnapshots
from accord.store._postgres import PostgresStore
from accord.wire._codec import encode
from accord.wire._model import TaskState

from .records import artifact, commit, continued, created, moved, new_task, push_config

# --- append ------------------------------------------------------------------------------


async def test_create_then_get(store: TaskStore) -> None:
    outcome = created("task-1", now_ms=1000)
    record = await commit(store, None, outcome)
    assert await store.get_task("task-1", "t1") == record
    assert await store.read_events("task-1", 0) == outcome.events


async def test_stored_snapshot_is_the_tasks_protojson(store: TaskStore) -> None:
    """Every store hands out snapshots unread (GetTask's JSON fast path): exactly what
    encoding the task gives, the latest one, and nothing of another tenant."""
    assert isinstance(store, TaskSnapshots)
    record = await new_task(store, "task-1", moves=("work",))
    assert await store.get_snapshot("task-1", "t1") == encode(record.task)  # (memory: kept)
    record = await commit(store, record, artifact(record, 1005))
    assert await store.get_snapshot("task-1", "t1") == encode(record.task)
    assert await store.get_snapshot("task-1", "t2") is None
    assert await store.get_snapshot("nope", "t1") is None


async def test_continue_appends_to_the_log_and_replaces_the_snapshot(store: TaskStore) -> None:
    first = created("task-1", now_ms=1000)
    record = await commit(store, None, first)
    logged = list(first.events)
    for outcome_of in (
        lambda r: moved(r, "work", 1001),
        lambda r: artifact(r, 1002),
        lambda r: moved(r, "require_input", 1003),
        lambda r: continued(r, "more", 1004),
        lambda r: moved(r, "work", 1005),
    ):
        outcome = outcome_of(record)
        record = await commit(store, record, outcome)
        logged += outcome.events
    stored = await store.get_task("task-1", None)
    assert stored == record
    assert stored is not None and stored.seq == 6 and stored.updated_ms == 1005
    events = await store.read_events("task-1", 0)
    assert events == logged
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]
    assert fold(events) == stored.task


async def test_one_append_may_carry_several_events(store: TaskStore) -> None:
    record = await new_task(store, "task-1")
    work = moved(record, "work", 1001)
    assert work.record is not None
    done = moved(work.record, "complete", 1002)
    assert done.record is not None
    await store.append(done.record, [*work.events, *done.events], record.seq)
    assert [e.seq for e in await store.read_events("task-1", 0)] == [1, 2, 3]
    assert await store.get_task("task-1", "t1") == done.record


async def test_creating_an_existing_task_conflicts_and_writes_nothing(store: TaskStore) -> None:
    original = await new_task(store, "task-1", moves=("work",))
    again = created("task-1", now_ms=5000)
    assert again.record is not None
    with pytest.raises(SeqConflict) as caught:
        await store.append(again.record, again.events, 0)
    assert (caught.value.expected, caught.value.actual) == (0, 2)
    assert await store.get_task("task-1", "t1") == original
    assert len(await store.read_events("task-1", 0)) == 2


async def test_stale_append_conflicts_and_writes_nothing(store: TaskStore) -> None:
    record = await new_task(store, "task-1")
    winner = moved(record, "work", 1001)
    loser = moved(record, "cancel", 1002)
    await commit(store, record, winner)
    assert loser.record is not None
    with pytest.raises(SeqConflict) as caught:
        await store.append(loser.record, loser.events, record.seq)
    assert (caught.value.task_id, caught.value.expected, caught.value.actual) == ("task-1", 1, 2)
    assert await store.get_task("task-1", "t1") == winner.record
    assert await store.read_events("task-1", 0) == [*created("task-1").events, *winner.events]
    assert await store.count_tasks("t1") == 1


async def test_appending_to_a_missing_task_conflicts(store: TaskStore) -> None:
    ghost = created("ghost").record  # never stored
    assert ghost is not None
    outcome = moved(ghost, "work", 1001)
    assert outcome.record is not None
    with pytest.raises(SeqConflict) as caught:
        await store.append(outcome.record, outcome.events, 1)
    assert caught.value.actual == 0
    assert await store.get_task("ghost", None) is None
    assert await store.read_events("ghost", 0) == []


async def test_events_that_do_not_follow_the_expected_seq_are_refused(store: TaskStore) -> None:
    record = await new_task(store, "task-1")
    outcome = moved(record, "work", 1001)
    assert outcome.record is not None
    with pytest.raises(StoreError):
        await store.append(outcome.record, outcome.events, 0)
    with pytest.raises(StoreError):
        await store.append(outcome.record, [], 1)
    assert await store.get_task("task-1", "t1") == record


# --- reads -------------------------------------------------------------------------------


async def test_get_task_is_scoped_to_the_tenant(store: TaskStore) -> None:
    record = await new_task(store, "task-1", tenant="alice")
    assert await store.get_task("task-1", "alice") == record
    assert await store.get_task("task-1", "bob") is None
    assert await store.get_task("task-1", "") is None
    assert await store.get_task("task-1", None) == record
    assert await store.get_task("nope", None) is None


async def test_read_events_after_and_limit(store: TaskStore) -> None:
    await new_task(store, "task-1", moves=("work", "require_input", "work", "complete"))
    assert [e.seq for e in await store.read_events("task-1", 2)] == [3, 4, 5]
    assert [e.seq for e in await store.read_events("task-1", 1, limit=2)] == [2, 3]
    assert await store.read_events("task-1", 5) == []
    assert await store.read_events("task-1", 99) == []
    assert await store.read_events("other", 0) == []
    kinds = [e.kind for e in await store.read_events("task-1", 0)]
    assert kinds == ["task", "status", "status", "status", "status"]


# --- ListTasks ---------------------------------------------------------------------------


async def _varied(store: TaskStore) -> list[TaskRecord]:
    """Tasks across two tenants, three contexts, several states and tied status times."""
    paths: list[tuple[str, ...]] = [(), ("work",), ("work", "complete"), ("require_input",)]
    records = []
    for index in range(40):
        records.append(
            await new_task(
                store,
                f"task-{index:02d}",
                tenant="t1" if index % 5 else "t2",
                context_id=f"ctx-{index % 3}",
                now_ms=1000 + (index // 4) * 10,  # four tasks share each creation time
                moves=paths[index % 4],
            )
        )
    return records


def _queries() -> list[TaskQuery]:
    queries = []
    for tenant, context_id, status, after_ms in itertools.product(
        ("t1", "t2", "t3"),
        ("", "ctx-1"),
        (None, TaskState.WORKING, TaskState.SUBMITTED, TaskState.CANCELED),
        (None, 1031, 1060),
    ):
        queries.append(
            TaskQuery(
                tenant=tenant,
                context_id=context_id,
                status=status,
                updated_after_ms=after_ms,
                page_size=7,
            )
        )
    return queries


async def test_list_tasks_filters_order_and_total_match_the_view_predicate(
    store: TaskStore,
) -> None:
    records = await _varied(store)
    for query in _queries():
        expected = sorted((r for r in records if matches(r, query)), key=sort_key, reverse=True)
        page = await store.list_tasks(query)
        assert page.total_size == len(expected), query
        assert page.records == expected[: query.page_size], query
        assert (page.next_cursor is None) == (len(expected) <= query.page_size), query


async def test_status_timestamp_after_is_inclusive(store: TaskStore) -> None:
    await new_task(store, "old", now_ms=999)
    await new_task(store, "edge", now_ms=1000)
    await new_task(store, "new", now_ms=1001)
    page = await store.list_tasks(TaskQuery(tenant="t1", updated_after_ms=1000))
    assert [r.id for r in page.records] == ["new", "edge"]
    assert page.total_size == 2


async def test_newest_status_first_ties_by_id_descending(store: TaskStore) -> None:
    await new_task(store, "b", now_ms=1000)
    await new_task(store, "a", now_ms=1000)
    await new_task(store, "c", now_ms=1000)
    await new_task(store, "z", now_ms=900, moves=("work",))  # status at 901
    moved_late = await new_task(store, "y", now_ms=500)
    await commit(store, moved_late, moved(moved_late, "work", 2000))
    page = await store.list_tasks(TaskQuery(tenant="t1"))
    assert [r.id for r in page.records] == ["y", "c", "b", "a", "z"]


async def test_paging_visits_every_task_exactly_once(store: TaskStore) -> None:
    for index in range(250):
        await new_task(store, f"task-{index:03d}", now_ms=1000 + index // 7)
    await new_task(store, "elsewhere", tenant="t2", now_ms=1010)
    seen: list[str] = []
    cursor: Cursor | None = None
    pages = 0
    while True:
        page = await store.list_tasks(TaskQuery(tenant="t1", page_size=50, after=cursor))
        pages += 1
        assert page.total_size == 250
        seen += [r.id for r in page.records]
        if page.next_cursor is None:
            break
        key = await store.shared_secret("page-token")
        cursor = Cursor.parse(page.next_cursor.token(key), key)  # as a client hands it back
    assert pages == 5
    assert len(seen) == 250 and len(set(seen)) == 250
    by_order = sorted(
        (f"task-{i:03d}" for i in range(250)), key=lambda t: (int(t[5:]) // 7, t), reverse=True
    )
    assert seen == by_order


async def test_paging_with_a_filter(store: TaskStore) -> None:
    for index in range(30):
        await new_task(store, f"task-{index:02d}", moves=("work",) if index % 2 else ())
    query = TaskQuery(tenant="t1", status=TaskState.WORKING, page_size=4)
    seen: list[str] = []
    while True:
        page = await store.list_tasks(query)
        assert page.total_size == 15
        seen += [r.id for r in page.records]
        if page.next_cursor is None:
            break
        query = TaskQuery(
            tenant="t1", status=TaskState.WORKING, page_size=4, after=page.next_cursor
        )
    assert sorted(seen) == [f"task-{i:02d}" for i in range(1, 30, 2)]


async def test_total_size_follows_state_changes(store: TaskStore) -> None:
    records = [await new_task(store, f"task-{i}") for i in range(5)]
    for record in records[:3]:
        await commit(store, record, moved(record, "work", 2000))
    working = await store.list_tasks(TaskQuery(tenant="t1", status=TaskState.WORKING))
    submitted = await store.list_tasks(TaskQuery(tenant="t1", status=TaskState.SUBMITTED))
    everything = await store.list_tasks(TaskQuery(tenant="t1"))
    assert (working.total_size, submitted.total_size, everything.total_size) == (3, 2, 5)
    nothing = await store.list_tasks(TaskQuery(tenant="t1", status=TaskState.FAILED))
    assert (nothing.total_size, nothing.records, nothing.next_cursor) == (0, [], None)


async def test_count_tasks_per_tenant(store: TaskStore) -> None:
    for index in range(4):
        await new_task(store, f"a-{index}", tenant="alice", moves=("work", "complete"))
    await new_task(store, "b-0", tenant="bob")
    assert await store.count_tasks("alice") == 4
    assert await store.count_tasks("bob") == 1
    assert await store.count_tasks("carol") == 0


async def test_tasks_in_states_scans_every_tenant_by_id(store: TaskStore) -> None:
    await new_task(store, "d", tenant="t2", moves=("work",))
    await new_task(store, "a")
    await new_task(store, "c", moves=("work", "complete"))
    await new_task(store, "b", tenant="t3", moves=("require_auth",))
    await new_task(store, "e", tenant="t3")
    found = await store.tasks_in_states(ACTIVE)
    assert [r.id for r in found] == ["a", "d", "e"]
    assert [r.id for r in await store.tasks_in_states(ACTIVE, limit=2)] == ["a", "d"]
    assert [r.id for r in await store.tasks_in_states(ACTIVE, after_id="a")] == ["d", "e"]
    assert [r.id for r in await store.tasks_in_states(TERMINAL)] == ["c"]
    assert await store.tasks_in_states(frozenset()) == []
    assert found[1] == await store.get_task("d", None)


# --- retention ---------------------------------------------------------------------------


async def test_retention_deletes_old_terminal_tasks_with_their_logs_and_configs(
    store: TaskStore,
) -> None:
    for index, end in enumerate(("complete", "fail", "cancel", "reject")):
        await new_task(store, f"old-{end}", now_ms=1000 + index, moves=(end,))
        await store.put_push_config(push_config(f"old-{end}", "c1"))
    await new_task(store, "old-working", now_ms=1000, moves=("work",))
    await new_task(store, "old-waiting", now_ms=1000, moves=("require_input",))
    await new_task(store, "new-done", now_ms=5000, moves=("complete",))
    await store.put_push_config(push_config("old-working", "c1"))

    assert await store.delete_terminal_before(5000, limit=3) == 3
    assert await store.delete_terminal_before(5000) == 1
    assert await store.delete_terminal_before(5000) == 0

    for end in ("complete", "fail", "cancel", "reject"):
        assert await store.get_task(f"old-{end}", None) is None
        assert await store.read_events(f"old-{end}", 0) == []
        assert await store.list_push_configs(f"old-{end}") == []
    for kept in ("old-working", "old-waiting", "new-done"):
        assert await store.get_task(kept, None) is not None
        assert len(await store.read_events(kept, 0)) == 2
    assert len(await store.list_push_configs("old-working")) == 1
    assert await store.count_tasks("t1") == 3
    everything = await store.list_tasks(TaskQuery(tenant="t1"))
    assert everything.total_size == 3
    done = await store.list_tasks(TaskQuery(tenant="t1", status=TaskState.COMPLETED))
    assert [r.id for r in done.records] == ["new-done"] and done.total_size == 1


async def test_a_limit_of_zero_means_nothing(store: TaskStore) -> None:
    await new_task(store, "done", now_ms=1000, moves=("complete",))
    await store.put_push_config(push_config("done", "c1"))
    assert await store.read_events("done", 0, limit=0) == []
    assert await store.tasks_in_states(TERMINAL, limit=0) == []
    assert await store.all_push_configs(limit=0) == []
    assert await store.delete_terminal_before(5000, limit=0) == 0
    assert await store.get_task("done", None) is not None


# --- push-notification configs -----------------------------------------------------------


async def test_push_config_crud(store: TaskStore) -> None:
    await new_task(store, "task-1")
    first, second = push_config("task-1", "c1"), push_config("task-1", "c2")
    await store.put_push_config(first)
    await store.put_push_config(second)
    assert await store.get_push_config("task-1", "c1") == first
    assert await store.get_push_config("task-1", "nope") is None
    assert await store.get_push_config("task-2", "c1") is None
    assert await store.list_push_configs("task-1") == [first, second]

    replaced = push_config("task-1", "c1", url="https://hooks.example/b")
    await store.put_push_config(replaced)
    assert await store.get_push_config("task-1", "c1") == replaced
    assert await store.list_push_configs("task-1") == [replaced, second]

    assert await store.delete_push_config("task-1", "c1") is True
    assert await store.delete_push_config("task-1", "c1") is False
    assert await store.delete_push_config("task-9", "c1") is False
    assert await store.list_push_configs("task-1") == [second]


async def test_all_push_configs_pages_by_task_and_config_id(store: TaskStore) -> None:
    keys = [("t-b", "c2"), ("t-a", "c9"), ("t-b", "c1"), ("t-c", "c1"), ("t-a", "c1")]
    for task_id in ("t-a", "t-b", "t-c"):
        await new_task(store, task_id, tenant=task_id)
    for task_id, config_id in keys:
        await store.put_push_config(push_config(task_id, config_id, tenant=task_id))
    seen: list[tuple[str, str]] = []
    after = ("", "")
    while page := await store.all_push_configs(limit=2, after=after):
        assert len(page) <= 2
        seen += [(r.config.task_id, r.config.id) for r in page]
        after = seen[-1]
    assert seen == sorted(keys)
    tenants = [r.tenant for r in await store.all_push_configs()]
    assert tenants == ["t-a", "t-a", "t-b", "t-b", "t-c"]


async def test_a_config_for_a_task_the_store_does_not_hold_is_refused(store: TaskStore) -> None:
    with pytest.raises(TaskGone):
        await store.put_push_config(push_config("nowhere", "c1"))
    with pytest.raises(TaskGone):
        await store.put_push_config(push_config("nowhere", "c2"), max_per_task=5)
    assert await store.list_push_configs("nowhere") == []
    assert await store.all_push_configs() == []
    # Retention took the task: a config put afterwards does not outlive it.
    record = await new_task(store, "old", moves=("work", "complete"))
    assert await store.delete_terminal_before(record.updated_ms + 1) == 1
    with pytest.raises(TaskGone):
        await store.put_push_config(push_config("old", "late"))
    assert await store.all_push_configs() == []


# --- group commit ------------------------------------------------------------------------


async def test_concurrent_appends_all_land(store: TaskStore) -> None:
    async def lifecycle(index: int) -> TaskRecord:
        record = await new_task(store, f"task-{index:03d}", now_ms=1000 + index)
        record = await commit(store, record, moved(record, "work", 2000 + index))
        record = await commit(store, record, artifact(record, 3000 + index))
        return await commit(store, record, moved(record, "complete", 4000 + index))

    finals = await asyncio.gather(*(lifecycle(i) for i in range(200)))
    for final in finals:
        assert await store.get_task(final.id, "t1") == final
        events = await store.read_events(final.id, 0)
        assert [e.seq for e in events] == [1, 2, 3, 4]
        assert fold(events) == final.task
    assert await store.count_tasks("t1") == 200
    done = await store.list_tasks(TaskQuery(tenant="t1", status=TaskState.COMPLETED))
    assert done.total_size == 200


async def test_appends_to_one_task_started_without_waiting_land_in_call_order(
    store: TaskStore,
) -> None:
    # The engine submits a running agent's moves this way: each append is started before
    # the previous one finished, and each expects the previous one's seq.
    record = await new_task(store, "task-1", moves=("work",))
    pending = []
    for index in range(30):
        outcome = artifact(record, 2000 + index, text=f"chunk {index}")
        pending.append(asyncio.ensure_future(commit(store, record, outcome)))
        assert outcome.record is not None
        record = outcome.record
    await asyncio.gather(*pending)
    events = await store.read_events("task-1", 0)
    assert [e.seq for e in events] == list(range(1, 33))
    assert fold(events) == record.task
    assert await store.get_task("task-1", None) == record


async def test_a_conflict_fails_only_its_own_write(store: TaskStore) -> None:
    base = await new_task(store, "contested")
    rivals = [moved(base, "work", 2000 + i) for i in range(20)]
    others = [created(f"other-{i}") for i in range(20)]
    results = await asyncio.gather(
        *(commit(store, base, outcome) for outcome in rivals),
        *(commit(store, None, outcome) for outcome in others),
        return_exceptions=True,
    )
    rival_results, other_results = results[:20], results[20:]
    winners = [r for r in rival_results if isinstance(r, TaskRecord)]
    assert len(winners) == 1
    assert sum(isinstance(r, SeqConflict) for r in rival_results) == 19
    assert await store.get_task("contested", "t1") == winners[0]
    assert [e.seq for e in await store.read_events("contested", 0)] == [1, 2]
    assert all(isinstance(r, TaskRecord) for r in other_results)
    assert await store.count_tasks("t1") == 21


async def test_a_stale_write_among_good_ones_fails_alone(store: TaskStore) -> None:
    records = [await new_task(store, f"task-{i}") for i in range(10)]
    old = await new_task(store, "stale")
    stale = await commit(store, old, moved(old, "work", 1500))
    late = moved(old, "cancel", 3000)  # decided on the old snapshot
    assert late.record is not None
    good = [commit(store, r, moved(r, "work", 2000)) for r in records]
    results = await asyncio.gather(
        *good[:5],
        store.append(late.record, late.events, 1),  # the store is at 2
        *good[5:],
        return_exceptions=True,
    )
    assert isinstance(results[5], SeqConflict) and results[5].actual == 2
    assert all(isinstance(r, TaskRecord) for r in results[:5] + results[6:])
    for record in records:
        stored = await store.get_task(record.id, "t1")
        assert stored is not None and stored.state is TaskState.WORKING
    assert await store.get_task("stale", "t1") == stale
    assert len(await store.read_events("stale", 0)) == 2


async def test_appends_queued_back_to_back_on_one_task_apply_in_order(store: TaskStore) -> None:
    first = created("task-1")
    assert first.record is not None
    work = moved(first.record, "work", 1001)
    assert work.record is not None
    done = moved(work.record, "complete", 1002)
    assert done.record is not None
    # Not awaiting each before the next: the writes are queued together, in order.
    await asyncio.gather(
        store.append(first.record, first.events, 0),
        store.append(work.record, work.events, 1),
        store.append(done.record, done.events, 2),
    )
    assert await store.get_task("task-1", "t1") == done.record
    assert [e.seq for e in await store.read_events("task-1", 0)] == [1, 2, 3]
    page = await store.list_tasks(TaskQuery(tenant="t1", status=TaskState.COMPLETED))
    assert page.total_size == 1


async def test_appends_of_many_events_keep_every_event_in_order(store: TaskStore) -> None:
    # The engine merges an agent's moves into one append: here a creation, working, nine
    # artifact updates and completion (the SQLite store writes events four to a row).
    first = created("task-1")
    outcomes = [first]
    assert first.record is not None
    record = first.record
    for step in [lambda r: moved(r, "work", 1001)] + [
        (lambda r, i=i: artifact(r, 1002 + i, text=f"part {i}")) for i in range(9)
    ]:
        outcome = step(record)
        assert outcome.record is not None
        outcomes.append(outcome)
        record = outcome.record
    events = [event for outcome in outcomes for event in outcome.events]
    assert len(events) == 11
    await store.append(record, events, 0)
    # and on an existing task: nine more events past the first row
    later = []
    for index in range(8):
        outcome = artifact(record, 2000 + index, text=f"more {index}")
        assert outcome.record is not None
        later.append(outcome)
        record = outcome.record
    done = moved(record, "complete", 3000)
    assert done.record is not None
    more = [event for outcome in [*later, done] for event in outcome.events]
    await store.append(done.record, more, 11)

    stored = await store.read_events("task-1", 0)
    assert [e.seq for e in stored] == list(range(1, 21))
    assert stored == events + more
    assert fold(stored) == done.record.task
    assert await store.get_task("task-1", "t1") == done.record


# --- shared secrets ----------------------------------------------------------------------


async def test_a_shared_secret_is_random_and_stays_the_same(store: TaskStore) -> None:
    first = await store.shared_secret("page-token")
    assert len(first) == 32
    assert await store.shared_secret("page-token") == first
    assert await store.shared_secret("other") not in (first, b"")


async def test_a_sqlite_secret_survives_reopening_and_other_processes_read_it(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "s.db")
    one, two = SqliteStore(path), SqliteStore(path)
    await one.open()
    await two.open()
    try:
        made = await one.shared_secret("page-token")
        assert await two.shared_secret("page-token") == made
    finally:
        await one.close()
        await two.close()
    again = SqliteStore(path)
    await again.open()
    try:
        assert await again.shared_secret("page-token") == made
    finally:
        await again.close()


async def test_postgres_nodes_agree_on_a_secret_they_ask_for_at_once(pg_url: str) -> None:
    nodes = [PostgresStore(pg_url) for _ in range(3)]
    for node in nodes:
        await node.open()
    try:
        values = await asyncio.gather(*(node.shared_secret("page-token") for node in nodes))
        assert len(set(values)) == 1 and len(values[0]) == 32
    finally:
        for node in nodes:
            await node.close()


# --- memory only -------------------------------------------------------------------------


async def test_memory_store_keeps_records_as_given() -> None:
    store = MemoryStore()
    await store.open()
    outcome = created("task-1")
    record = await commit(store, None, outcome)
    assert await store.get_task("task-1", "t1") is record
    assert (await store.read_events("task-1", 0))[0] is outcome.events[0]
