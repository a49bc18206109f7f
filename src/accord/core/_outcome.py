"""What a command decides: the seed's outcome name, the events to append, the new snapshot
and the domain events it publishes (the command surface's ``published`` list)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from accord.core._events import Event
from accord.core._records import PushConfigRecord, RequestKey, TaskRecord
from accord.wire import (
    A2AError,
    Message,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
    to_builtins,
)


@dataclass(frozen=True, slots=True)
class Published:
    """A domain event as the command surface lists it: qualified name and payload."""

    event: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of one command.

    ``name`` is the seed's branch name (``task-created``, ``moved``, ``wrong-state`` …).
    On refusal ``error`` is set and nothing else changes. On acceptance ``events`` are the new
    log entries (sequence numbers assigned), ``record`` the snapshot after them, ``config`` /
    ``configs`` the push configs a push-config command returns or stores, ``message`` a direct
    reply, and ``published`` the seed's domain events in publication order.
    """

    name: str
    error: A2AError | None = None
    events: list[Event] = field(default_factory=list)
    record: TaskRecord | None = None
    config: PushConfigRecord | None = None
    configs: list[TaskPushNotificationConfig] = field(default_factory=list)
    message: Message | None = None
    published: list[Published] = field(default_factory=list)
    payload: dict[str, Any] | None = None  # refusal payload, e.g. TaskStateConflict{state}
    # Keys of the client requests these events carry out (safe retries): stored with them.
    requests: list[RequestKey] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    def after(self, earlier: Outcome) -> Outcome:
        """This outcome as one append with ``earlier``'s before it: its events, publications
        and request keys first (a new task's creation, then the moves decided on it)."""
        return dataclasses.replace(
            self,
            events=[*earlier.events, *self.events],
            published=[*earlier.published, *self.published],
            requests=[*earlier.requests, *self.requests],
        )


def refused(name: str, error: A2AError, payload: dict[str, Any] | None = None) -> Outcome:
    return Outcome(name=name, error=error, payload=payload)


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
