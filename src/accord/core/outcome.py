"""What a command decides: the seed's outcome name, the events to append, the new snapshot
and the domain events it publishes (the command surface's ``published`` list)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accord.core.events import Event
from accord.core.records import PushConfigRecord, TaskRecord
from accord.wire.errors import A2AError
from accord.wire.model import Message, TaskPushNotificationConfig

if TYPE_CHECKING:
    from accord.store.base import RequestKey


@dataclass(frozen=True, slots=True)
class Published:
    """A domain event as the command surface lists it: qualified name and payload."""

    event: str
    payload: dict[str, Any]


@dataclass(slots=True)
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


def refused(name: str, error: A2AError, payload: dict[str, Any] | None = None) -> Outcome:
    return Outcome(name=name, error=error, payload=payload)
