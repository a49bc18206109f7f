"""What only the PostgreSQL store has to get right: several processes on one database (here:
several stores, each with its own pool, as separate nodes would have), its counters, its feed
positions and its URL."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from tests.waiting import until

from accord.core.views import TaskQuery
from accord.store import LimitExceeded, SeqConflict, StoreError, TaskGone, open_store
from accord.store._base import FeedEntry
from accord.store._pg_migrations import LATEST, MIGRATIONS
from accord.store._postgres import PostgresStore
from accord.wire._codec import encode
from accord.wire._model import TaskState

from .records import commit, created, moved, new_task, push_config


async def test_nodes_opening_an_empty_database_together_migrate_it_once(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(4)]
    await asyncio.gather(*(store.open() for store in stores))
    try:
        await new_task(stores[0], "task-1")
        assert [await s.get_task("task-1", "t1") is not None for s in stores] == [True] * 4
        conn = await asyncpg.connect(pg_url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM schema_version") == len(MIGRATIONS)
        finally:
            await conn.close()
    finally:
        for store in stores:
            await store.close()


async def test_two_nodes_writing_one_task_one_wins_the_other_conflicts(pg_url: str) -> None:
    node_a, node_b = PostgresStore(pg_url), PostgresStore(pg_url)
    await node_a.open()
    await node_b.open()
    try:
        base = await new_task(node_a, "contested")
        results = await asyncio.gather(
            *(
                commit(node, base, moved(base, "work", 2000 + i))
                for i, node in enumerate([node_a, node_b] * 5)
            ),
            return_exceptions=True,
        )
        assert sum(not isinstance(r, BaseException) for r in results) == 1
        conflicts = [r for r in results if isinstance(r, SeqConflict)]
        assert len(conflicts) == 9 and {c.actual for c in conflicts} == {2}
        assert [e.seq for e in await node_b.read_events("contested", 0)] == [1, 2]
    finally:
        await node_a.close()
        await node_b.close()


async def test_nodes_creating_for_one_tenant_together_stop_at_its_limit(pg_url: str) -> None:
    nodes = [PostgresStore(pg_url, pool_size=8) for _ in range(2)]
    for node in nodes:
        await node.open()
    try:

        async def create(node: PostgresStore, n: int) -> None:
            outcome = created(f"task-{n:02}")
            assert outcome.record is not None
            await node.append(outcome.record, outcome.events, 0, tenant_task_limit=7)

        results = await asyncio.gather(
            *(create(nodes[n % 2], n) for n in range(30)), return_exceptions=True
        )
        assert sum(r is None for r in results) == 7
        assert all(r is None or isinstance(r, LimitExceeded) for r in results)
        assert [await node.count_tasks("t1") for node in nodes] == [7, 7]
        page = await nodes[1].list_tasks(TaskQuery(tenant="t1", page_size=100))
        assert len(page.records) == 7

        # Push configs of one task, put through both nodes at once.
        await new_task(nodes[0], "hooked", tenant="t2")
        puts = await asyncio.gather(
            *(
                nodes[n % 2].put_push_config(push_config("hooked", f"c{n}"), max_per_task=3)
                for n in range(12)
            ),
            return_exceptions=True,
        )
        assert sum(r is None for r in puts) == 3
        assert all(r is None or isinstance(r, LimitExceeded) for r in puts)
        assert len(await nodes[0].list_push_configs("hooked")) == 3
    finally:
        for node in nodes:
            await node.close()


async def test_a_config_put_while_retention_deletes_its_task_does_not_outlive_it(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url, pool_size=4)
    await store.open()
    sweeper = await asyncpg.connect(pg_url)
    try:
        for task_id in ("doomed", "spared"):
            await new_task(store, task_id, moves=("work", "complete"))
        # Retention on another node has locked the task and deleted it, not yet committed.
        sweep = sweeper.transaction()
        await sweep.start()
        await sweeper.execute("SELECT 1 FROM tasks WHERE id = 'doomed' FOR UPDATE")
        await sweeper.execute("DELETE FROM push_configs WHERE task_id = 'doomed'")
        await sweeper.execute("DELETE FROM events WHERE task_id = 'doomed'")
        await sweeper.execute("DELETE FROM tasks WHERE id = 'doomed'")
        put = asyncio.ensure_future(store.put_push_config(push_config("doomed", "late")))
        await until(lambda: waiting_for_a_lock(sweeper), "the put to wait for a lock")
        assert not put.done()  # it waits for the task's row
        await sweep.commit()
        with pytest.raises(TaskGone):
            await put
        assert await store.list_push_configs("doomed") == []

        # The other way round: a put holding the task's row makes a sweep skip the task.
        async with store.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT 1 FROM tasks WHERE id = 'spared' FOR KEY SHARE")
            skipped = await sweeper.fetch(
                "SELECT id FROM tasks WHERE id = 'spared' FOR UPDATE SKIP LOCKED"
            )
            assert skipped == []
        await store.put_push_config(push_config("spared", "c1"))
        assert [r.config.id for r in await store.list_push_configs("spared")] == ["c1"]
    finally:
        await sweeper.close()
        await store.close()


async def test_counters_stay_exact_across_connections_that_come_and_go(pg_url: str) -> None:
    for round_ in range(3):
        store = PostgresStore(pg_url, pool_size=4)
        await store.open()
        records = await asyncio.gather(
            *(new_task(store, f"r{round_}-{i}", moves=("work",)) for i in range(10))
        )
        for record in records[:4]:
            await commit(store, record, moved(record, "complete", 5000))
        await store.close()  # its backends end; the next open folds their counter rows
    store = PostgresStore(pg_url)
    await store.open()
    try:
        assert await store.count_tasks("t1") == 30
        everything = await store.list_tasks(TaskQuery(tenant="t1"))
        working = await store.list_tasks(TaskQuery(tenant="t1", status=TaskState.WORKING))
        assert (everything.total_size, working.total_size) == (30, 18)
        # Rows of backends that are gone get folded into shard 0 (by open and by retention
        # sweeps); a backend closed a moment ago may take a moment to be gone.
        for _ in range(200):
            await store.delete_terminal_before(0)  # deletes nothing here; folds the counters
            conn = await asyncpg.connect(pg_url)
            try:
                live = {row[0] for row in await conn.fetch("SELECT pid FROM pg_stat_activity")}
                shards = {row[0] for row in await conn.fetch("SELECT shard FROM task_counts")}
            finally:
                await conn.close()
            if shards <= live | {0}:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail(f"counter rows of gone backends were not folded: {shards - live}")
        assert await store.count_tasks("t1") == 30
    finally:
        await store.close()


async def waiting_for_a_lock(conn: asyncpg.Connection) -> bool:
    """Whether a session of this test's database waits for a lock another one holds."""
    return bool(
        await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
    )


