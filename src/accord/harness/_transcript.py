"""What a model (or an author's turn function) sees of a conversation: the task's messages
as entries, each with its sender, and what the task is (its extension).

Everything is read from the task itself, so a turn after a restart, or on another node, sees
what the turn before it saw. Parts a model cannot read as text are described in one framed
line (an envelope's change, a data part, a file), never dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from accord.core import lifecycle
from accord.harness import a2ui
from accord.harness._step_events import STEP_MEDIA_TYPE, is_step
from accord.harness._untrusted import untrusted
from accord.harness._wire import COMMAND_METADATA, EVENT_MEDIA_TYPE, Effort, TaskExtension
from accord.harness.channels._judge import OWED_KEY, OWED_TURN
from accord.harness.channels._owed import owed
from accord.harness.channels._state import CHANNELS_KEY
from accord.harness.channels._transcript import ChannelView
from accord.harness.core import _envelope as envelopes
from accord.harness.core._delegation import TOLD_KEY
from accord.harness.core._identity import claimed
from accord.harness.core._state import ACCORD_PREFIX, MODEL_FAILURE_KEY, RECEIVED_KEY
from accord.wire import UNSET, A2AError, Message, Part, Role, Task, WireError, convert

# Message metadata the harness writes on each answer a model gave, numbered from 0: the
# count says how many model calls the task has made (a scripted model's position).
MODEL_CALL_KEY = "accord.harness/model_call"
# Task metadata a compaction writes: {"upto": n, "text": …}, the first n messages summarised.
SUMMARY_KEY = "accord.harness/summary"
SUMMARY_HEAD = "[summary of the conversation before this point] "
# Marks no model reads a message with; marks the plain path reads a message with as if it
# had none (accord.harness._usage.USAGE_KEY spelled out: that module imports the models,
# which import this one).
UNREAD_MARKS = frozenset({COMMAND_METADATA, RECEIVED_KEY, MODEL_FAILURE_KEY})
PLAIN_MARKS = frozenset({MODEL_CALL_KEY, ACCORD_PREFIX + "usage"})
DATA_PREVIEW = 2_000  # characters of a data part a model sees


@dataclass(frozen=True, slots=True)
class Image:
    """An image a participant sent (a file of the message), shown to the model as an image."""

    media_type: str
    data: bytes
    name: str = ""


@dataclass(frozen=True, slots=True)
class Entry:
    sender: str  # a participant id; the harness's own id for its answers
    role: Literal["user", "agent"]
    text: str
    position: int = -1  # its message's place in the task's history (-1: no message's)
    images: tuple[Image, ...] = ()  # the message's images (harness._media loads them)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: its name, what it does, its arguments' JSON schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""  # the model's id for the call (a tool result answers it by this id)


@dataclass(frozen=True, slots=True)
class ModelStep:
    """What the model answered earlier in this turn: text, and the tools it called."""

    text: str
    calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's answer to one call of this turn. Its content is untrusted text."""

    call_id: str
    name: str
    content: str
    error: bool = False


Step = ModelStep | ToolResult


@dataclass(frozen=True, slots=True)
class Conversation:
    """One turn's view of the conversation."""

    task: Task
    extension: TaskExtension
    agent_id: str
    entries: tuple[Entry, ...]
    model_calls: int  # model calls the task made before this one
    model: str = ""  # the task's model, or the harness's default
    reasoning_effort: Effort | None = None
    system_prompt: str = ""
    tools: tuple[ToolSpec, ...] = ()  # what the model may call in this turn
    steps: tuple[Step, ...] = ()  # this turn's model answers and tool results, in order

    @property
    def task_id(self) -> str:
        return self.task.id

    def asking(
        self, steps: tuple[Step, ...], tools: tuple[ToolSpec, ...], model_calls: int
    ) -> Conversation:
        """This view as one model step asks it: ``dataclasses.replace`` of these three
        fields, built directly (replace reads the fields' list and builds keyword arguments
        on every call: 2.4 times the cost, every model step of every turn)."""
        return Conversation(
            task=self.task,
            extension=self.extension,
            agent_id=self.agent_id,
            entries=self.entries,
            model_calls=model_calls,
            model=self.model,
            reasoning_effort=self.reasoning_effort,
            system_prompt=self.system_prompt,
            tools=tools,
            steps=steps,
        )

    @property
    def last(self) -> Entry | None:
        """The newest participant's message."""
        for entry in reversed(self.entries):
            if entry.role == "user":
                return entry
        return None

    @property
    def text(self) -> str:
        last = self.last
        return last.text if last is not None else ""

    @property
    def sender(self) -> str:
        last = self.last
        return last.sender if last is not None else ""


