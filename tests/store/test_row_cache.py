"""The SQLite store's cache of task rows: GetTask never sees an older row than SQLite holds,
never another tenant's, and the cache stays within its byte budget."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.store.records import artifact, commit, moved, new_task

from accord.store import SeqConflict, SqliteStore
from accord.store._row_cache import ROW_OVERHEAD, RowCache


def row(seq: int, snapshot: bytes = b"{}", tenant: str = "t1") -> tuple[object, ...]:
    return (tenant, seq, 1, 2, snapshot)


# --- the cache alone ---------------------------------------------------------------------------


def test_a_read_fills_the_cache_only_if_no_transaction_began_since() -> None:
    cache = RowCache(1 << 20)
    epoch = cache.epoch
    cache.fill("a", row(1), epoch)
    assert cache.get("a") == row(1)

    stale = cache.epoch
    cache.begin({"b"})  # a commit starts while a reader is in SQLite
    cache.fill("b", row(1), stale)
    cache.end([("b", row(2))])
    assert cache.get("b") == row(2)
    cache.fill("c", row(1), stale)  # read before the transaction: refused after it too
    assert cache.get("c") is None


def test_a_task_being_written_is_not_served_or_filled_until_its_transaction_ends() -> None:
    cache = RowCache(1 << 20)
    cache.fill("a", row(1), cache.epoch)
    cache.fill("b", row(1), cache.epoch)
    cache.begin({"a"})
    assert cache.get("a") is None  # readers go to SQLite, which has the truth
    assert cache.get("b") == row(1)  # tasks the batch does not write stay served
    cache.fill("a", row(2), cache.epoch)
    assert cache.get("a") is None
    cache.end([("a", row(2)), ("a", row(3))])  # two appends in one batch: the last wins
    assert cache.get("a") == row(3)


def test_a_failed_transaction_leaves_its_tasks_out_of_the_cache() -> None:
    cache = RowCache(1 << 20)
    cache.fill("a", row(1), cache.epoch)
    cache.begin({"a"})
    cache.end([])
    assert cache.get("a") is None
    cache.fill("a", row(1), cache.epoch)  # the next read fills it again
    assert cache.get("a") == row(1)


def test_a_transaction_that_may_delete_any_task_empties_the_cache() -> None:
    cache = RowCache(1 << 20)
    for name in "abc":
        cache.fill(name, row(1), cache.epoch)
    cache.begin(None)
    assert len(cache) == 0 and cache.size == 0
    assert cache.get("a") is None
    cache.fill("a", row(1), cache.epoch)
    assert cache.get("a") is None
    cache.end([])
    cache.fill("a", row(1), cache.epoch)
    assert cache.get("a") == row(1)


def test_the_cache_keeps_to_its_byte_budget_dropping_the_least_recently_used_first() -> None:
    snapshot = b"x" * 500
    per_row = len(snapshot) + ROW_OVERHEAD
    cache = RowCache(20 * per_row, admit_when_full=1)
    for index in range(50):
        cache.fill(f"t{index}", row(1, snapshot), cache.epoch)
        assert cache.size <= cache.max_bytes
    assert len(cache) == 20
    assert cache.get("t29") is None
    assert cache.get("t30") is not None  # the oldest in, but now just read
    cache.end([("t0", row(2, snapshot))])  # a write puts its task in as the newest
    assert cache.get("t0") == row(2, snapshot)
    assert cache.get("t31") is None  # the least recently used went
    assert cache.get("t30") is not None and len(cache) == 20
    for index in range(50, 68):  # 18 more: all but t30, t0 and the newest go
        cache.fill(f"t{index}", row(1, snapshot), cache.epoch)
    assert cache.get("t30") is not None and cache.get("t0") is not None
    assert cache.get("t32") is None and cache.get("t49") is None
    assert cache.size == 20 * per_row


def test_once_full_only_one_read_miss_in_n_pushes_a_row_out() -> None:
    cache = RowCache(20 * (1 + ROW_OVERHEAD), admit_when_full=4)
    cache.end([(f"w{index}", row(1, b"x")) for index in range(20)])  # written: always in
    assert len(cache) == 20
    for index in range(80):  # a scan over many more tasks than fit
        cache.fill(f"r{index}", row(1, b"x"), cache.epoch)
    admitted = [f"r{index}" for index in range(80) if cache.get(f"r{index}") is not None]
    assert admitted == [f"r{index}" for index in range(3, 80, 4)]  # one miss in four got in
    assert len(cache) == 20 and cache.size <= cache.max_bytes
    misses = 0
    while cache.get("hot") is None:  # a task read again and again gets in soon
        cache.fill("hot", row(1, b"x"), cache.epoch)
        misses += 1
    assert misses <= 4
    cache.end([("w0", row(2, b"x"))])  # a committed row goes in however full
    assert cache.get("w0") == row(2, b"x")


def test_a_row_larger_than_its_share_is_not_cached() -> None:
    cache = RowCache(16 * 1024)
    big = row(1, b"x" * 2000)
    cache.fill("big", big, cache.epoch)
    cache.end([("big2", big)])
    assert cache.get("big") is None and cache.get("big2") is None
    assert cache.size == 0


# --- through the store -------------------------------------------------------------------------


@pytest.fixture
async def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    backend = SqliteStore(str(tmp_path / "t.db"))
    await backend.open()
    yield backend
    await backend.close()


async def test_get_task_sees_every_acknowledged_append(store: SqliteStore) -> None:
    record = await new_task(store, "task-1")
    assert (await store.get_task("task-1", "t1")).seq == record.seq  # type: ignore[union-attr]
    for index in range(3):
        record = await commit(store, record, artifact(record, 2000 + index, f"v{index}"))
        found = await store.get_task("task-1", "t1")
        assert found is not None and found.seq == record.seq
        assert found.task == record.task
        snapshot = await store.get_snapshot("task-1", "t1")
        assert snapshot is not None and f"v{index}".encode() in snapshot


async def test_a_cached_task_is_not_found_in_another_tenant(store: SqliteStore) -> None:
    await new_task(store, "task-1", tenant="t1")
    assert await store.get_task("task-1", "t1") is not None  # now cached
    assert store.row_cache is not None and store.row_cache.get("task-1") is not None
    assert await store.get_task("task-1", "t2") is None
    assert await store.get_snapshot("task-1", "t2") is None
    assert await store.get_task("task-1", None) is not None


async def test_a_refused_append_leaves_the_cached_task_as_stored(store: SqliteStore) -> None:
    first = await new_task(store, "task-1")
    record = await commit(store, first, moved(first, "work", 2000))
    await store.get_task("task-1", "t1")
    stale = moved(first, "work", 2500)  # decided on the first record, which is gone
    assert stale.record is not None
    with pytest.raises(SeqConflict):
        await store.append(stale.record, stale.events, first.seq)
    found = await store.get_task("task-1", "t1")
    assert found is not None and found.seq == record.seq and found.state == record.state


async def test_retention_removes_cached_tasks(store: SqliteStore) -> None:
    await new_task(store, "old", now_ms=1000, moves=("work", "complete"))
    assert await store.get_task("old", "t1") is not None
    assert await store.delete_terminal_before(5000) == 1
    assert await store.get_task("old", "t1") is None
    assert await store.get_snapshot("old", "t1") is None


async def test_reads_during_commits_never_go_back(store: SqliteStore) -> None:
    """A reader polling a task while it is written: each read is at least as new as the last
    one and as the last acknowledged append (the writer thread commits meanwhile)."""
    record = await new_task(store, "task-1")
    acknowledged = record.seq
    done = False

    async def write() -> None:
        nonlocal record, acknowledged, done
        for index in range(150):
            record = await commit(store, record, artifact(record, 2000 + index, f"v{index}"))
            acknowledged = record.seq
        done = True

    async def read() -> int:
        last = 0
        reads = 0
        while not done:
            floor = acknowledged
            found = await store.get_task("task-1", "t1")
            assert found is not None
            assert found.seq >= floor and found.seq >= last
            last = found.seq
            reads += 1
            await asyncio.sleep(0)
        return reads

    _, reads = await asyncio.gather(write(), read())
    assert reads > 150
    final = await store.get_task("task-1", "t1")
    assert final is not None and final.seq == record.seq


async def test_without_the_cache_reads_go_to_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "t.db"), row_cache_kib=0)
    await store.open()
    try:
        record = await new_task(store, "task-1")
        record = await commit(store, record, artifact(record, 2000))
        found = await store.get_task("task-1", "t1")
        assert store.row_cache is None
        assert found is not None and found.seq == record.seq
    finally:
        await store.close()


# --- a log's end, known from the cache ---------------------------------------------------------


def _statements(store: SqliteStore) -> list[str]:
    """Every statement the store's reader connection runs from now on."""
    seen: list[str] = []
    store._read().set_trace_callback(seen.append)
    return seen


