"""A task's timeline as Server-Sent Events: every event of its log, in order, as it is written.

Unlike SubscribeToTask, which streams what A2A streams (the task, status and artifact
updates), the timeline also carries the ``message`` events: the messages participants sent
into the task after it began, channel messages included. Each event is sent as

    id: <seq>
    event: task | status | artifact | message
    data: {"seq": n, "at": "<time>", "kind": "...", "body": <its ProtoJSON>}

so a page that reconnects with ``Last-Event-ID: <seq>`` gets exactly what followed (0: the
whole log). After each read of the log, ``event: snapshot`` (no id) gives the task as it now
stands, without its history and artifacts (the events carry those): state, status message,
metadata (participants, sub-state, plan, sub-tasks). The stream ends once the task is
terminal and its log is read to the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from accord.bus.local import LocalBus
from accord.core import lifecycle, views
from accord.core.events import Event, apply
from accord.core.records import TaskRecord
from accord.dashboard.scope import Viewer
from accord.store.base import TaskStore
from accord.wire.codec import encode
from accord.wire.errors import task_not_found
from accord.wire.time import format_timestamp

BATCH = 256
KEEPALIVE = b": keep-alive\n\n"


async def visible_task(store: TaskStore, viewer: Viewer, task_id: str) -> TaskRecord:
    """The task, if the viewer may read it; else the task-not-found error an unknown id
    gets (a task the caller may not read looks exactly like one that does not exist)."""
    record = await store.get_task(task_id, viewer.tenant)
    if record is None or not viewer.sees(record.task):
        raise task_not_found(task_id)
    return record


def _event_frame(event: Event) -> bytes:
    data = encode(
        {
            "seq": event.seq,
            "at": format_timestamp(event.at_ms),
            "kind": event.kind,
            "body": event.body,
        }
    )
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (event.seq, event.kind.encode(), data)


def _snapshot_frame(record: TaskRecord) -> bytes:
    task = views.present(record.task, 0, include_artifacts=False)
    return b"event: snapshot\ndata: " + encode({"seq": record.seq, "task": task}) + b"\n\n"


async def follow(
    store: TaskStore, bus: LocalBus, record: TaskRecord, after: int, heartbeat_s: float
) -> AsyncIterator[bytes]:
    """The frames of ``record``'s task after ``after``: its snapshot, its log's events as
    they are written, a snapshot after each batch; until the task is terminal."""
    yield _snapshot_frame(record)
    cursor = min(after, record.seq)  # an id past the log's end has seen all there is
    with bus.subscribe(record.id) as woken:
        while True:
            woken.clear()
            events = await store.read_events(record.id, cursor, BATCH)
            if events:
                for event in events:
                    cursor = event.seq
                    if event.seq > record.seq:  # the snapshot follows the log
                        record = TaskRecord(
                            task=apply(record.task, event),
                            tenant=record.tenant,
                            seq=event.seq,
                            created_ms=record.created_ms,
                            updated_ms=event.at_ms if event.kind == "status" else record.updated_ms,
                        )
                    if event.kind != "journal":  # (the agent's own record, not the task's)
                        yield _event_frame(event)
                yield _snapshot_frame(record)
                continue
            if lifecycle.is_terminal(record.state) and cursor >= record.seq:
                return
            if not await woken.wait(heartbeat_s):
                yield KEEPALIVE
