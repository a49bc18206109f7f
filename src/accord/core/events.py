"""Events of a task's log and the fold that turns a log into the task snapshot.

One log per task is the truth: every change is an :class:`Event` with a per-task sequence
number (1, 2, 3 … with no gaps), and the snapshot is ``fold(events)``. ``kind`` says what the
body is:

- ``task``: the task as created (first event of every log);
- ``status``: a ``TaskStatusUpdateEvent``; a status message joins the history;
- ``artifact``: a ``TaskArtifactUpdateEvent`` (append / replace by ``artifactId``);
- ``message``: a client message that continued the task, appended to its history.

``task``, ``status`` and ``artifact`` are what streams and push notifications carry
(``StreamResponse.task`` / ``statusUpdate`` / ``artifactUpdate``); ``message`` is history only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

from accord.wire.model import (
    UNSET,
    Artifact,
    Message,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)

EventKind = Literal["task", "status", "artifact", "message"]
STREAMED_KINDS: frozenset[str] = frozenset({"task", "status", "artifact"})


class Event(msgspec.Struct, gc=False, frozen=True):
    task_id: str
    seq: int
    kind: EventKind
    body: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message
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
            history = [*history, body.status.message]
        return msgspec.structs.replace(task, status=body.status, history=history)
    if isinstance(body, TaskArtifactUpdateEvent):
        return msgspec.structs.replace(task, artifacts=_merge_artifact(task.artifacts, body))
    if isinstance(body, Message):
        return msgspec.structs.replace(task, history=[*task.history, body])
    raise ValueError(f"unknown event body {type(body).__name__}")


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