async def test_reading_past_a_cached_logs_end_does_not_enter_sqlite(store: SqliteStore) -> None:
    """A stream that has shown every event asks for what follows after each wake-up: with the
    task's latest row cached, "nothing" is answered without a read of SQLite."""
    record = await new_task(store, "task-1")
    for index in range(2):
        record = await commit(store, record, artifact(record, 2000 + index, f"v{index}"))
    statements = _statements(store)
    assert await store.read_events("task-1", record.seq) == []
    assert await store.read_events("task-1", record.seq + 5) == []
    assert statements == []
    # Anything the log holds after the cursor is read from SQLite, as before.
    last = await store.read_events("task-1", record.seq - 1)
    assert [event.seq for event in last] == [record.seq]
    assert len(statements) == 1 and "FROM events" in statements[0]


async def test_without_a_cached_row_the_logs_end_is_read_from_sqlite(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "t.db"), row_cache_kib=0)
    await store.open()
    try:
        record = await new_task(store, "task-1")
        statements = _statements(store)
        assert await store.read_events("task-1", record.seq) == []
        assert len(statements) == 1 and "FROM events" in statements[0]
    finally:
        await store.close()


async def test_a_follower_during_commits_never_misses_an_acknowledged_event(
    store: SqliteStore,
) -> None:
    """A follower reading after its cursor while the writer thread commits: whenever an
    append was acknowledged past the cursor, the read returns it (the cache never answers
    "nothing more" from a row older than the log), and the events come in order, each once."""
    record = await new_task(store, "task-1")
    first = record.seq
    acknowledged = record.seq
    done = False

    async def write() -> None:
        nonlocal record, acknowledged, done
        for index in range(150):
            record = await commit(store, record, artifact(record, 2000 + index, f"v{index}"))
            acknowledged = record.seq
        done = True

    async def follow() -> list[int]:
        cursor = first
        seen: list[int] = []
        while not done or cursor < acknowledged:
            floor = acknowledged
            events = await store.read_events("task-1", cursor)
            if floor > cursor:
                assert events, f"acknowledged up to {floor}, nothing read after {cursor}"
            for event in events:
                seen.append(event.seq)
                cursor = event.seq
            await asyncio.sleep(0)
        return seen

    _, seen = await asyncio.gather(write(), follow())
    assert seen == list(range(first + 1, record.seq + 1))