async def _feed_once(store: PostgresStore, after: int, count: int) -> list[FeedEntry]:
    """The feed after ``after`` once it holds ``count`` entries: another client of the server
    (another test run) may hold it back for a moment with a transaction of its own."""
    for _ in range(200):
        entries = await store.read_feed(after, None)
        if len(entries) >= count:
            return entries
        await asyncio.sleep(0.05)
    pytest.fail(f"the feed after {after} stayed at {entries}")


async def test_the_feed_holds_back_what_an_older_transaction_may_still_write(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    await store.open()
    older = await asyncpg.connect(pg_url)
    try:
        await new_task(store, "task-a")
        await new_task(store, "task-b")
        seen = await _feed_once(store, 0, 2)
        assert [e.task_id for e in seen] == ["task-a", "task-b"]
        # A transaction that started writing before the next append, and commits after it.
        transaction = older.transaction()
        await transaction.start()
        config = push_config("task-a", "late")
        await older.execute(
            "INSERT INTO push_configs (task_id, config_id, tenant, created_ms, body, cursor,"
            " state, failures, last_error, next_attempt_ms)"
            " VALUES ($1, $2, $3, $4, $5, 0, 'active', 0, '', 0)",
            "task-a",
            "late",
            "t1",
            config.created_ms,
            encode(config.config),
        )
        await new_task(store, "task-c")
        # task-c is committed, but the open transaction could still add an entry before it.
        assert await store.read_feed(seen[-1].position, None) == []
        await transaction.commit()
        rest = await _feed_once(store, seen[-1].position, 2)
        assert [(e.task_id, e.config_id) for e in rest] == [("task-a", "late"), ("task-c", "")]
        assert rest[0].position < rest[1].position
    finally:
        await older.close()
        await store.close()


def test_postgres_urls() -> None:
    store = open_store("postgresql://accord@db.example:5432/accord")
    assert isinstance(store, PostgresStore)
    assert (store.dsn, store.pool_size) == ("postgresql://accord@db.example:5432/accord", 10)
    sized = open_store("postgres://db.example/accord?sslmode=require&pool_size=3")
    assert isinstance(sized, PostgresStore)
    assert (sized.dsn, sized.pool_size) == ("postgres://db.example/accord?sslmode=require", 3)
    for bad in ("postgresql://db/x?pool_size=0", "postgresql://db/x?pool_size=many"):
        with pytest.raises(ValueError):
            open_store(bad)


async def test_an_unreachable_database_is_a_store_error_on_open() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/none")
    with pytest.raises(StoreError):
        await store.open()
    with pytest.raises(StoreError):
        await store.get_task("x", None)


_LIST_SHAPES = (
    "tenant = $1",
    "tenant = $1 AND context_id = 'c'",
    "tenant = $1 AND state = 3",
    "tenant = $1 AND updated_ms >= 5",
    "tenant = $1 AND state = 3 AND (updated_ms, id) < (5, 'x')",
)


async def test_migration_4_turns_the_list_indexes_ascending_and_lists_stay_sorted(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    await store.open()
    try:
        for index in range(30):
            await new_task(store, f"task-{index:02}", now_ms=1000 + index // 4, moves=("work",))
    finally:
        await store.close()
    # The indexes a version-3 accord left behind, newest first.
    conn = await asyncpg.connect(pg_url)
    try:
        for name, columns in (
            ("tasks_by_tenant", "tenant"),
            ("tasks_by_context", "tenant, context_id"),
            ("tasks_by_state", "tenant, state"),
        ):
            await conn.execute(f"DROP INDEX {name}")
            await conn.execute(
                f"CREATE INDEX {name} ON tasks ({columns}, updated_ms DESC, id DESC)"
            )
        await conn.execute("DELETE FROM schema_version WHERE version >= 4")
    finally:
        await conn.close()

    store = PostgresStore(pg_url)
    await store.open()
    try:
        page = await store.list_tasks(TaskQuery(tenant="t1", page_size=8))
        assert [r.id for r in page.records] == [f"task-{i:02}" for i in range(29, 21, -1)]
        assert page.next_cursor is not None
        after = await store.list_tasks(TaskQuery(tenant="t1", page_size=8, after=page.next_cursor))
        assert [r.id for r in after.records] == [f"task-{i:02}" for i in range(21, 13, -1)]
    finally:
        await store.close()
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT max(version) FROM schema_version") == LATEST
        shapes = await conn.fetch(
            "SELECT indexdef FROM pg_indexes"
            " WHERE schemaname = current_schema() AND indexname LIKE 'tasks_by_%'"
        )
        assert len(shapes) == 3 and not any("DESC" in row[0] for row in shapes)
        # Newest first by reading an index backwards: no plan sorts. (Scans and sorts are
        # priced out, so that a table this small still shows which order an index gives.)
        async with conn.transaction():
            await conn.execute("SET LOCAL enable_seqscan = off")
            await conn.execute("SET LOCAL enable_sort = off")
            await conn.execute("SET LOCAL enable_bitmapscan = off")
            for where in _LIST_SHAPES:
                plan = await conn.fetch(
                    f"EXPLAIN SELECT * FROM tasks WHERE {where}"
                    " ORDER BY updated_ms DESC, id DESC LIMIT 5",
                    "t1",
                )
                text = "\n".join(row[0] for row in plan)
                assert "Index Scan Backward using tasks_by_" in text, text
                assert "Sort" not in text, text
    finally:
        await conn.close()
