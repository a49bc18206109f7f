"""A command's answer as the task's events (pure): the changes a result asks for, checked,
and the reply.

The reply is a status update in the task's unchanged state (a new conversation's first
message parks it awaiting the next one), its message an agent message with metadata
``{"command": name}`` plus ``task_ref`` when the command created a task; a change to the
task follows as a task snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

import msgspec

from accord.core import Outcome, TaskRecord
from accord.harness._wire import COMMAND_METADATA, TASK_REF_METADATA, Effort, TaskExtension
from accord.harness.core import _conversation as conversation
from accord.harness.core._state import extension_of
from accord.harness.hooks._operations import CommandSettings
from accord.wire import Message, Part, Role

Change = Callable[[TaskExtension], TaskExtension]


def settings_change(settings: CommandSettings, selectable: tuple[str, ...]) -> Change:
    """The change ``settings`` asks for; ValueError when it asks for what may not be (a model
    outside the allowlist, an effort that is none), whoever answered the command."""
    if settings.model is not None and settings.model not in selectable:
        raise ValueError(
            f"model {settings.model!r} is not selectable (selectable: {', '.join(selectable)})"
        )
    efforts = get_args(Effort)
    if settings.reasoning_effort is not None and settings.reasoning_effort not in efforts:
        raise ValueError(f"effort is one of {', '.join(efforts)}")
    updates = {
        key: value
        for key, value in (
            ("model", settings.model),
            ("reasoning_effort", settings.reasoning_effort),
        )
        if value is not None
    }

    def change(extension: TaskExtension) -> TaskExtension:
        return msgspec.structs.replace(extension, **updates)

    return change


def answer(
    record: TaskRecord | None,
    now_ms: int,
    text: str,
    command: str,
    task_ref: str | None = None,
    change: Change | None = None,
) -> Outcome:
    """The reply, and the change made to the task's extension as it stands now."""
    extension = extension_of(record.task) if record is not None else None
    changed = change(extension) if change is not None and extension is not None else None
    return conversation.say(
        record,
        now_ms,
        reply(record, text, command, task_ref),
        changed if changed != extension else None,
    )


def reply(record: TaskRecord | None, text: str, command: str, task_ref: str | None) -> Message:
    """The reply's message: its id is the task's log position (``<task>:command:<seq>``)."""
    task_id = record.task.id if record is not None else ""
    seq = record.seq + 1 if record is not None else 0
    metadata = {COMMAND_METADATA: command}
    if task_ref is not None:
        metadata[TASK_REF_METADATA] = task_ref
    return Message(
        message_id=f"{task_id}:command:{seq}",
        role=Role.AGENT,
        parts=[Part(text=text)],
        metadata=dict(metadata),
    )
