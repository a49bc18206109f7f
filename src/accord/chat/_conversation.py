"""What the chat client knows of its conversation, folded from what the server sends: the
task's state and sub-state, whose turn it is, and the lines to show (messages, the reply as
it is written, help requests). No terminal here: the app (accord.chat._app) draws it.

Lines are keyed (a message by its id, a streamed artifact by its artifact id), so the same
message seen twice — in a stream and again in a task snapshot after a reconnection — is
shown once; what this client sends is shown when it is sent (``said``), under the id the
server keeps. An agent's answer that repeats a reply it streamed is folded into that reply.
A reply still being written when its turn ends was cut (a server restart, a failure): it is
marked interrupted. Every line the agent writes is labelled with the agent's name.

The harness's visible work (its step events, and the tokens the message that ends a turn
names) is no line of its own: each turn's is folded into one ``work`` line
(accord.chat._work) placed under the message that started the turn, live or from history.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from accord.chat import _a2ui as a2ui
from accord.chat._work import Work
from accord.harness import (
    CHANNEL_MEDIA_TYPE,
    EVENT_MEDIA_TYPE,
    STATUS_KEY,
    STEP_MEDIA_TYPE,
    TASK_KEY,
    calls_of,
    turn_of,
)
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

LineKind = Literal["message", "reply", "help", "notice", "work"]
TERMINAL = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
RUNNING = frozenset({TaskState.SUBMITTED, TaskState.WORKING})
# Where a help request names who it is for (the channel data's addressee).
ADDRESSEE_KEYS = ("to", "addressed_to", "participant_id", "recipient", "recipients")
# The harness names a help request's addressee and options beside its channel part.
HELP_KEY = "accord.harness/help"


@dataclass
class Line:
    key: str
    who: str
    text: str
    kind: LineKind = "message"
    for_me: bool = False  # a help request addressed to this participant
    done: bool = True  # False while a streamed reply is still being written
    interrupted: bool = False  # a reply whose turn ended before it was whole
    options: tuple[str, ...] = ()  # a help request's options, numbered for a quick pick
    work: Work | None = None  # a work line's turn (its text is the summary)


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


def step_of(message: Message) -> dict[str, Any] | None:
    """A step event's data (None: ``message`` is none — a step event is an agent's message
    holding one step data part)."""
    if message.role is not Role.AGENT or len(message.parts) != 1:
        return None
    part = message.parts[0]
    if part.media_type != STEP_MEDIA_TYPE or not isinstance(part.data, dict):
        return None
    return part.data


def sender(message: Message, agent: str) -> str:
    """Who a line is from: the agent's name for the agent's messages, else the participant
    the server names."""
    if message.role is Role.AGENT:
        return agent
    metadata = message.metadata
    if metadata is not UNSET and isinstance(metadata.get("participant_id"), str):
        return str(metadata["participant_id"])
    return "user"


def help_line_text(message: Message, data: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A help request once: who asks whom what (its channel part; the text part the harness
    adds for clients that show text says the same), and its options."""
    about = message.metadata.get(HELP_KEY) if message.metadata is not UNSET else None
    about = about if isinstance(about, dict) else {}
    options = about.get("options")
    options = tuple(str(o) for o in options) if isinstance(options, list) else ()
    to = addressees(data) or addressees(about)
    target = f" to {', '.join(to)}" if to else ""
    text = f"[help request{target} from {data.get('sender', '?')}] {data.get('text', '')}"
    numbered = "\n".join(f"  {n}. {option}" for n, option in enumerate(options, 1))
    return (f"{text}\n{numbered}" if numbered else text), options


