"""Reading the store's feed of committed changes (accord.store._base.FeedEntry) as it grows:
the one reader under the Agent feed of the command surface (``GET /tasks/events``) and the
dashboard's live table.

This node's commits wake the readers at once (:class:`FeedHub`); another node's (PostgreSQL)
are found by looking again every ``POLL_S``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from accord.engine import Engine
from accord.store import FeedEntry, TaskStore

POLL_S = 1.0  # push-config changes wake no one; the feed looks again at least this often
BATCH = 256  # entries read at once


class FeedHub:
    """Wakes feed readers after every durable append."""

    def __init__(self, engine: Engine) -> None:
        self._waiters: set[asyncio.Event] = set()
        engine.add_commit_listener(self._committed)

    def _committed(self, task_id: str) -> None:
        for waiter in self._waiters:
            waiter.set()

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        self._waiters.add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(event)


async def batches(
    store: TaskStore, hub: FeedHub, tenant: str | None, after: int, heartbeat: float
) -> AsyncGenerator[list[FeedEntry] | None]:
    """The feed's entries after position ``after`` (only ``tenant``'s unless None), batch by
    batch as they are committed, forever; None each time ``heartbeat`` seconds pass without
    one (the reader's moment for a keep-alive)."""
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    idle = 0.0
    while True:
        wake.clear()
        entries = await store.read_feed(after, tenant, BATCH)
        if entries:
            idle = 0.0
            after = entries[-1].position
            yield entries
            continue
        before = loop.time()
        await hub.wait(wake, min(POLL_S, heartbeat))
        idle += loop.time() - before
        if idle >= heartbeat:
            idle = 0.0
            yield None


async def head(store: TaskStore) -> int:
    """The position of the newest feed entry (0 for an empty feed), found with O(log n)
    one-row reads: positions only grow, so "an entry after p exists" holds below the head
    and fails from it on."""
    low, high = 0, 1
    while await store.read_feed(high, None, 1):  # grow until past the head
        low, high = high, high * 2
    while high - low > 1:  # low is before the head, high at or past it
        middle = (low + high) // 2
        if await store.read_feed(middle, None, 1):
            low = middle
        else:
            high = middle
    entries = await store.read_feed(low, None, 1)
    return entries[0].position if entries else low
