"""Realistic records for store tests, built with the real core commands."""

from __future__ import annotations

from accord.core._limits import Limits
from accord.core._outcome import Outcome
from accord.core._records import PushConfigRecord, TaskRecord
from accord.core.agent import move, update_artifact
from accord.core.client import send_message
from accord.store._base import TaskStore
from accord.wire._model import (
    Artifact,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
)


def message(text: str, *, task_id: str = "", context_id: str = "") -> Message:
    return Message(
        message_id=f"m-{text}",
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def created(
    task_id: str, *, tenant: str = "t1", context_id: str = "", now_ms: int = 1000
) -> Outcome:
    outcome = send_message(
        SendMessageRequest(message=message(f"hello {task_id}", context_id=context_id)),
        tenant=tenant,
        task=None,
        tenant_task_count=0,
        now_ms=now_ms,
        new_task_id=task_id,
        new_context_id=f"ctx-{task_id}",
        limits=Limits(),
    )
    assert outcome.name == "task-created", outcome
    return outcome


def continued(record: TaskRecord, text: str, now_ms: int) -> Outcome:
    outcome = send_message(
        SendMessageRequest(message=message(text, task_id=record.id)),
        tenant=record.tenant,
        task=record,
        tenant_task_count=1,
        now_ms=now_ms,
        new_task_id="unused",
        new_context_id="unused",
        limits=Limits(),
    )
    assert outcome.name == "continued", outcome
    return outcome


def moved(record: TaskRecord, move_name: str, now_ms: int) -> Outcome:
    outcome = move(record, move_name, now_ms)
    assert outcome.name == "moved", outcome
    return outcome


def artifact(record: TaskRecord, now_ms: int, text: str = "result") -> Outcome:
    outcome = update_artifact(
        record, Artifact(artifact_id="a1", parts=[Part(text=text)]), now_ms, last_chunk=True
    )
    assert outcome.name == "updated", outcome
    return outcome


async def commit(store: TaskStore, before: TaskRecord | None, outcome: Outcome) -> TaskRecord:
    """Append ``outcome`` on top of ``before`` (None: a new task); the new record."""
    assert outcome.record is not None
    await store.append(outcome.record, outcome.events, before.seq if before else 0)
    return outcome.record


async def new_task(
    store: TaskStore,
    task_id: str,
    *,
    tenant: str = "t1",
    context_id: str = "",
    now_ms: int = 1000,
    moves: tuple[str, ...] = (),
) -> TaskRecord:
    """A stored task after ``moves``, each one millisecond after the previous."""
    record = await commit(
        store, None, created(task_id, tenant=tenant, context_id=context_id, now_ms=now_ms)
    )
    for offset, name in enumerate(moves, start=1):
        record = await commit(store, record, moved(record, name, now_ms + offset))
    return record


def push_config(
    task_id: str, config_id: str, *, tenant: str = "t1", url: str = "https://hooks.example/a"
) -> PushConfigRecord:
    config = TaskPushNotificationConfig(
        url=url, id=config_id, task_id=task_id, tenant=tenant, token="secret"
    )
    return PushConfigRecord(config=config, tenant=tenant, created_ms=5)
