"""Small builders the command modules share: appending events to a record, published
payloads, state names as the seed spells them."""

from __future__ import annotations

from typing import Any

import msgspec

from accord.core.events import Event, EventKind, JournalEntry, apply
from accord.core.outcome import Published
from accord.core.records import TaskRecord
from accord.wire.codec import to_builtins
from accord.wire.errors import A2AError, ErrorKind
from accord.wire.model import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from accord.wire.time import format_timestamp

# The seed's names for task states (``a2a.tasks.Task.State``).
SEED_STATE_NAMES: dict[TaskState, str] = {
    TaskState.SUBMITTED: "Submitted",
    TaskState.WORKING: "Working",
    TaskState.COMPLETED: "Completed",
    TaskState.FAILED: "Failed",
    TaskState.CANCELED: "Canceled",
    TaskState.INPUT_REQUIRED: "InputRequired",
    TaskState.REJECTED: "Rejected",
    TaskState.AUTH_REQUIRED: "AuthRequired",
}


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


def status_published(update: TaskStatusUpdateEvent) -> Published:
    return Published(
        "a2a.tasks.TaskStatusUpdated",
        {
            "task_id": update.task_id,
            "context_id": update.context_id,
            "status": to_builtins(update.status),
        },
    )


def artifact_published(update: TaskArtifactUpdateEvent) -> Published:
    payload: dict[str, Any] = {
        "taskId": update.task_id,
        "contextId": update.context_id,
        "artifact": to_builtins(update.artifact),
    }
    return Published("a2a.tasks.TaskArtifactUpdated", payload)


def task_not_found(task_id: str) -> A2AError:
    return A2AError(ErrorKind.TASK_NOT_FOUND, f"task {task_id!r} not found", {"taskId": task_id})


def timestamp(now_ms: int) -> str:
    return format_timestamp(now_ms)
