"""Builders for stream events used by several client tests."""

from __future__ import annotations

from accord.wire._model import (
    Artifact,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

TASK_ID = "task-1"
CONTEXT_ID = "ctx-1"


def ts(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}.000Z"


def task(
    state: TaskState = TaskState.SUBMITTED, *artifacts: Artifact, at: int | None = None
) -> StreamResponse:
    status = (
        TaskStatus(state=state, timestamp=ts(at)) if at is not None else TaskStatus(state=state)
    )
    return StreamResponse(
        task=Task(id=TASK_ID, context_id=CONTEXT_ID, status=status, artifacts=list(artifacts))
    )


def status(state: TaskState, at: int) -> StreamResponse:
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id=TASK_ID,
            context_id=CONTEXT_ID,
            status=TaskStatus(state=state, timestamp=ts(at)),
        )
    )


def chunk(
    text: str, *, append: bool = True, last: bool = False, artifact_id: str = "a1"
) -> StreamResponse:
    return StreamResponse(
        artifact_update=TaskArtifactUpdateEvent(
            task_id=TASK_ID,
            context_id=CONTEXT_ID,
            artifact=Artifact(artifact_id=artifact_id, parts=[Part(text=text)]),
            append=append,
            last_chunk=last,
        )
    )


def artifact(*texts: str, artifact_id: str = "a1") -> Artifact:
    return Artifact(artifact_id=artifact_id, parts=[Part(text=t) for t in texts])


def describe(event: StreamResponse) -> str:
    """A short, comparable description of an event."""
    if isinstance(event.task, Task):
        return f"task:{event.task.status.state}"
    if isinstance(event.status_update, TaskStatusUpdateEvent):
        return f"status:{event.status_update.status.state}"
    if isinstance(event.artifact_update, TaskArtifactUpdateEvent):
        update = event.artifact_update
        texts = "+".join(str(p.text) for p in update.artifact.parts)
        return f"{'append' if update.append else 'chunk'}:{update.artifact.artifact_id}:{texts}"
    return f"message:{event.message.message_id if event.message else ''}"
