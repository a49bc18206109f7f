"""The live table: the rows of the tasks that change, as Server-Sent Events (the tasks come
from accord.service._reads.changes, which reads the store's feed of committed changes as the
caller may see them).

Each change is sent as the task's row as it is now (``event: row``), or ``event: gone`` when
it no longer matches the table's filters. Its ``id`` is the feed position: a page that
reconnects with ``Last-Event-ID`` gets exactly the changes after it. A stream opened without
one starts at the end of the feed, and its first event (``event: ready``) carries that
position, so a page that opens the stream and then reads its first page misses nothing.

Changes that do not alter a row (artifact chunks, push-config edits) are skipped, and a
task that changed several times in one read of the feed is sent once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from accord.dashboard._rows import Filters, row
from accord.service import Changes

ROW_KINDS = frozenset({"task", "status", "message"})  # what a row shows can change with these


def frame(event: str, data: Any, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def frames(changes: Changes, filters: Filters) -> AsyncIterator[bytes]:
    """SSE frames of the rows ``changes`` brings, forever; a keep-alive comment when its
    heartbeat passes without one."""
    tasks = changes.tasks
    try:
        yield frame("ready", {"position": changes.start}, changes.start)
        async for changed in tasks:
            if changed is None:
                yield b": keep-alive\n\n"
                continue
            position, record = changed
            if filters.matches(record):
                yield frame("row", row(record), position)
            else:
                yield frame("gone", {"id": record.id}, position)
    finally:
        await tasks.aclose()  # type: ignore[attr-defined]
