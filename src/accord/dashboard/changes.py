"""The live table: the rows of the tasks that change, as Server-Sent Events, read from the
store's feed (every committed change, in commit order; accord.store.base.FeedEntry).

Each change is sent as the task's row as it is now (``event: row``), or ``event: gone`` when
it no longer matches the table's filters. Its ``id`` is the feed position: a page that
reconnects with ``Last-Event-ID`` gets exactly the changes after it. A stream opened without
one starts at the end of the feed, and its first event (``event: ready``) carries that
position, so a page that opens the stream and then reads its first page misses nothing.

Changes that do not alter a row (artifact chunks, push-config edits) are skipped, and a
task that changed several times in one read of the feed is sent once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from accord.dashboard.rows import Filters, row
from accord.dashboard.scope import Viewer
from accord.store.base import FeedEntry, TaskStore
from accord.surface.feed import POLL_S, FeedHub

BATCH = 256
ROW_KINDS = frozenset({"task", "status", "message"})  # what a row shows can change with these


async def feed_head(store: TaskStore) -> int:
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


def _changes_a_row(entry: FeedEntry) -> bool:
    return not entry.config_id and any(event.kind in ROW_KINDS for event in entry.events)


def frame(event: str, data: Any, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def follow(
    store: TaskStore,
    hub: FeedHub,
    viewer: Viewer,
    filters: Filters,
    after: int | None,
    heartbeat_s: float,
) -> AsyncIterator[bytes]:
    """SSE frames of the rows changed after feed position ``after`` (None: from now on),
    forever; a keep-alive comment when ``heartbeat_s`` passes without one."""
    position = await feed_head(store) if after is None else after
    yield frame("ready", {"position": position}, position)
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()
    idle = 0.0
    while True:
        wake.clear()
        entries = await store.read_feed(position, viewer.tenant, BATCH)
        if not entries:
            # This node's commits wake the hub at once; another node's (PostgreSQL) are
            # found by looking again every POLL_S.
            before = loop.time()
            await hub.wait(wake, min(POLL_S, heartbeat_s))
            idle += loop.time() - before
            if idle >= heartbeat_s:
                idle = 0.0
                yield b": keep-alive\n\n"
            continue
        idle = 0.0
        position = entries[-1].position
        changed: dict[str, int] = {}  # task id -> its latest position in this batch
        for entry in entries:
            if _changes_a_row(entry):
                changed.pop(entry.task_id, None)  # (re-inserted: kept in the order of change)
                changed[entry.task_id] = entry.position
        for task_id, at in changed.items():
            record = await store.get_task(task_id, viewer.tenant)
            if record is None or not viewer.sees(record.task):
                continue  # deleted since, or not this caller's to see
            if filters.matches(record):
                yield frame("row", row(record), at)
            else:
                yield frame("gone", {"id": task_id}, at)
