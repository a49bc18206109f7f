"""Builders the core tests share: messages, requests, and tasks brought to a given state
through the core's own commands (never by editing records)."""

from __future__ import annotations

from typing import Any

from accord.core import Limits, Outcome, TaskRecord, agent, client
from accord.core._events import Event
from accord.wire._model import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)

T0 = 1_700_000_000_000
UNLIMITED = Limits(tasks_per_tenant=None, messages_per_task=None, push_configs_per_task=None)

# The agent moves that reach each state from SUBMITTED.
PATH_TO: dict[TaskState, tuple[str, ...]] = {
    TaskState.SUBMITTED: (),
    TaskState.WORKING: ("work",),
    TaskState.COMPLETED: ("work", "complete"),
    TaskState.FAILED: ("fail",),
    TaskState.REJECTED: ("reject",),
    TaskState.INPUT_REQUIRED: ("work", "require_input"),
    TaskState.AUTH_REQUIRED: ("work", "require_auth"),
}


def user_message(
    text: str = "hello", *, task_id: str = "", context_id: str = "", message_id: str = "m-1"
) -> Message:
    return Message(
        message_id=message_id,
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def send_request(message: Message | None = None, **extra: Any) -> SendMessageRequest:
    return SendMessageRequest(message=message or user_message(), **extra)


def send(
    request: SendMessageRequest,
    task: TaskRecord | None = None,
    *,
    tenant: str = "acme",
    count: int = 0,
    now_ms: int = T0,
    task_id: str = "t-1",
    context_id: str = "c-new",
    limits: Limits = UNLIMITED,
    **options: Any,
) -> Outcome:
    return client.send_message(
        request,
        tenant=tenant,
        task=task,
        tenant_task_count=count,
        now_ms=now_ms,
        new_task_id=task_id,
        new_context_id=context_id,
        limits=limits,
        **options,
    )


def accepted(outcome: Outcome, name: str) -> TaskRecord:
    assert outcome.ok, outcome.error
    assert outcome.name == name
    assert outcome.record is not None
    return outcome.record


def new_task(
    *, tenant: str = "acme", task_id: str = "t-1", context_id: str = "c-1"
) -> tuple[TaskRecord, list[Event]]:
    """A fresh SUBMITTED task and its log."""
    outcome = send(send_request(), tenant=tenant, task_id=task_id, context_id=context_id)
    return accepted(outcome, "task-created"), list(outcome.events)


def task_in(
    state: TaskState, *, tenant: str = "acme", task_id: str = "t-1"
) -> tuple[TaskRecord, list[Event]]:
    """A task driven to ``state`` by agent moves (CANCELED by a client cancel)."""
    record, log = new_task(tenant=tenant, task_id=task_id)
    now = T0
    if state is TaskState.CANCELED:
        now += 1
        outcome = client.cancel_task(record, tenant=tenant, task_id=task_id, now_ms=now)
        return accepted(outcome, "canceled"), [*log, *outcome.events]
    for move in PATH_TO[state]:
        now += 1
        outcome = agent.move(record, move, now)
        record = accepted(outcome, "moved")
        log.extend(outcome.events)
    assert record.state is state
    return record, log


def assert_refused(outcome: Outcome, name: str) -> None:
    """A refusal: the outcome's name and error, and nothing recorded or published."""
    assert outcome.name == name
    assert not outcome.ok
    assert outcome.error is not None
    assert outcome.events == []
    assert outcome.record is None
    assert outcome.config is None
    assert outcome.configs == []
    assert outcome.message is None
    assert outcome.published == []
