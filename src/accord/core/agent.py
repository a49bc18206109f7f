"""Agent commands: the moves an agent makes on a task it works on, and its artifacts.

Each returns the seed's outcome: ``moved`` / ``updated`` with one published event,
``not-found`` (no such task), or ``wrong-state`` with the ``TaskStateConflict{state}`` payload
when the lifecycle table has no such move from the task's state. Terminal tasks never change,
so ``update_artifact`` on a terminal task is ``wrong-state`` too (the seed is silent there).
"""

from __future__ import annotations

from typing import Any

import msgspec

from accord.core import lifecycle
from accord.core._build import append, timestamp
from accord.core._events import Event, JournalEntry
from accord.core._outcome import (
    SEED_STATE_NAMES,
    Outcome,
    Published,
    artifact_published,
    refused,
    status_published,
)
from accord.core._records import TaskRecord
from accord.wire import (
    UNSET,
    A2AError,
    Artifact,
    ErrorKind,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    task_not_found,
)

AGENT_MOVES = ("work", "complete", "fail", "reject", "require_input", "require_auth")


def wrong_state(record: TaskRecord, action: str) -> Outcome:
    state = record.state
    error = A2AError(
        ErrorKind.TASK_STATE_CONFLICT,
        f"task {record.id!r} is {state.value}; {action} does not start from it",
        {"taskId": record.id, "state": state.value},
    )
    return refused("wrong-state", error, {"state": SEED_STATE_NAMES[state]})


def agent_message(message: Message, record: TaskRecord) -> Message:
    """An agent's status message, bound to its task and context."""
    return msgspec.structs.replace(
        message,
        role=Role.AGENT,
        task_id=record.task.id,
        context_id=record.task.context_id,
    )


def move(
    record: TaskRecord | None,
    move_name: str,
    now_ms: int,
    status_message: Message | None = None,
    task_id: str = "",
    metadata: dict[str, Any] | None = None,
) -> Outcome:
    """StartWorking / CompleteTask / FailTask / RejectTask / RequireInput / RequireAuth /
    (with ``move_name="cancel"``) the state change of a cancel. ``metadata`` is the status
    update's own (an extension's annotation of this status, e.g. a sub-state)."""
    if record is None:
        return refused("not-found", task_not_found(task_id))
    target = lifecycle.MOVES[move_name]
    if record.state not in target.sources:
        return wrong_state(record, move_name)
    return _status(record, target.to, now_ms, status_message, metadata, "moved")


def note(
    record: TaskRecord | None,
    now_ms: int,
    status_message: Message | None = None,
    task_id: str = "",
    metadata: dict[str, Any] | None = None,
) -> Outcome:
    """A status update in the task's current state: a message from the agent (a command's
    answer, a refusal's reason) that moves nothing. Terminal tasks take none."""
    if record is None:
        return refused("not-found", task_not_found(task_id))
    if lifecycle.is_terminal(record.state):
        return wrong_state(record, "note")
    return _status(record, record.state, now_ms, status_message, metadata, "noted")


def _status(
    record: TaskRecord,
    state: TaskState,
    now_ms: int,
    status_message: Message | None,
    metadata: dict[str, Any] | None,
    name: str,
) -> Outcome:
    status = TaskStatus(
        state=state,
        message=agent_message(status_message, record) if status_message else UNSET,
        timestamp=timestamp(now_ms),
    )
    update = TaskStatusUpdateEvent(
        task_id=record.task.id,
        context_id=record.task.context_id,
        status=status,
        metadata=metadata if metadata is not None else UNSET,
    )
    new, event = append(record, "status", update, now_ms)
    return Outcome(name, events=[event], record=new, published=[status_published(update)])


def journal(
    record: TaskRecord | None, data: dict[str, Any], now_ms: int, task_id: str = ""
) -> Outcome:
    """An agent's record in its task's log (not streamed, not in the snapshot). Terminal
    tasks take none."""
    if record is None:
        return refused("not-found", task_not_found(task_id))
    if lifecycle.is_terminal(record.state):
        return wrong_state(record, "journal")
    new, event = append(record, "journal", JournalEntry(data=data), now_ms)
    return Outcome("journaled", events=[event], record=new)


def set_metadata(
    record: TaskRecord | None, metadata: dict[str, Any], now_ms: int, task_id: str = ""
) -> Outcome:
    """Replace Task.metadata: a ``task`` event carrying the whole new snapshot, so streams and
    push deliver the change when it happens. Terminal tasks never change."""
    if record is None:
        return refused("not-found", task_not_found(task_id))
    if lifecycle.is_terminal(record.state):
        return wrong_state(record, "set_metadata")
    snapshot = msgspec.structs.replace(record.task, metadata=metadata)
    new, event = append(record, "task", snapshot, now_ms)
    return Outcome("updated", events=[event], record=new)


def open_task(
    task_id: str,
    context_id: str,
    tenant: str,
    now_ms: int,
    metadata: dict[str, Any] | None = None,
    message: Message | None = None,
    generations: bool = False,
) -> Outcome:
    """A task the agent opens itself (a sub-task, say), not a client's message: SUBMITTED,
    with ``metadata`` as its Task.metadata and ``message``, if any, as its first history
    message; counting generations from 1 with ``generations`` (the A2A 1.1 preview)."""
    history = []
    if message is not None:
        history.append(msgspec.structs.replace(message, task_id=task_id, context_id=context_id))
    task = Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.SUBMITTED, timestamp=timestamp(now_ms)),
        history=history,
        metadata=metadata if metadata is not None else UNSET,
        generation=1 if generations else UNSET,
    )
    event = Event(task_id=task_id, seq=1, kind="task", body=task, at_ms=now_ms)
    record = TaskRecord(task=task, tenant=tenant, seq=1, created_ms=now_ms, updated_ms=now_ms)
    published = [Published("a2a.tasks.TaskCreated", {"task_id": task_id})]
    return Outcome("task-created", events=[event], record=record, published=published)


def update_artifact(
    record: TaskRecord | None,
    artifact: Artifact,
    now_ms: int,
    *,
    append_parts: bool = False,
    last_chunk: bool = False,
    task_id: str = "",
) -> Outcome:
    """UpdateArtifact: a new artifact, a replacement (same id, ``append=False``) or a chunk."""
    if record is None:
        return refused("not-found", task_not_found(task_id))
    if lifecycle.is_terminal(record.state):
        return wrong_state(record, "update_artifact")
    update = TaskArtifactUpdateEvent(
        task_id=record.task.id,
        context_id=record.task.context_id,
        artifact=artifact,
        append=append_parts,
        last_chunk=last_chunk,
    )
    new, event = append(record, "artifact", update, now_ms)
    return Outcome("updated", events=[event], record=new, published=[artifact_published(update)])
