"""The advisory locks a PostgreSQL node holds for the tasks it runs (accord.store._pg_holds):
batched, seen by every other session, and taken back when their connection breaks."""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest
from tests.waiting import until

from accord.store._pg_holds import AdvisoryHolds


@pytest.fixture
async def other(pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    """Another session on the same database, as another node's would be."""
    conn = await asyncpg.connect(pg_url)
    yield conn
    await conn.close()


async def held(conn: asyncpg.Connection, task_ids: list[str]) -> list[bool]:
    """Which of the tasks' locks some other session holds, seen from ``conn``."""
    return [
        not await conn.fetchval(
            "SELECT pg_try_advisory_lock(hashtextextended($1, 0))"
            " AND pg_advisory_unlock(hashtextextended($1, 0))",
            task_id,
        )
        for task_id in task_ids
    ]


def ids(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


async def test_many_concurrent_holds_are_all_held_and_releases_release(
    pg_url: str, other: asyncpg.Connection
) -> None:
    holds = AdvisoryHolds(pg_url)
    tasks = ids(200)
    try:
        assert await asyncio.gather(*(holds.hold(t) for t in tasks)) == [True] * 200
        assert await held(other, tasks) == [True] * 200
        await asyncio.gather(*(holds.release(t) for t in tasks[:150]))
        assert await held(other, tasks) == [False] * 150 + [True] * 50
    finally:
        await holds.close()
    assert await held(other, tasks) == [False] * 200  # the session ended


async def test_concurrent_requests_share_statements(pg_url: str) -> None:
    holds = AdvisoryHolds(pg_url)
    statements: list[str] = []
    try:
        await holds.hold("warm-up")  # connected
        assert holds._conn is not None
        holds._conn.add_query_logger(
            lambda record: statements.append(record.query) if "advisory" in record.query else None
        )
        tasks = ids(100)
        await asyncio.gather(*(holds.hold(t) for t in tasks))
        await asyncio.gather(*(holds.release(t) for t in tasks))
        # One statement for the first request, one for all that queued behind it; likewise
        # for the releases.
        assert 2 <= len(statements) <= 4
    finally:
        await holds.close()


async def test_a_task_another_node_holds_is_not_taken_and_is_seen_as_held_elsewhere(
    pg_url: str,
) -> None:
    node_a, node_b = AdvisoryHolds(pg_url), AdvisoryHolds(pg_url)
    mine, theirs, nobodys = ids(3)
    try:
        assert await node_a.hold(mine)
        assert await node_b.hold(theirs)
        assert not await node_a.hold(theirs)
        answers = await asyncio.gather(
            node_a.held_elsewhere(mine),
            node_a.held_elsewhere(theirs),
            node_a.held_elsewhere(nobodys),
        )
        assert list(answers) == [False, True, False]
        # Probing took nothing: node B can still take the task nobody held.
        assert await node_b.hold(nobodys)
        await node_b.release(theirs)
        assert await node_a.hold(theirs)
    finally:
        await node_a.close()
        await node_b.close()


async def test_a_release_and_a_hold_asked_together_end_as_asked_last(
    pg_url: str, other: asyncpg.Connection
) -> None:
    holds = AdvisoryHolds(pg_url)
    kept, given = ids(2)
    try:
        await asyncio.gather(holds.hold(kept), holds.hold(given))
        # Asked in this order with nothing awaited in between: one batch.
        await asyncio.gather(holds.release(kept), holds.hold(kept), holds.release(given))
        assert await held(other, [kept, given]) == [True, False]
    finally:
        await holds.close()


async def wait_until_held(conn: asyncpg.Connection, task_ids: list[str], patience: float) -> None:
    deadline = time.monotonic() + patience
    while await held(conn, task_ids) != [True] * len(task_ids):
        assert time.monotonic() < deadline, "the locks were not taken back"
        await asyncio.sleep(0.05)


async def test_a_killed_lock_connection_is_replaced_and_the_locks_taken_back(
    pg_url: str, other: asyncpg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    holds = AdvisoryHolds(pg_url)
    tasks = ids(20)
    try:
        await asyncio.gather(*(holds.hold(t) for t in tasks))
        await holds.release(tasks[-1])
        backend = await holds.backend_pid()
        with caplog.at_level(logging.WARNING, logger="accord.store"):
            assert await other.fetchval("SELECT pg_terminate_backend($1)", backend)
            # Nothing else happens on this node: it notices the loss by itself. (The old
            # session may still hold its locks an instant after the kill: wait for the node
            # to say it took them back, then check they are held.)
            await wait_for_log(caplog, "took back", patience=10)
            await wait_until_held(other, tasks[:-1], patience=10)
        assert await holds.backend_pid() != backend
        assert await held(other, tasks[-1:]) == [False]
        assert "took back 19 of 19 task locks" in caplog.text
        await holds.release(tasks[0])
        assert await held(other, tasks[:2]) == [False, True]
    finally:
        await holds.close()


async def test_the_lock_session_asks_the_server_for_keepalives(pg_url: str) -> None:
    holds = AdvisoryHolds(pg_url, keepalive_idle_s=7, keepalive_interval_s=2, keepalive_count=4)
    try:
        await holds.hold("any")
        assert holds._conn is not None
        settings = await holds._conn.fetchrow(
            "SELECT current_setting('tcp_keepalives_idle') AS idle,"
            " current_setting('tcp_keepalives_interval') AS interval,"
            " current_setting('tcp_keepalives_count') AS count,"
            " current_setting('tcp_user_timeout') AS user_timeout"
        )
        assert settings is not None
        assert dict(settings) == {
            "idle": "7",
            "interval": "2",
            "count": "4",
            "user_timeout": "15000",  # ms
        }
        assert holds.dead_peer_s == 15
    finally:
        await holds.close()


async def end_session_leaving_lock_to(
    holds: AdvisoryHolds, other: asyncpg.Connection, blocker: asyncpg.Connection, task_id: str
) -> None:
    """End the node's lock session with ``blocker`` queued behind its lock of ``task_id``:
    the server grants it the lock the moment the session ends, before the node can take it
    back, as a session the server still kept would go on holding it."""
    backend = await holds.backend_pid()
    waiting = asyncio.ensure_future(
        blocker.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", task_id)
    )
    queued = "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'"
    await until(lambda: other.fetchval(queued, blocker.get_server_pid()), "the blocker queued")
    assert await other.fetchval("SELECT pg_terminate_backend($1)", backend)
    await asyncio.wait_for(waiting, 5)


async def wait_for_log(caplog: pytest.LogCaptureFixture, text: str, patience: float) -> None:
    deadline = time.monotonic() + patience
    while text not in caplog.text:
        assert time.monotonic() < deadline, f"no {text!r} in the log"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
async def test_a_lock_another_session_still_holds_after_a_reconnect_is_taken_once_free(
    pg_url: str, other: asyncpg.Connection, caplog: pytest.LogCaptureFixture, busy: bool
) -> None:
    """The server may keep a node's old session (and its locks) after the node has given it
    up and connected anew: its locks are taken as soon as they come free, also while other
    holds and releases keep the lock connection busy."""
    holds = AdvisoryHolds(pg_url)
    free, stuck = ids(2)
    blocker = await asyncpg.connect(pg_url)

    async def churn() -> None:
        while True:
            (task_id,) = ids(1)
            await holds.hold(task_id)
            await holds.release(task_id)

    # Several at once, so that a batch is always waiting for the connection.
    churning = asyncio.gather(*(churn() for _ in range(8))) if busy else None
    try:
        await asyncio.gather(holds.hold(free), holds.hold(stuck))
        with caplog.at_level(logging.WARNING, logger="accord.store"):
            await end_session_leaving_lock_to(holds, other, blocker, stuck)
            await wait_for_log(caplog, "took back", patience=10)
            # Every lock but the stuck one came back (busy: the churn's holds of the moment
            # are counted too).
            taken = re.search(r"took back (\d+) of (\d+) task locks", caplog.text)
            assert taken is not None
            assert int(taken[1]) == int(taken[2]) - 1
            assert await held(other, [free]) == [True]
            await blocker.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", stuck)
            await wait_until_held(other, [stuck], patience=5)
            assert "took 1 task locks another session had held" in caplog.text
        # This node holds it (the blocker has let go): a release frees it.
        await holds.release(stuck)
        assert await held(other, [free, stuck]) == [True, False]
    finally:
        if churning is not None:
            churning.cancel()
            await asyncio.gather(churning, return_exceptions=True)
        await blocker.close()
        await holds.close()


async def test_a_released_task_is_not_taken_back_later(
    pg_url: str, other: asyncpg.Connection, caplog: pytest.LogCaptureFixture
) -> None:
    holds = AdvisoryHolds(pg_url)
    (stuck,) = ids(1)
    blocker = await asyncpg.connect(pg_url)
    try:
        await holds.hold(stuck)
        with caplog.at_level(logging.WARNING, logger="accord.store"):
            await end_session_leaving_lock_to(holds, other, blocker, stuck)
            await wait_for_log(caplog, "took back 0 of 1", patience=10)
        await holds.release(stuck)  # the run ended here meanwhile
        await blocker.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", stuck)
        await asyncio.sleep(1.5)  # a window past a retry period: the lock is not taken again
        assert await held(other, [stuck]) == [False]
    finally:
        await blocker.close()
        await holds.close()


async def test_a_release_asked_as_the_connection_dies_is_not_taken_back(
    pg_url: str, other: asyncpg.Connection
) -> None:
    holds = AdvisoryHolds(pg_url)
    kept, given = ids(2)
    try:
        await asyncio.gather(holds.hold(kept), holds.hold(given))
        backend = await holds.backend_pid()
        assert await other.fetchval("SELECT pg_terminate_backend($1)", backend)
        await holds.release(given)  # most often sent on the dying connection, and lost
        await wait_until_held(other, [kept], patience=10)  # the new session took it back
        assert await holds.backend_pid() != backend
        assert await held(other, [given]) == [False]
    finally:
        await holds.close()


async def test_a_hold_another_node_has_is_taken_once_it_lets_go_unless_released(
    pg_url: str,
) -> None:
    """A task that runs on two nodes at once (a message reached the second while the first
    still ran it): the second's refused hold becomes its hold once the first lets go."""
    node_a, node_b = AdvisoryHolds(pg_url), AdvisoryHolds(pg_url)
    wanted, given_up = ids(2)
    try:
        assert await node_a.hold(wanted) and await node_a.hold(given_up)
        assert not await node_b.hold(wanted)
        assert not await node_b.hold(given_up)
        await node_b.release(given_up)  # node B's run of it ended first
        await node_a.release(wanted)
        await node_a.release(given_up)
        deadline = time.monotonic() + 5
        while not await node_a.held_elsewhere(wanted):
            assert time.monotonic() < deadline, "node B did not take the hold"
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.5)  # a window past a retry period of node B's: it takes nothing
        assert not await node_a.held_elsewhere(given_up)
        assert await node_a.hold(given_up)
    finally:
        await node_a.close()
        await node_b.close()
