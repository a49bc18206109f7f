"""Small builders the command modules share: appending events to a record, published
payloads, state names as the seed spells them."""

from __future__ import annotations

import msgspec

from accord.core._events import Event, EventKind, JournalEntry, apply
from accord.core._records import TaskRecord
from accord.wire import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    format_timestamp,
)


def append(
    record: TaskRecord,
    kind: EventKind,
    body: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message | JournalEntry,
    now_ms: int,
) -> tuple[TaskRecord, Event]:
    """The record after one more event, and that event (next sequence number)."""
    event = Event(task_id=record.task.id, seq=record.seq + 1, kind=kind, body=body, at_ms=now_ms)
    task = apply(record.task, event)
    updated_ms = now_ms if kind == "status" else record.updated_ms
    new = msgspec.structs.replace(record, task=task, seq=event.seq, updated_ms=updated_ms)
    return new, event


def timestamp(now_ms: int) -> str:
    return format_timestamp(now_ms)
