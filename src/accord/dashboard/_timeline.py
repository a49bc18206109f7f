"""A task's timeline as Server-Sent Events: every event of its log, in order, as it is written
(accord.service._reads.timeline reads it).

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

from accord.core import Event, TaskRecord, views
from accord.wire import encode, format_timestamp

KEEPALIVE = b": keep-alive\n\n"


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


async def frames(timeline: AsyncIterator[TaskRecord | Event | None]) -> AsyncIterator[bytes]:
    """The SSE frames of a task's timeline: a snapshot for each state of the task, an event
    frame for each event of its log, a keep-alive comment for each idle heartbeat."""
    try:
        async for item in timeline:
            if item is None:
                yield KEEPALIVE
            elif isinstance(item, TaskRecord):
                yield _snapshot_frame(item)
            else:
                yield _event_frame(item)
    finally:
        await timeline.aclose()  # type: ignore[attr-defined]
