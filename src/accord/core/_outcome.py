"""What a command decides: the seed's outcome name, the events to append, the new snapshot
and the domain events it publishes (the command surface's ``published`` list)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

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


class Published:
    """A domain event as the command surface lists it: qualified name and payload.

    :meth:`later` gives the payload as a function of a value, built when it is first read:
    the engine decides every agent's status update as a command, and only the command surface
    reads what one publishes (building the payload of each would cost a step event, or any
    status update, a few microseconds for nothing)."""

    __slots__ = ("_build", "_payload", "_source", "event")

    def __init__(self, event: str, payload: dict[str, Any]) -> None:
        self.event: Final = event
        self._payload: dict[str, Any] | None = payload
        self._build: Callable[[Any], dict[str, Any]] | None = None
        self._source: Any = None

    @classmethod
    def later(cls, event: str, build: Callable[[T], dict[str, Any]], source: T) -> Published:
        """``event`` whose payload is ``build(source)``, built on first read."""
        published = cls.__new__(cls)
        published.event = event  # type: ignore[misc]
        published._payload = None
        published._build = build
        published._source = source
        return published

    @property
    def payload(self) -> dict[str, Any]:
        payload = self._payload
        if payload is None:
            assert self._build is not None
            # (two threads that read it at once build it twice, alike: no lock needed)
            payload = self._payload = self._build(self._source)
            self._build = self._source = None
        return payload

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Published):
            return NotImplemented
        return self.event == other.event and self.payload == other.payload

    __hash__ = None  # type: ignore[assignment]  # (its payload is a dict)

    def __repr__(self) -> str:
        return f"Published({self.event!r}, {self.payload!r})"


T = TypeVar("T")


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
        return self._with(
            [*earlier.events, *self.events],
            [*earlier.published, *self.published],
            [*earlier.requests, *self.requests],
        )

    def carrying(self, requests: list[RequestKey]) -> Outcome:
        """This outcome with ``requests`` as the keys of the client requests it carries out."""
        return self._with(self.events, self.published, requests)

    def _with(
        self, events: list[Event], published: list[Published], requests: list[RequestKey]
    ) -> Outcome:
        # (every field named: dataclasses.replace walks the fields, a few microseconds on
        # each SendMessage; tests/core checks that no field is left behind)
        return Outcome(
            name=self.name,
            error=self.error,
            events=events,
            record=self.record,
            config=self.config,
            configs=self.configs,
            message=self.message,
            published=published,
            payload=self.payload,
            requests=requests,
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
    return Published.later("a2a.tasks.TaskStatusUpdated", _status_payload, update)


def _status_payload(update: TaskStatusUpdateEvent) -> dict[str, Any]:
    return {
        "task_id": update.task_id,
        "context_id": update.context_id,
        "status": to_builtins(update.status),
    }


def artifact_published(update: TaskArtifactUpdateEvent) -> Published:
    return Published.later("a2a.tasks.TaskArtifactUpdated", _artifact_payload, update)


def _artifact_payload(update: TaskArtifactUpdateEvent) -> dict[str, Any]:
    return {
        "taskId": update.task_id,
        "contextId": update.context_id,
        "artifact": to_builtins(update.artifact),
    }