def entries(task: Task, agent_id: str, *, plain: bool = True) -> tuple[Entry, ...]:
    """The task's messages as the model sees them: without commands and their replies,
    without messages a hook refused (and the refusals' notes), with the messages a hook
    replaced as replaced.

    A conversation of plain text messages (most of them) is read on a shorter path with
    the same result (:func:`_plain_entries`); ``plain=False`` always takes the general one
    (the tests compare the two)."""
    if plain and (found := _plain_entries(task, agent_id)) is not None:
        return found
    return _entries(task, agent_id)


def _plain_entries(task: Task, agent_id: str) -> tuple[Entry, ...] | None:
    """:func:`_entries` of a conversation of plain text, on a shorter path: no hook ever
    judged a message of the task, it has no channel state, and each message the model reads
    is text parts only, marked (see :func:`_plain_read`) with nothing the general path reads
    it by. None: the task is not such, read it the general way."""
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    if RECEIVED_KEY in metadata or CHANNELS_KEY in metadata:
        return None
    parked = task.status.state in lifecycle.INTERRUPTED
    seen: list[Entry] = []
    history = task.history
    for index in range(max(_summary(metadata, agent_id, seen), 0), len(history)):
        message = history[index]
        read = _plain_read(message.metadata, parked)
        if read is None:
            return None
        if not read:
            continue
        agent = message.role is Role.AGENT
        texts: list[str] = []
        for part in message.parts:
            if agent and part.media_type == STEP_MEDIA_TYPE:
                break  # (a step event, visible work: for clients only)
            if not isinstance(part.text, str):
                return None
            texts.append(part.text)
        else:
            if agent:
                seen.append(_entry(agent_id, "agent", "".join(texts), index))
            else:
                text = "\n".join(text for text in texts if text)
                seen.append(_entry(claimed(message) or "unknown", "user", text, index))
    return tuple(seen)


_new = object.__new__
_set = object.__setattr__


def _entry(sender: str, role: Literal["user", "agent"], text: str, position: int) -> Entry:
    """``Entry(sender, role, text, position)`` without the frozen dataclass's ``__init__``
    (which looks ``object.__setattr__`` up again for each field: 1.6 times the cost, and
    the plain path builds an entry for every message of every turn). Entry has no
    ``__post_init__`` to skip (tests/harness/test_transcript_plain.py checks)."""
    entry = _new(Entry)
    _set(entry, "sender", sender)
    _set(entry, "role", role)
    _set(entry, "text", text)
    _set(entry, "position", position)
    _set(entry, "images", ())
    return entry


def _plain_read(marks: Any, parked: bool) -> bool | None:
    """Whether a model reads a message marked ``marks`` (its metadata), as far as the plain
    path can tell: the general path reads a message by its ``command`` and
    ``accord.harness/`` keys only (and ``participant_id``, its sender). False: a command, a
    command's reply, a refusal's note, a model's failure; True: no marks but a model call's
    number, its tokens, or a plain message's owed turn in a task not parked (owed no more:
    its turn runs); None: any other mark."""
    if not isinstance(marks, dict):
        return True
    for key in marks:
        if key in PLAIN_MARKS or not (
            key == COMMAND_METADATA or (isinstance(key, str) and key.startswith(ACCORD_PREFIX))
        ):
            continue  # (a key the general path does not read; a key not a string, built in Python)
        if key in UNREAD_MARKS:
            return False
        if key != OWED_KEY or parked or marks[key] != OWED_TURN:
            return None
    return True


def _summary(metadata: dict[str, Any], agent_id: str, seen: list[Entry]) -> int:
    """Where the messages a model reads start: after those a compaction summarised (their
    summary in ``seen``), or at the first."""
    summary = metadata.get(SUMMARY_KEY)
    if isinstance(summary, dict) and isinstance(summary.get("upto"), int):
        text = SUMMARY_HEAD + str(summary.get("text", ""))
        seen.append(Entry(agent_id, "agent", text))
        return int(summary["upto"])
    return 0


