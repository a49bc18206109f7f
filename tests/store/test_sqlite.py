"""What only the durable backend promises: files that reopen, migrations, group commit, URLs."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from tests.waiting import until

from accord.core._events import fold
from accord.core._records import TaskRecord
from accord.core.views import TaskQuery
from accord.store import DEFAULT_URL, MemoryStore, SqliteStore, StoreError, _appends, open_store
from accord.store import _migrations as migrations
from accord.wire._model import TaskState

from .records import artifact, commit, created, moved, new_task, push_config


async def test_reopening_the_file_keeps_everything(tmp_path: Path) -> None:
    path = str(tmp_path / "accord.db")
    store = SqliteStore(path)
    await store.open()
    done = await new_task(store, "done", tenant="alice", moves=("work", "complete"))
    waiting = await new_task(store, "waiting", tenant="bob", moves=("require_input",))
    config = push_config("waiting", "c1", tenant="bob")
    await store.put_push_config(config)
    events = await store.read_events("done", 0)
    await store.close()
    await store.close()  # idempotent

    reopened = SqliteStore(path)
    await reopened.open()
    try:
        assert await reopened.get_task("done", "alice") == done
        assert await reopened.get_task("waiting", "bob") == waiting
        assert await reopened.read_events("done", 0) == events
        assert await reopened.list_push_configs("waiting") == [config]
        assert await reopened.count_tasks("alice") == 1
        page = await reopened.list_tasks(TaskQuery(tenant="alice", status=TaskState.COMPLETED))
        assert page.records == [done] and page.total_size == 1
        # and it keeps taking writes where the log stopped
        await commit(reopened, waiting, moved(waiting, "work", 9000))
        assert [e.seq for e in await reopened.read_events("waiting", 0)] == [1, 2, 3]
    finally:
        await reopened.close()


async def test_migrations_apply_once(tmp_path: Path) -> None:
    path = str(tmp_path / "accord.db")
    for _ in range(3):
        store = SqliteStore(path)
        await store.open()
        assert store.schema_version == migrations.LATEST
        await store.close()
    conn = sqlite3.connect(path)
    versions = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    conn.close()
    assert versions == [version for version, _ in migrations.MIGRATIONS]


async def test_migration_5_turns_the_list_indexes_ascending_and_lists_stay_sorted(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "accord.db")
    store = SqliteStore(path)
    await store.open()
    for index in range(30):
        await new_task(store, f"task-{index:02}", now_ms=1000 + index // 4, moves=("work",))
    await store.close()
    # The indexes a version-4 accord left behind, newest first.
    conn = sqlite3.connect(path, isolation_level=None)
    for name, columns in (
        ("tasks_by_tenant", "tenant"),
        ("tasks_by_context", "tenant, context_id"),
        ("tasks_by_state", "tenant, state"),
    ):
        conn.execute(f"DROP INDEX {name}")
        conn.execute(f"CREATE INDEX {name} ON tasks ({columns}, updated_ms DESC, id DESC)")
    conn.execute("DELETE FROM schema_version WHERE version >= 5")
    conn.close()

    store = SqliteStore(path)
    await store.open()
    try:
        assert store.schema_version == migrations.LATEST
        page = await store.list_tasks(TaskQuery(tenant="t1", page_size=8))
        expected = [f"task-{index:02}" for index in range(29, 21, -1)]
        assert [record.id for record in page.records] == expected
        conn = sqlite3.connect(path)
        shapes = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name LIKE 'tasks_by_%'"
        ).fetchall()
        assert len(shapes) == 3 and not any("DESC" in sql for (sql,) in shapes)
        # Newest first by reading the index backwards: no query sorts in a temporary B-tree.
        for where in (
            "tenant = ?",
            "tenant = ? AND context_id = 'c'",
            "tenant = ? AND state = 3",
            "tenant = ? AND updated_ms >= 5",
            "tenant = ? AND state = 3 AND (updated_ms, id) < (5, 'x')",
        ):
            plan = conn.execute(
                f"EXPLAIN QUERY PLAN SELECT id FROM tasks WHERE {where}"
                " ORDER BY updated_ms DESC, id DESC LIMIT 5",
                ("t1",),
            ).fetchall()
            details = " ".join(row[-1] for row in plan)
            assert "INDEX tasks_by_" in details and "TEMP B-TREE" not in details, details
        conn.close()
    finally:
        await store.close()


async def test_a_database_from_a_newer_accord_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "accord.db")
    store = SqliteStore(path)
    await store.open()
    await store.close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_version VALUES (?, 0)", (migrations.LATEST + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        await SqliteStore(path).open()


async def test_concurrent_writes_share_commits(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "accord.db"))
    await store.open()
    try:
        await asyncio.gather(*(new_task(store, f"task-{i}", moves=("work",)) for i in range(300)))
        stats = store.commit_stats
        assert stats.writes == 600
        assert stats.commits < stats.writes
        assert stats.replayed == 0  # nothing refused: every batch went in bulk
    finally:
        await store.close()
    assert store.commit_stats == stats  # what an operator or a benchmark reads after stopping


async def test_a_batch_too_large_for_one_statement_commits_whole(tmp_path: Path) -> None:
    # A batch of appends is usually one INSERT of rows; 1,000 creations with nine events
    # each (three rows) need several, inside one explicit transaction.
    store = SqliteStore(str(tmp_path / "accord.db"))
    await store.open()
    try:
        gate, inside = threading.Event(), threading.Event()
        blocked = asyncio.ensure_future(store._write(lambda conn: inside.set() or gate.wait(10)))
        await until(inside.is_set, "the writer thread inside that write")
        queued = 0

        async def lifecycle(index: int) -> TaskRecord:
            nonlocal queued
            first = created(f"task-{index:04}")
            assert first.record is not None
            record, events = first.record, list(first.events)
            for step in range(8):
                outcome = artifact(record, 1001 + step, text=f"part {step}")
                assert outcome.record is not None
                record = outcome.record
                events += outcome.events
            appended = store.append(record, events, 0)
            queued += 1
            await appended
            return record

        pending = asyncio.gather(*(lifecycle(i) for i in range(1000)))
        # every append queued behind the blocked write (handed to the writer thread)
        await until(lambda: queued == 1000 and not store._pending, "every append queued")
        before = store.commit_stats
        gate.set()
        await blocked
        finals = await pending
        after = store.commit_stats
        # the blocked write's transaction, then one for all 1,000 appends (several statements)
        assert after.writes - before.writes == 1 + 1000
        assert after.commits - before.commits == 2
        assert after.replayed == before.replayed
        for final in finals[::97]:
            assert await store.get_task(final.id, "t1") == final
            events = await store.read_events(final.id, 0)
            assert [e.seq for e in events] == list(range(1, 10))
            assert fold(events) == final.task
        assert await store.count_tasks("t1") == 1000
        # the last statement was padded: its padding rows wrote nothing
        assert store._rows("SELECT COUNT(*) FROM tasks") == [(1000,)]
        assert store._rows("SELECT COUNT(*) FROM events") == [(9000,)]
    finally:
        await store.close()


def test_append_statements_come_in_a_bounded_set_of_sizes() -> None:
    # Each size is a statement text the writer's connection keeps compiled: however large the
    # batch, the texts stay few, and padding rows (which no trigger takes) are the only rows
    # added.
    sizes: set[int] = set()
    for count in [*range(1, 70), 500, 1023, 1024, 1025, 3000]:
        rows = [(index,) + (None,) * (_appends._ROW_WIDTH - 1) for index in range(count)]
        statements = _appends.statements(rows)
        params = [value for _, values in statements for value in values]
        width = _appends._ROW_WIDTH
        given = [tuple(params[i : i + width]) for i in range(0, len(params), width)]
        assert given[:count] == rows
        assert all(row == _appends._PADDING for row in given[count:])
        for text, values in statements:
            size = len(values) // width
            assert text.count("(?") == size
            sizes.add(size)
    assert len(sizes) <= _appends.STATEMENT_CACHE // 2
    assert max(sizes) * _appends._ROW_WIDTH < 32766  # SQLite's limit of variables


async def test_append_is_queued_by_the_call_and_fails_through_its_future(
    tmp_path: Path,
) -> None:
    # The engine waits on the returned future without a task, so the call itself must
    # queue the write (keeping call order), and a refusal must come with the future.
    store = SqliteStore(str(tmp_path / "accord.db"))
    await store.open()
    try:
        first = created("task-1")
        assert first.record is not None
        work = moved(first.record, "work", 1001)
        assert work.record is not None
        creating = store.append(first.record, first.events, 0)
        working = store.append(work.record, work.events, 1)
        assert isinstance(creating, asyncio.Future) and not creating.done()
        await working  # queued behind the creation, which is committed by now
        assert creating.done() and creating.exception() is None
        misplaced = store.append(work.record, work.events, 5)  # its events do not follow 5
        with pytest.raises(StoreError, match="does not follow"):
            await misplaced
        assert await store.get_task("task-1", "t1") == work.record
    finally:
        await store.close()


async def test_writes_queued_before_close_are_committed(tmp_path: Path) -> None:
    path = str(tmp_path / "accord.db")
    store = SqliteStore(path)
    await store.open()
    pending = [asyncio.ensure_future(new_task(store, f"task-{i}")) for i in range(50)]
    await asyncio.sleep(0)  # every append is queued
    await store.close()
    await asyncio.gather(*pending)
    reopened = SqliteStore(path)
    await reopened.open()
    assert await reopened.count_tasks("t1") == 50
    await reopened.close()


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "accord.db"))
    await store.open()
    await store.close()
    with pytest.raises(StoreError):
        await store.get_task("x", None)
    with pytest.raises(StoreError):
        await new_task(store, "x")


def test_store_urls() -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    relative = open_store("sqlite:///data/accord.db")
    assert isinstance(relative, SqliteStore) and relative.path == "data/accord.db"
    absolute = open_store("sqlite:////var/lib/accord.db")
    assert isinstance(absolute, SqliteStore) and absolute.path == "/var/lib/accord.db"
    assert relative.synchronous == "FULL"
    relaxed = open_store("sqlite:///a.db?synchronous=normal")
    assert isinstance(relaxed, SqliteStore) and relaxed.synchronous == "NORMAL"
    assert relative.row_cache is not None and relative.row_cache.max_bytes == 4096 * 1024
    uncached = open_store("sqlite:///a.db?row_cache_kib=0")
    assert isinstance(uncached, SqliteStore) and uncached.row_cache is None
    bigger = open_store("sqlite:///a.db?row_cache_kib=100")
    assert isinstance(bigger, SqliteStore) and bigger.row_cache is not None
    assert bigger.row_cache.max_bytes == 100 * 1024
    default = open_store()
    assert isinstance(default, SqliteStore) and default.path == "accord.db"
    assert DEFAULT_URL == "sqlite:///accord.db"
    for bad in (
        "accord.db",
        "mysql://x",
        "sqlite://accord.db",
        "sqlite:///",
        "memory://x",
        "sqlite:///a.db?synchronous=off",
        "sqlite:///a.db?cache=1",
        "sqlite:///a.db?row_cache_kib=-1",
        "sqlite:///a.db?row_cache_kib=lots",
    ):
        with pytest.raises(ValueError):
            open_store(bad)


async def test_a_write_failing_halfway_is_undone_alone(tmp_path: Path) -> None:
    path = str(tmp_path / "accord.db")
    store = SqliteStore(path)
    await store.open()
    try:
        # A stray log entry (say, left by a hand edit) makes creating "zombie" fail after its
        # task row is written.
        conn = sqlite3.connect(path)
        conn.execute("INSERT INTO events VALUES ('zombie', 1, 'task', 0, x'7b7d')")
        conn.commit()
        conn.close()
        results = await asyncio.gather(
            *(new_task(store, f"task-{i}") for i in range(10)),
            new_task(store, "zombie"),
            *(new_task(store, f"task-{i}") for i in range(10, 20)),
            return_exceptions=True,
        )
        assert isinstance(results[10], StoreError)
        assert all(not isinstance(r, BaseException) for r in results[:10] + results[11:])
        assert await store.get_task("zombie", None) is None
        assert await store.count_tasks("t1") == 20
    finally:
        await store.close()


async def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "accord.db"
    path.write_bytes(b"this is not an SQLite database, just some text " * 100)
    with pytest.raises(StoreError, match="cannot open"):
        await SqliteStore(str(path)).open()
    with pytest.raises(StoreError, match="cannot open"):
        await SqliteStore(str(tmp_path / "missing" / "accord.db")).open()


async def test_close_leaves_the_checkpoint_to_the_next_open(tmp_path: Path) -> None:
    # The last connection to close would checkpoint, and the checkpoint's fsync writes back
    # every dirty page of the file (a minute on a freshly copied 2.3 GB file): the store's
    # connections close without one, their commits safe in the WAL, read back at next open.
    path = str(tmp_path / "accord.db")
    store = SqliteStore(path)
    await store.open()
    done = await new_task(store, "done", tenant="alice", moves=("work", "complete"))
    await store.close()
    wal = Path(f"{path}-wal")
    assert wal.exists() and wal.stat().st_size > 0  # a checkpoint on close deletes it

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT seq FROM tasks WHERE id = 'done'").fetchall() == [(done.seq,)]
    finally:
        conn.close()
    reopened = SqliteStore(path)
    await reopened.open()
    try:
        assert await reopened.get_task("done", "alice") == done
    finally:
        await reopened.close()


def test_a_closed_connection_leaves_its_wal_for_the_next_open(tmp_path: Path) -> None:
    """The store's connections close without a checkpoint (a stop never waits on an fsync of a
    large file): the WAL stays beside the database, and the next open reads it back."""
    from accord.store._sqlite_close import skip_checkpoint_on_close

    path = tmp_path / "close.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (v INTEGER)")
    assert skip_checkpoint_on_close(conn)
    conn.execute("INSERT INTO t VALUES (42)")
    conn.commit()
    conn.close()
    wal = tmp_path / "close.db-wal"
    assert wal.exists() and wal.stat().st_size > 0
    again = sqlite3.connect(path)
    try:
        assert again.execute("SELECT v FROM t").fetchall() == [(42,)]
    finally:
        again.close()


def test_by_default_the_last_close_checkpoints(tmp_path: Path) -> None:
    """The control for the test above: without the option SQLite folds the WAL in on close."""
    path = tmp_path / "plain.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (v INTEGER)")
    conn.commit()
    conn.close()
    wal = tmp_path / "plain.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
