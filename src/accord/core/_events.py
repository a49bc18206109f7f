"""Events of a task's log and the fold that turns a log into the task snapshot.

One log per task is the truth: every change is an :class:`Event` with a per-task sequence
number (1, 2, 3 … with no gaps), and the snapshot is ``fold(events)``. ``kind`` says what the
body is:

- ``task``: the task as created (first event of every log);
- ``status``: a ``TaskStatusUpdateEvent``; a status message joins the history (last, or
  after the messages it answers: :data:`AFTER_KEY`);
- ``artifact``: a ``TaskArtifactUpdateEvent`` (append / replace by ``artifactId``);
- ``message``: a client message that continued the task, appended to its history;
- ``journal``: an agent's own record (:class:`JournalEntry`), not part of the snapshot.

``task``, ``status`` and ``artifact`` are what streams and push notifications carry
(``StreamResponse.task`` / ``statusUpdate`` / ``artifactUpdate``); ``message`` is history only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from accord.wire import (
    UNSET,
    Artifact,
    Message,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    UnsetType,
)

EventKind = Literal["task", "status", "artifact", "message", "journal"]
STREAMED_KINDS: frozenset[str] = frozenset({"task", "status", "artifact"})


class JournalEntry(msgspec.Struct, gc=False, frozen=True):
    """An agent's own record in its task's log (kind ``journal``): durable and in order with
    the task's other events, never streamed or pushed, and no part of the task snapshot. The
    harness journals each model answer and tool result before acting on it, so a turn a
    crash cut resumes without doing anything twice."""

    data: dict[str, Any]


# Task.metadata keys that describe the current status rather than the task: a status update
# whose metadata carries one sets it in Task.metadata, and the next status update that does
# not carry it removes it (A2A's TaskStatus has no metadata of its own). The one such key is
# the tiny-harness status extension's, whose sub_state says why a task is INPUT_REQUIRED.
STATUS_SCOPED_KEYS: tuple[str, ...] = ("io.github.madarauchiha-314.tiny-harness/status",)


class Event(msgspec.Struct, gc=False, frozen=True):
    task_id: str
    seq: int
    kind: EventKind
    body: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message | JournalEntry
    at_ms: int

    @property
    def streamed(self) -> bool:
        return self.kind in STREAMED_KINDS

    def stream_response(self) -> StreamResponse:
        body = self.body
        if isinstance(body, Task):
            return StreamResponse(task=body)
        if isinstance(body, TaskStatusUpdateEvent):
            return StreamResponse(status_update=body)
        if isinstance(body, TaskArtifactUpdateEvent):
            return StreamResponse(artifact_update=body)
        raise ValueError(f"a {self.kind} event is not streamed")


# Metadata of an agent's status message that says where in the history it belongs: after the
# first N messages (those it answers), before the messages that came while it was being
# written. Only status messages are placed (only the agent writes them); a value that is not
# a position of the history puts the message last, as any other.
AFTER_KEY = "accord.core/after"


def apply(task: Task | None, event: Event) -> Task:
    """The snapshot after ``event``. Returns a new Task; ``task`` is not modified."""
    body = event.body
    if event.kind == "task":
        assert isinstance(body, Task)
        return msgspec.structs.replace(
            body, history=list(body.history), artifacts=list(body.artifacts)
        )
    if task is None:
        raise ValueError(f"event {event.seq} of task {event.task_id} comes before its creation")
    if isinstance(body, TaskStatusUpdateEvent):
        history = task.history
        if body.status.message is not UNSET:
            history = _placed(history, body.status.message)
        metadata = task.metadata
        if metadata is not UNSET or body.metadata is not UNSET:
            metadata = _with_status_scoped(metadata, body.metadata)
        return msgspec.structs.replace(
            task,
            status=body.status,
            history=history,
            metadata=metadata,
            generation=body.generation if body.generation is not UNSET else task.generation,
        )
    if isinstance(body, TaskArtifactUpdateEvent):
        artifacts = _merge_artifact(task.artifacts, body)
        if body.generation is not UNSET:
            return msgspec.structs.replace(task, artifacts=artifacts, generation=body.generation)
        return msgspec.structs.replace(task, artifacts=artifacts)
    if isinstance(body, Message):
        return msgspec.structs.replace(task, history=[*task.history, body])
    if isinstance(body, JournalEntry):
        return task  # (the agent's record: the task itself is unchanged)
    raise ValueError(f"unknown event body {type(body).__name__}")


def _placed(history: list[Message], message: Message) -> list[Message]:
    """``history`` with an agent's status ``message`` in it: where its AFTER_KEY says."""
    metadata = message.metadata
    after = metadata.get(AFTER_KEY) if isinstance(metadata, dict) else None
    if type(after) is not int or not 0 <= after < len(history):
        return [*history, message]
    return [*history[:after], message, *history[after:]]


def leaves_work(event: Event) -> bool:
    """Whether ``event`` puts its task in a state other than WORKING (its creation, a move
    out of WORKING): the journal entries before it belong to an earlier stretch of work."""
    body = event.body
    if isinstance(body, (Task, TaskStatusUpdateEvent)):
        return body.status.state is not TaskState.WORKING
    return False


def _with_status_scoped(
    metadata: dict[str, Any] | UnsetType, update: dict[str, Any] | UnsetType
) -> dict[str, Any] | UnsetType:
    """Task.metadata after a status update with metadata ``update`` (STATUS_SCOPED_KEYS)."""
    carried = {
        key: update[key] for key in STATUS_SCOPED_KEYS if update is not UNSET and key in update
    }
    stale = metadata is not UNSET and any(
        key in metadata and key not in carried for key in STATUS_SCOPED_KEYS
    )
    if not carried and not stale:
        return metadata
    kept = (
        {k: v for k, v in metadata.items() if k not in STATUS_SCOPED_KEYS}
        if metadata is not UNSET
        else {}
    )
    return {**kept, **carried}


def _merge_artifact(artifacts: list[Artifact], update: TaskArtifactUpdateEvent) -> list[Artifact]:
    new = update.artifact
    for index, old in enumerate(artifacts):
        if old.artifact_id == new.artifact_id:
            merged = (
                msgspec.structs.replace(old, parts=[*old.parts, *new.parts])
                if update.append
                else new
            )
            return [*artifacts[:index], merged, *artifacts[index + 1 :]]
    return [*artifacts, new]


def fold(events: Iterable[Event]) -> Task | None:
    """The snapshot a whole log describes (None for an empty log)."""
    task: Task | None = None
    for event in events:
        task = apply(task, event)
    return task
