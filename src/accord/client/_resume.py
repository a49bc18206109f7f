"""Exactly-once delivery across stream reconnections (sans-I/O).

A :class:`StreamTracker` sits between the events a stream receives and the events the caller
sees. On the first connection it passes everything through and remembers what it delivered.
After a reconnection it filters:

* **Resumed by ``Last-Event-ID``** (the server numbered its events): the server sends only
  what came after the last event we saw; the checks below still run, harmlessly, in case
  it ignores the id.
* **Resubscribed** (no ids): the server may send a snapshot of the task first (as SubscribeToTask
  does) and may also replay earlier events. Replayed events form a prefix of the new stream;
  the tracker drops them until the first event it has not delivered, then passes the rest.

Event identity, used only during that replay prefix:

* status update: ``(state, timestamp, status message id)``; servers stamp each status, so two
  distinct updates differ in timestamp.
* artifact update: ``(artifactId, n)`` where ``n`` is the update's position among the updates
  of that artifact (0, 1, 2, ... in stream order), and its content must match what was
  delivered at that position.
* message: its ``messageId``.

A Task event after the first event is either that first event replayed (identical to it: the
server replays from the start, and it is dropped) or a snapshot of the task as it is now. A
snapshot is never passed on; it is compared with what the caller has, and only the difference
is delivered, as the events that would have carried it:

* an artifact whose parts extend those delivered → an ``append`` artifact update with the new
  parts; an artifact whose parts differ otherwise → a replacing update with all of them;
* a status the caller has not seen → a status update (after the artifacts, so a terminal
  status stays last).

Everything after a snapshot is newer than it, so artifact positions move past every update
delivered so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accord.wire import (
    Artifact,
    Message,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    encode,
)

StatusKey = tuple[str, str, str]


def status_key(status: TaskStatus) -> StatusKey:
    timestamp = status.timestamp if isinstance(status.timestamp, str) else ""
    message_id = status.message.message_id if isinstance(status.message, Message) else ""
    return (str(status.state), timestamp, message_id)


@dataclass(slots=True)
class _ArtifactView:
    """An artifact as the caller has it, with the update history that built it."""

    parts: list[bytes] = field(default_factory=list)  # encoded parts, in order
    updates: list[bytes] = field(default_factory=list)  # encoded update, per position n

    def apply(self, update: TaskArtifactUpdateEvent) -> None:
        new = [encode(p) for p in update.artifact.parts]
        self.parts = [*self.parts, *new] if update.append else new
        self.updates.append(_update_identity(update))


def _update_identity(update: TaskArtifactUpdateEvent) -> bytes:
    return encode([update.append, update.last_chunk, update.artifact])


class StreamTracker:
    """Decides which received events the caller gets; see the module docstring."""

    def __init__(self) -> None:
        self.task_id = ""
        self.context_id = ""
        self.done = False  # a terminal status, or a message answer, was delivered
        # A terminal or interrupted status was delivered after the stream's first event: the
        # end of a SendStreamingMessage turn (SubscribeToTask goes on past interrupted states).
        self.turn_ended = False
        self.state: TaskState | None = None  # the last state delivered
        self._delivered_any = False
        self._status_keys: set[StatusKey] = set()
        self._artifacts: dict[str, _ArtifactView] = {}
        self._messages: set[str] = set()
        self._replaying = False
        self._positions: dict[str, int] = {}
        self._first_task = b""  # the encoded Task that opened the stream, if one did

    @property
    def interrupted(self) -> bool:
        return self.state is not None and self.state.interrupted

    def reconnecting(self, *, resumed_by_id: bool) -> None:
        """A new connection starts.

        With ``resumed_by_id`` the server should send only what followed our last event, so
        artifact positions start after everything delivered; status keys are still checked in
        case it sends a snapshot or ignores the id.
        """
        self._replaying = self._delivered_any
        if resumed_by_id:
            self._positions = {aid: len(v.updates) for aid, v in self._artifacts.items()}
        else:
            self._positions = {}

    def accept(self, response: StreamResponse) -> list[StreamResponse]:
        """The events to hand to the caller for one received event (possibly none)."""
        if isinstance(response.task, Task):
            return self._task(response.task, response)
        if isinstance(response.status_update, TaskStatusUpdateEvent):
            return self._status(response.status_update, response)
        if isinstance(response.artifact_update, TaskArtifactUpdateEvent):
            return self._artifact(response.artifact_update, response)
        if isinstance(response.message, Message):
            return self._message(response.message, response)
        return []

    # --- per kind ---------------------------------------------------------------------------

    def _note_ids(self, task_id: str, context_id: str) -> None:
        if task_id and not self.task_id:
            self.task_id = task_id
        if context_id and not self.context_id:
            self.context_id = context_id

    def _deliver(self, response: StreamResponse) -> list[StreamResponse]:
        self._delivered_any = True
        self._replaying = False
        return [response]

    def _record_status(self, status: TaskStatus, *, opening: bool = False) -> None:
        self._status_keys.add(status_key(status))
        state = self.state = status.state if isinstance(status.state, TaskState) else None
        if state is not None and state.terminal:
            self.done = True
        # The Task that opens the stream of a continuation still shows the interrupted state
        # the message found: only a later status can end that turn.
        if not opening and state is not None and (state.terminal or state.interrupted):
            self.turn_ended = True

    def _status(
        self, event: TaskStatusUpdateEvent, response: StreamResponse
    ) -> list[StreamResponse]:
        self._note_ids(event.task_id, event.context_id)
        if self._replaying and status_key(event.status) in self._status_keys:
            return []
        self._record_status(event.status)
        return self._deliver(response)

    def _artifact(
        self, event: TaskArtifactUpdateEvent, response: StreamResponse
    ) -> list[StreamResponse]:
        self._note_ids(event.task_id, event.context_id)
        artifact_id = event.artifact.artifact_id
        view = self._artifacts.get(artifact_id)
        if self._replaying and view is not None:
            position = self._positions.get(artifact_id, 0)
            if position < len(view.updates) and view.updates[position] == _update_identity(event):
                self._positions[artifact_id] = position + 1
                return []
        if view is None:
            view = self._artifacts[artifact_id] = _ArtifactView()
        view.apply(event)
        self._positions[artifact_id] = len(view.updates)
        return self._deliver(response)

    def _message(self, message: Message, response: StreamResponse) -> list[StreamResponse]:
        self._note_ids(message.task_id, message.context_id)
        if self._replaying and message.message_id in self._messages:
            return []
        self._messages.add(message.message_id)
        if not self.task_id:
            self.done = True  # a message answer ends the exchange
        return self._deliver(response)

    def _task(self, task: Task, response: StreamResponse) -> list[StreamResponse]:
        self._note_ids(task.id, task.context_id)
        if not self._delivered_any:
            self._first_task = encode(task)
            for artifact in task.artifacts:
                view = self._artifacts[artifact.artifact_id] = _ArtifactView()
                view.apply(self._as_update(task, artifact, append=False))
            self._record_status(task.status, opening=True)
            return self._deliver(response)
        if self._replaying and encode(task) == self._first_task:
            # The stream's first event again: the server replays from the start. Its
            # artifacts were update 0 of theirs; the replay continues with update 1.
            for artifact in task.artifacts:
                self._positions[artifact.artifact_id] = 1
            return []
        return self._reconcile(task)

    def _as_update(
        self, task: Task, artifact: Artifact, *, append: bool
    ) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=task.id or self.task_id,
            context_id=task.context_id or self.context_id,
            artifact=artifact,
            append=append,
        )

    def _reconcile(self, task: Task) -> list[StreamResponse]:
        """Deliver what a snapshot shows beyond what the caller has."""
        out: list[StreamResponse] = []
        seen_in_snapshot: set[str] = set()
        for artifact in task.artifacts:
            artifact_id = artifact.artifact_id
            seen_in_snapshot.add(artifact_id)
            snapshot_parts = [encode(p) for p in artifact.parts]
            view = self._artifacts.get(artifact_id)
            have = view.parts if view is not None else []
            if snapshot_parts == have:
                self._positions[artifact_id] = len(view.updates) if view else 0
                continue
            if view is not None and snapshot_parts[: len(have)] == have:
                missing = artifact.parts[len(have) :]
                update = self._as_update(
                    task,
                    Artifact(
                        artifact_id=artifact_id,
                        parts=missing,
                        name=artifact.name,
                        description=artifact.description,
                        metadata=artifact.metadata,
                        extensions=artifact.extensions,
                    ),
                    append=True,
                )
            else:
                update = self._as_update(task, artifact, append=False)
            if view is None:
                view = self._artifacts[artifact_id] = _ArtifactView()
            view.apply(update)
            self._positions[artifact_id] = len(view.updates)
            out.append(StreamResponse(artifact_update=update))
        for artifact_id in self._artifacts.keys() - seen_in_snapshot:
            self._positions[artifact_id] = len(self._artifacts[artifact_id].updates)
        if status_key(task.status) not in self._status_keys:
            self._record_status(task.status)
            out.append(
                StreamResponse(
                    status_update=TaskStatusUpdateEvent(
                        task_id=task.id or self.task_id,
                        context_id=task.context_id or self.context_id,
                        status=task.status,
                    )
                )
            )
        if out:
            self._delivered_any = True
        return out
