"""What the chat client knows of its conversation, folded from what the server sends: the
task's state and sub-state, whose turn it is, and the lines to show (messages, the reply as
it is written, help requests). No terminal here: the app (accord.chat._app) draws it.

Lines are keyed (a message by its id, a streamed artifact by its artifact id), so the same
message seen twice — in a stream and again in a task snapshot after a reconnection — is
shown once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from accord.chat import _a2ui as a2ui
from accord.harness import CHANNEL_MEDIA_TYPE, EVENT_MEDIA_TYPE, STATUS_KEY
from accord.wire import (
    UNSET,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

LineKind = Literal["message", "reply", "help", "notice"]
TERMINAL = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
# Where a help request names who it is for (the channel data's addressee).
ADDRESSEE_KEYS = ("to", "addressed_to", "participant_id", "recipient", "recipients")


@dataclass
class Line:
    key: str
    who: str
    text: str
    kind: LineKind = "message"
    for_me: bool = False  # a help request addressed to this participant
    done: bool = True  # False while a streamed reply is still being written


def state_name(state: object) -> str:
    return state.name.lower().replace("_", "-") if isinstance(state, TaskState) else str(state)


def addressees(data: Any) -> list[str]:
    found: list[str] = []
    if not isinstance(data, dict):
        return found
    for key in ADDRESSEE_KEYS:
        value = data.get(key)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list):
            found += [v for v in value if isinstance(v, str)]
    return found


def part_text(part: Part) -> str:
    """One part as a line of text: data parts by what they are (a channel message, an
    envelope) or as compact JSON; files by name."""
    if isinstance(part.text, str):
        return part.text
    if (action := a2ui.part_text(part)) is not None:
        return action
    if part.data is not UNSET:
        data = part.data
        if part.media_type == CHANNEL_MEDIA_TYPE and isinstance(data, dict):
            kind = str(data.get("kind", "message")).replace("_", " ")
            to = addressees(data)
            target = f" to {', '.join(to)}" if to else ""
            return f"[{kind}{target} from {data.get('sender', '?')}] {data.get('text', '')}"
        if part.media_type == EVENT_MEDIA_TYPE and isinstance(data, dict):
            if data.get("kind") == "control":
                return f"[control: {data.get('action', '')}]"
            return f"[{data.get('kind', 'envelope')} envelope]"
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    name = part.filename or (part.url if isinstance(part.url, str) else "") or "file"
    return f"[file {name}]"


def sender(message: Message) -> str:
    metadata = message.metadata
    if metadata is not UNSET and isinstance(metadata.get("participant_id"), str):
        return str(metadata["participant_id"])
    return "agent" if message.role is Role.AGENT else "user"


@dataclass
class Conversation:
    me: str  # the participant this client speaks as ("" when the server says who)
    task_id: str = ""
    state: TaskState | None = None
    sub_state: str = ""
    lines: dict[str, Line] = field(default_factory=dict)
    _streamed: dict[str, str] = field(default_factory=dict)  # artifact id -> text this turn
    _seen: set[str] = field(default_factory=set)  # message ids shown (or folded into a reply)
    ui: a2ui.Surfaces = field(default_factory=a2ui.Surfaces)  # the task's A2UI surfaces

    # --- what the server sends ---------------------------------------------------------------

    def see(self, event: StreamResponse) -> list[Line]:
        """Fold one stream event in; the lines it added or changed."""
        if isinstance(event.task, Task):
            return self.see_task(event.task)
        if isinstance(event.status_update, TaskStatusUpdateEvent):
            return self._status(event.status_update)
        if isinstance(event.artifact_update, TaskArtifactUpdateEvent):
            return self._artifact(event.artifact_update)
        if isinstance(event.message, Message):
            return self._message(event.message)
        return []

    def see_task(self, task: Task) -> list[Line]:
        """A task snapshot: its state, and the messages of its history not shown yet."""
        self.task_id = self.task_id or task.id
        self._state(task.status.state, task.metadata)
        changed: list[Line] = []
        for message in task.history:
            changed += self._message(message)
        running = self.state in (TaskState.SUBMITTED, TaskState.WORKING)
        for artifact in task.artifacts:  # as written so far (the stream appends to them)
            update = TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=artifact
            )
            changed += self._artifact(update, done=not running)
        return changed

    def _state(self, state: object, metadata: dict[str, Any] | Any) -> None:
        if isinstance(state, TaskState):
            self.state = state
        status = metadata.get(STATUS_KEY) if isinstance(metadata, dict) else None
        value = status.get("sub_state") if isinstance(status, dict) else None
        self.sub_state = value if isinstance(value, str) else ""

    def _status(self, update: TaskStatusUpdateEvent) -> list[Line]:
        self.task_id = self.task_id or update.task_id
        self._state(update.status.state, update.metadata)
        if update.status.state is TaskState.WORKING:
            self._streamed.clear()  # a new turn: its reply streams anew
        message = update.status.message
        if not isinstance(message, Message):
            return []
        if message.text() and message.text() in self._streamed.values():
            self._seen.add(message.message_id)
            return []  # the reply streamed already; its closing status repeats it
        return self._message(message)

    def _message(self, message: Message) -> list[Line]:
        if message.message_id in self._seen:
            return []
        self._seen.add(message.message_id)
        help_parts = [
            p.data
            for p in message.parts
            if p.media_type == CHANNEL_MEDIA_TYPE
            and isinstance(p.data, dict)
            and p.data.get("kind") == "help_request"
        ]
        for_me = bool(self.me) and any(self.me in addressees(data) for data in help_parts)
        kind: LineKind = "message"
        if help_parts:
            kind = "help"
        elif message.role is Role.AGENT:
            kind = "reply"
        text = "\n".join(part_text(part) for part in message.parts)
        line = Line(message.message_id, sender(message), text, kind, for_me)
        self.lines[line.key] = line
        return [line]

    def _artifact(self, update: TaskArtifactUpdateEvent, done: bool | None = None) -> list[Line]:
        artifact = update.artifact
        key = f"artifact:{artifact.artifact_id}"
        if self.ui.see(artifact):  # a surface: its form, drawn once as it came
            if key in self.lines:
                return []
            self.lines[key] = Line(key, "ui", self.ui.draw(), "reply")
            return [self.lines[key]]
        text = "".join(part_text(part) for part in artifact.parts)
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = Line(key, artifact.name or "agent", "", "reply")
        line.text = line.text + text if update.append else text
        line.done = update.last_chunk if done is None else done
        self._streamed[artifact.artifact_id] = line.text
        return [line]

    def notice(self, text: str) -> Line:
        line = Line(f"notice:{len(self.lines)}", "", text, "notice")
        self.lines[line.key] = line
        return line

    # --- what the header says ----------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self.state in TERMINAL

    @property
    def turn(self) -> str:
        state = self.state
        if state is None:
            return "say something to start"
        if state in TERMINAL:
            return "ended"
        if state is TaskState.INPUT_REQUIRED:
            waiting_on_me = any(line.for_me for line in self.lines.values())
            if self.sub_state == "awaiting-answer":
                return "your answer is awaited" if waiting_on_me else "awaiting an answer"
            return "your turn"
        if state is TaskState.AUTH_REQUIRED:
            return "authentication required"
        return "the agent's turn"

    @property
    def header(self) -> str:
        state = state_name(self.state) if self.state is not None else "new"
        shown = f"{state} · {self.sub_state}" if self.sub_state else state
        return f"{shown} — {self.turn}"