def _entries(task: Task, agent_id: str) -> tuple[Entry, ...]:
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    decided = metadata.get(RECEIVED_KEY)
    refused: set[str] = set()
    replaced: dict[str, Message] = {}
    if isinstance(decided, dict):  # (hooks judged messages: rare, so looked at apart)
        refused = {str(message_id) for message_id in decided.get("refused", ())}
        replaced = _replacements(decided.get("replaced"))
    channels = ChannelView(task, agent_id)  # (help requests, replies, channel messages)
    # Channel messages and replies the hooks have not judged yet (their handlers run): not
    # read before they are, nor ever once refused.
    unjudged = {message.message_id for message in owed(task)}
    seen: list[Entry] = []
    start = _summary(metadata, agent_id, seen)  # (a compaction: before it, its summary)
    for index, message in enumerate(task.history):
        if index < start:
            continue
        marks = message.metadata
        if isinstance(marks, dict) and not UNREAD_MARKS.isdisjoint(marks):
            continue  # a command, a command's reply, a refusal's note, a model's failure
        if is_step(message):
            continue  # visible work (accord.harness._step_events): for clients only
        if decided is not None and message.role is Role.USER:
            if message.message_id in refused:
                continue
            message = replaced.get(message.message_id, message)
        if channels.hidden(message) or message.message_id in unjudged:
            continue
        told = marks.get(TOLD_KEY) if isinstance(marks, dict) else None
        if isinstance(told, dict) and claimed(message) == agent_id:
            seen.append(Entry(agent_id, "user", _told(message, told), position=index))
            continue
        said = channels.text(message)
        if said is None:
            seen.append(entry(message, agent_id, first=index == 0, position=index))
        else:
            agent = message.role is Role.AGENT
            sender = agent_id if agent else claimed(message) or "unknown"
            seen.append(Entry(sender, "agent" if agent else "user", said, position=index))
    return tuple(seen)


def _told(message: Message, told: dict[str, Any]) -> str:
    """A sub-task's end as its parent's model reads it: the heading, and the sub-task's
    result as untrusted text (another agent, a participant or a model wrote it)."""
    texts = [part.text for part in message.parts if isinstance(part.text, str)]
    head, result = (texts[0].rstrip(), "".join(texts[1:])) if texts else ("", "")
    source = f"sub-task:{told.get('task_id', '')}"
    return f"{head}\nIts result:\n{untrusted(source, result)}"


def _replacements(recorded: Any) -> dict[str, Message]:
    found: dict[str, Message] = {}
    if not isinstance(recorded, dict):
        return found
    for message_id, replacement in recorded.items():
        try:
            found[str(message_id)] = convert(replacement, Message)
        except WireError:
            continue  # (only the harness writes these; nothing stored is malformed)
    return found


def model_calls(task: Task) -> int:
    """How many model calls the task made: each answer carries the number of the call that
    gave it (the turn's tool steps before it had the numbers in between)."""
    numbers = [
        message.metadata[MODEL_CALL_KEY]
        for message in task.history
        if isinstance(message.metadata, dict)
        and isinstance(message.metadata.get(MODEL_CALL_KEY), int)
    ]
    return max(numbers) + 1 if numbers else 0


def entry(message: Message, agent_id: str, *, first: bool = False, position: int = -1) -> Entry:
    """A message as a model reads it (``position``: its place in the task's history). The
    first message's task envelope is the brief the task was made from (the extension), not a
    change: it is not repeated."""
    if message.role is Role.AGENT:
        return Entry(agent_id, "agent", message.text(), position)
    sender = claimed(message) or "unknown"
    lines = [_describe(part, index, sender, first) for index, part in enumerate(message.parts)]
    return Entry(sender, "user", "\n".join(line for line in lines if line), position)


def _describe(part: Part, index: int, sender: str, first: bool) -> str:
    if isinstance(part.text, str):
        return part.text
    if (action := a2ui.describe(part, sender)) is not None:
        return action
    if part.media_type == EVENT_MEDIA_TYPE:
        return "" if first else _describe_envelope(part.data, index, sender)
    if part.data is not UNSET:
        return f"[data from {sender}] {_preview(part.data)}"
    name = part.filename or "file"
    kind = f", {part.media_type}" if part.media_type else ""
    where = f", at {part.url}" if isinstance(part.url, str) else ""
    return f"[file {name} from {sender}{kind}{where}]"


def _describe_envelope(data: Any, index: int, sender: str) -> str:
    try:
        found = envelopes.parse(data, index)
    except A2AError:
        return ""  # (intake refused malformed envelopes; nothing stored has one)
    if found.kind == "control":
        return f"[{sender} asked to {found.action} the task]"
    if found.kind == "task":
        return f"[task updated by {sender}: {', '.join(sorted(found.payload))}]"
    return f"[{found.kind} from {sender}] {_preview(found.payload)}"


def _preview(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= DATA_PREVIEW else text[:DATA_PREVIEW] + "…"
