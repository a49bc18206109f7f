"""What the core knows about stored things: a task with its tenant and log position, and a
push-notification config with its owner."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from accord.wire import Task, TaskPushNotificationConfig, TaskState


class TaskRecord(msgspec.Struct, gc=False):
    """A task snapshot as stored: the wire Task plus what the wire does not carry."""

    task: Task
    tenant: str
    seq: int  # sequence number of the last event folded into ``task``
    created_ms: int
    updated_ms: int  # time of the current status; ListTasks orders by it

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def state(self) -> TaskState:
        state = self.task.status.state
        assert isinstance(state, TaskState)
        return state


class PushConfigRecord(msgspec.Struct, gc=False):
    """A push-notification config as stored, with the tenant that owns it."""

    config: TaskPushNotificationConfig
    tenant: str
    created_ms: int


@dataclass(frozen=True, slots=True)
class RequestKey:
    """A request that must not be carried out twice: who sent it (tenant and identity), its
    key (``m:`` + a message's messageId, or ``k:`` + an Idempotency-Key), a digest of what it
    asked for, and when it was first seen."""

    tenant: str
    caller: str
    key: str
    fingerprint: bytes
    created_ms: int
