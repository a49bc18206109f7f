"""How a PostgreSQL node notices that another node died (accord.store._pg_nodes): the other
node's lock session ends for good. A lock connection that breaks and comes back, a read that
fails and a server restart are not deaths."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import asyncpg

from accord.store._pg_nodes import HOLDS_APPLICATION, NodeWatch
from accord.store._postgres import PostgresStore

BOOT = datetime(2026, 12, 1, tzinfo=UTC)


class Sessions:
    """What the watch reads: the server's start and the lock sessions of ``nodes``."""

    def __init__(self, *nodes: str) -> None:
        self.nodes = set(nodes)
        self.started = BOOT
        self.down = False

    async def __call__(self) -> tuple[datetime, list[str]]:
        if self.down:
            raise ConnectionRefusedError("the database is down")
        return self.started, [HOLDS_APPLICATION + node for node in sorted(self.nodes)]


async def test_a_node_whose_lock_session_stays_gone_is_reported_once() -> None:
    sessions = Sessions("me", "a", "b")
    watch = NodeWatch(sessions, "me")
    assert await watch.look() == []
    sessions.nodes -= {"a", "me"}  # (this node's own session: never reported)
    assert await watch.look() == []  # gone once: it may be reconnecting
    assert await watch.look() == ["a"]
    assert await watch.look() == []  # reported once


async def test_a_lock_session_that_comes_back_is_not_a_death() -> None:
    sessions = Sessions("a")
    watch = NodeWatch(sessions, "me")
    await watch.look()
    sessions.nodes.clear()
    assert await watch.look() == []
    sessions.nodes.add("a")  # its new session (the node took its locks back)
    assert await watch.look() == []
    assert await watch.look() == []


async def test_a_failed_read_or_a_server_restart_starts_the_watch_over() -> None:
    sessions = Sessions("a", "b")
    watch = NodeWatch(sessions, "me")
    await watch.look()
    sessions.down = True
    assert await watch.look() == []
    sessions.down = False
    sessions.nodes = {"b"}  # "a" has not reconnected yet after the outage
    assert await watch.look() == []
    assert await watch.look() == []  # not known since the watch started over
    sessions.started = BOOT + timedelta(minutes=1)  # restarted: every session is new
    sessions.nodes = set()
    assert await watch.look() == []
    assert await watch.look() == []


async def test_waiting_returns_as_soon_as_a_node_is_gone_or_after_the_wait() -> None:
    sessions = Sessions("a")
    watch = NodeWatch(sessions, "me")
    started = time.monotonic()
    assert await watch.wait_gone(0.2, 0.05) == []
    assert 0.2 <= time.monotonic() - started < 2.0
    sessions.nodes.clear()
    assert await watch.wait_gone(30.0, 0.05) == ["a"]


async def test_nodes_on_a_database_see_a_closed_node_gone_and_a_reconnected_one_alive(
    pg_url: str,
) -> None:
    node_a, node_b = PostgresStore(pg_url), PostgresStore(pg_url)
    await node_a.open()
    await node_b.open()
    other = await asyncpg.connect(pg_url)
    try:
        # Watching opens each node's own lock session, named after it.
        assert not await node_a.node_lost(0.01, 0.01)
        assert not await node_b.node_lost(0.01, 0.01)
        name = HOLDS_APPLICATION + node_a.node
        pid = await other.fetchval(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1", name
        )
        assert pid is not None

        # Node A's lock session is ended (an administrator, a proxy): node A reconnects, and
        # node B (reading every 0.5 s, the default) does not take it for dead.
        watching = asyncio.ensure_future(node_b.node_lost(3.0, 0.5))
        await asyncio.sleep(0.7)
        assert await other.fetchval("SELECT pg_terminate_backend($1)", pid)
        assert not await watching

        # Node A closes (as its process's death would end its sessions): node B sees it.
        await node_a.close()
        started = time.monotonic()
        assert await node_b.node_lost(10.0, 0.05)
        assert time.monotonic() - started < 5.0
    finally:
        await other.close()
        await node_a.close()
        await node_b.close()
