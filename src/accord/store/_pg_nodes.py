"""Noticing at once that another node died, for PostgreSQL clusters.

A node's task locks live in one session of its own, named ``accord holds <node id>``
(:mod:`accord.store._pg_holds`). When the node dies, PostgreSQL ends that session and frees its
locks at once; the tasks it ran are then no one's, and recovery on any other node may take
them. The periodic recovery sweep finds them only at its next pass (every
``recovery_interval_s``), so :class:`NodeWatch` reads which lock sessions exist (one query on
``pg_stat_activity``, which reads the server's shared memory and no table) every ``every_s``
and says when a node that had one is gone: its tasks can be recovered now.

- A node is gone when it had a lock session at one read and has none at the next two. A live
  node whose lock connection broke opens a new one at once (and takes its locks back first
  thing), so its name is back by then, and no recovery races its retake.
- After a read that failed, or when the server restarted in between
  (``pg_postmaster_start_time()`` changed), the watch starts over: every node reconnects then,
  and none is taken for dead while it does.
- A node that holds nothing has no lock session (it opens one with its first task), so a
  node that runs nothing is never looked for; nor are nodes of versions before the watch
  (their lock sessions are unnamed): their death is found by the sweep, as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

log = logging.getLogger("accord.store")

HOLDS_APPLICATION = "accord holds "  # + the node id: the application_name of a lock session

READ_LOCK_SESSIONS = (
    "SELECT pg_postmaster_start_time(),"
    " coalesce(array_agg(DISTINCT application_name), '{}'::text[])"
    " FROM pg_stat_activity"
    " WHERE datname = current_database() AND application_name LIKE 'accord holds %'"
)

# (server start time, application names of the lock sessions); raises when it cannot read.
Reader = Callable[[], Awaitable[tuple[datetime, list[str]]]]


class NodeWatch:
    """Which other nodes have a lock session, read on demand; see the module's text."""

    def __init__(self, read: Reader, node: str) -> None:
        self._read = read
        self.node = node  # this node: never looked for
        self._started: datetime | None = None  # the server's start, at the last good read
        self._known: set[str] | None = None  # nodes with a lock session at the last read
        self._missing: set[str] = set()  # had one before the last read, none at it
        self.reads = 0  # (for tests and the cost in docs/scale-out.md)

    async def wait_gone(self, within_s: float, every_s: float) -> list[str]:
        """Read every ``every_s`` seconds for up to ``within_s``; the nodes found gone, as
        soon as there are any (empty: none within ``within_s``). Never raises: a read that
        fails only makes the watch start over."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within_s
        while True:
            gone = await self.look()
            if gone:
                return gone
            left = deadline - loop.time()
            if left <= 0:
                return []
            await asyncio.sleep(min(every_s, left))

    async def look(self) -> list[str]:
        """One read: the nodes gone since the reads before (confirmed by this one)."""
        self.reads += 1
        try:
            started, names = await self._read()
        except Exception as exc:
            if self._known is not None:
                log.info("node watch: cannot read the lock sessions (%r); starting over", exc)
            self._known, self._missing = None, set()
            return []
        nodes = {name.removeprefix(HOLDS_APPLICATION) for name in names}
        nodes.discard(self.node)
        known = self._known
        self._known = nodes
        if known is None or started != self._started:
            self._started, self._missing = started, set()
            return []
        gone = sorted(self._missing - nodes)
        self._missing = known - nodes
        if gone:
            log.info(
                "node watch: %s gone (no task-lock session since the last two reads);"
                " recovering what it ran",
                ", ".join(f"node {node}" for node in gone),
            )
        return gone