@dataclass
class Conversation:
    me: str  # the participant this client speaks as ("" when the server says who)
    task_id: str = ""
    agent: str = "agent"  # the agent's name (its card's), the label of what it writes
    state: TaskState | None = None
    sub_state: str = ""
    is_conversation: bool = False  # a harness conversation (else: a task per message)
    lines: dict[str, Line] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)  # message ids shown (or folded into a reply)
    ui: a2ui.Surfaces = field(default_factory=a2ui.Surfaces)  # the task's A2UI surfaces
    _folded: set[str] = field(default_factory=set)  # replies an answer message was folded into
    open_request: Line | None = None  # the newest help request to this participant, unanswered

    # --- what this client sends --------------------------------------------------------------

    def said(self, message: Message, shown: str = "") -> list[Line]:
        """A message this client sends, shown as it is sent (as ``shown`` when given: a
        command typed for an envelope); the server's copy, with the same id, is then not
        shown again."""
        lines = self._message(message, who=self.me or "you")
        self.open_request = None  # (what this participant says next answers it)
        for line in lines:
            line.text = shown or line.text
        return lines

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
        self.is_conversation = self.is_conversation or (
            isinstance(task.metadata, dict) and TASK_KEY in task.metadata
        )
        self._state(task.status.state, task.metadata)
        running = self.running
        changed: list[Line] = []
        # The artifacts as written so far (the stream appends to them); each is shown where
        # the answer message that repeats it stands in the history, the others after it.
        pending = {artifact.artifact_id: artifact for artifact in task.artifacts}
        newest = task.artifacts[-1].artifact_id if task.artifacts else ""

        def show(artifact_id: str) -> None:
            artifact = pending.pop(artifact_id)
            update = TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=artifact
            )
            old = self.lines.get(f"artifact:{artifact_id}")
            written = "".join(part_text(part) for part in artifact.parts)
            if old is not None and old.done:
                done = True
            elif old is not None and old.text == written:
                done = False  # it did not go on: the turn's end tells whether it was cut
            else:
                done = not running or artifact_id != newest
            changed.extend(self._artifact(update, done=done))

        for message in task.history:
            if message.role is Role.AGENT and message.message_id not in self._seen:
                text = message.text()
                for artifact_id, artifact in list(pending.items()):
                    if f"artifact:{artifact_id}" in self._folded:
                        continue  # (an earlier answer's)
                    if text and "".join(part_text(p) for p in artifact.parts) == text:
                        show(artifact_id)
                        break
            changed += self._message(message)
        for artifact_id in list(pending):
            show(artifact_id)
        if not running:
            changed += self._end_turn()
        return changed

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    def _end_turn(self) -> list[Line]:
        """The turn ended: a reply still being written was cut."""
        cut = [line for line in self.lines.values() if not line.done]
        for line in cut:
            line.done = True
            line.interrupted = True
        return cut

    def reset(self) -> None:
        """A new conversation (or task): the next message starts it."""
        self.task_id = ""
        self.state = None
        self.sub_state = ""
        self.open_request = None
        self.ui = a2ui.Surfaces()  # (the surfaces were the last task's)

    def _state(self, state: object, metadata: dict[str, Any] | Any) -> None:
        if isinstance(state, TaskState):
            self.state = state
        status = metadata.get(STATUS_KEY) if isinstance(metadata, dict) else None
        value = status.get("sub_state") if isinstance(status, dict) else None
        self.sub_state = value if isinstance(value, str) else ""

    def _status(self, update: TaskStatusUpdateEvent) -> list[Line]:
        self.task_id = self.task_id or update.task_id
        self._state(update.status.state, update.metadata)
        message = update.status.message
        changed = self._message(message) if isinstance(message, Message) else []
        if not self.running:
            changed += self._end_turn()
        return changed

    def _message(self, message: Message, who: str = "") -> list[Line]:
        if message.message_id in self._seen:
            return []
        self._seen.add(message.message_id)
        step = step_of(message)
        if step is not None:  # the turn's work, folded into its line
            turn = step.get("turn")
            line, work = self._work(turn if isinstance(turn, str) else "")
            work.see_step(step)
            line.text = work.summary()
            return [line]
        worked = self._used(message) if message.role is Role.AGENT else []
        if message.role is Role.AGENT and self._fold(message.text()):
            return worked  # the reply streamed already; the answer message repeats it
        help_parts = [
            p.data
            for p in message.parts
            if p.media_type == CHANNEL_MEDIA_TYPE
            and isinstance(p.data, dict)
            and p.data.get("kind") == "help_request"
        ]
        kind: LineKind = "message"
        options: tuple[str, ...] = ()
        for_me = False
        if help_parts:
            kind = "help"
            text, options = help_line_text(message, help_parts[0])
            about = message.metadata.get(HELP_KEY) if message.metadata is not UNSET else None
            to = [*addressees(help_parts[0]), *addressees(about)]
            for_me = bool(self.me) and self.me in to
        else:
            if message.role is Role.AGENT:
                kind = "reply"
            text = "\n".join(part_text(part) for part in message.parts)
        line = Line(message.message_id, who or sender(message, self.agent), text, kind, for_me)
        line.options = options
        if for_me:
            self.open_request = line
        self.lines[line.key] = line
        return [*worked, line]

    def _work(self, turn: str) -> tuple[Line, Work]:
        """The work line of ``turn`` and its work: under the message that started it (when
        shown), else last."""
        key = f"work:{turn}"
        line = self.lines.get(key)
        if line is not None and line.work is not None:
            return line, line.work
        work = Work(turn)
        line = Line(key, "", "", "work", work=work)
        if turn not in self.lines:
            self.lines[key] = line
            return line, work
        keys = list(self.lines)
        at = keys.index(turn) + 1
        self.lines = {
            **{k: self.lines[k] for k in keys[:at]},
            key: line,
            **{k: self.lines[k] for k in keys[at:]},
        }
        return line, work

    def _used(self, message: Message) -> list[Line]:
        """The work lines the tokens ``message`` names (the model calls of its turn's
        stretch) changed."""
        changed: list[Line] = []
        calls = calls_of(message.metadata if message.metadata is not UNSET else None)
        turns = dict.fromkeys(turn_of(name) for name in calls)
        for turn in [turn for turn in turns if turn]:
            line, work = self._work(turn)
            if work.see_usage(calls) or not line.text:
                line.text = work.summary()
                changed.append(line)
        return changed

    def _fold(self, text: str) -> bool:
        """Whether an answer message saying ``text`` repeats a streamed reply (each reply
        takes one answer)."""
        if not text:
            return False
        for key, line in self.lines.items():
            if key.startswith("artifact:") and key not in self._folded and line.text == text:
                self._folded.add(key)
                return True
        return False

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
            line = self.lines[key] = Line(key, self.agent, "", "reply")
        line.text = line.text + text if update.append else text
        line.done = update.last_chunk if done is None else done
        if not line.done:
            line.interrupted = False  # (it goes on)
        return [line]

    def notice(self, text: str) -> Line:
        line = Line(f"notice:{uuid.uuid4().hex}", "", text, "notice")
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
            if not self.is_conversation:
                return "ended: say something for a new task"
            return "ended: Ctrl+N or /new for a new conversation"
        if state is TaskState.INPUT_REQUIRED:
            if self.sub_state == "awaiting-answer":
                return "your answer is awaited" if self.waiting_on_me else "awaiting an answer"
            return "your turn"
        if state is TaskState.AUTH_REQUIRED:
            return "authentication required"
        return "the agent's turn"

    @property
    def waiting_on_me(self) -> bool:
        """Whether a help request to this participant waits for their answer."""
        return (
            self.open_request is not None
            and self.state is TaskState.INPUT_REQUIRED
            and self.sub_state == "awaiting-answer"
        )

    @property
    def header(self) -> str:
        state = state_name(self.state) if self.state is not None else "new"
        shown = f"{state} · {self.sub_state}" if self.sub_state else state
        return f"{shown} — {self.turn}"
