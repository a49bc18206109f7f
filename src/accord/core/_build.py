"""Small builders the command modules share: appending events to a record, published
payloads, state names as the seed spells them."""

from __future__ import annotations

import msgspec

from accord.core._events import STREAMED_KINDS, Event, EventKind, JournalEntry, apply
from accord.core._records import TaskRecord
from accord.wire import (
    UNSET,
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
    """The record after one more event, and that event (next sequence number).

    A task that counts generations (created under the A2A 1.1 preview: its ``generation`` is
    set) counts this event if it is one that streams carry: the body gets the next
    generation, and the fold makes it the task's."""
    generation = record.task.generation
    if generation is not UNSET and kind in STREAMED_KINDS:
        assert not isinstance(body, (Message, JournalEntry))
        body = msgspec.structs.replace(body, generation=generation + 1)
    event = Event(task_id=record.task.id, seq=record.seq + 1, kind=kind, body=body, at_ms=now_ms)
    task = apply(record.task, event)
    updated_ms = now_ms if kind == "status" else record.updated_ms
    new = msgspec.structs.replace(record, task=task, seq=event.seq, updated_ms=updated_ms)
    return new, event


def timestamp(now_ms: int) -> str:
    return format_timestamp(now_ms)
