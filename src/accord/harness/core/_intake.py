"""Judging a message to the harness before anything of it is stored.

:func:`judge` takes the task the message continues (None for a new one), the message and its
sender, and either raises the refusal or says what the message is: the start of a new task
(:class:`Start`), the next message of one (:class:`Continue`), or a participant asking to
complete it (:class:`Complete`). A refused message changes nothing.

The rules (decision 007 and the tiny-harness task extension):

- a sender who is not a participant of the task gets exactly the error an unknown task id
  gets, so a task's existence never leaks;
- any participant may send ordinary messages and change the task's name, description and
  acceptance criteria; only an admin changes participants and roles; nobody but a trusted
  delegator sets the server-controlled fields (lifecycle, model, reasoning effort), and
  nobody the harness's own (parent and sub-tasks); every field set is checked as the
  harness's tools check it (accord.harness.core._fields);
- completion and cancel need a role other than watcher.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import msgspec

from accord.harness._wire import (
    ADMIN_FIELDS,
    HARNESS_FIELDS,
    OPEN_FIELDS,
    PARTICIPANT_METADATA,
    SERVER_FIELDS,
    Participant,
    Role,
    TaskExtension,
)
from accord.harness.channels._state import CHANNELS_FIELD
from accord.harness.core import _envelope as envelopes
from accord.harness.core._envelope import Envelope
from accord.harness.core._fields import FieldError, check_extension
from accord.harness.core._refusal import refusal
from accord.harness.core._state import extension_of
from accord.wire import UNSET, A2AError, ErrorKind, Message, Task, invalid_params, task_not_found

NAME_LENGTH = 60  # a task named after its first message takes this much of its first line
# The fields of a brief, each checked (a change checks those it sets)
BRIEF_FIELDS = (
    "name", "goal", "type", "description", "acceptance_criteria", "participants", "plan",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Policy:
    """What the judgement needs to know of the harness's settings."""

    agent_id: str
    # Who may brief a new task fully, server-controlled fields included: the harness itself
    # and the peers its operator trusts to delegate.
    delegators: frozenset[str] = frozenset()
    models: tuple[str, ...] = ()  # the models a task may run on (the /model allowlist)

    def trusts(self, sender: str) -> bool:
        return sender == self.agent_id or sender in self.delegators


@dataclass(frozen=True, slots=True)
class Start:
    """A new task: its extension, its first message as stored, and whether a turn runs now
    (a brief with nothing else in it makes a task that waits for its first message)."""

    extension: TaskExtension
    message: Message
    turn: bool = True


@dataclass(frozen=True, slots=True)
class Continue:
    """The next message of a task. ``extension`` is the task's after it (changed by a task
    envelope, or the same); ``notes`` are lines the model reads with the message."""

    extension: TaskExtension
    message: Message
    notes: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Complete:
    """A participant asks to complete the task."""

    requested_by: str
    message: Message


Judgement = Start | Continue | Complete


def judge(task: Task | None, message: Message, sender: str, policy: Policy) -> Judgement:
    """What ``message`` from ``sender`` is to ``task`` (None: it starts one); raises the
    refusal as the A2AError the client gets."""
    envelope = envelopes.find(message)
    stored = _signed(message, sender)
    if task is None:
        return _start(envelope, stored, sender, policy)
    extension = extension_of(task)
    if extension is None:
        raise A2AError(
            ErrorKind.UNSUPPORTED_OPERATION,
            f"task {task.id!r} is not a conversation of this harness",
            {"taskId": task.id},
        )
    role = extension.role_of(sender)
    if role is None:
        raise task_not_found(task.id)
    if envelope is None:
        return Continue(extension, stored)
    if envelope.kind == "control":
        refuse_watcher(role, "complete")
        return Complete(sender, stored)
    if envelope.kind == "task":
        changed = updated(extension, envelope, sender, role)
        note = f"[task updated by {sender}: {', '.join(sorted(envelope.payload))}]"
        return Continue(changed, stored, (note,))
    framed = json.dumps(envelope.payload, sort_keys=True)
    return Continue(extension, stored, (f"[{envelope.kind} from {sender}] {framed}",))


def refuse_watcher(role: Role, action: str) -> None:
    """Completion and cancel need a role other than watcher."""
    if role is Role.WATCHER:
        raise refusal(
            f"a watcher cannot {action} the task (it takes an assignee, reporter or admin)"
        )


def may_read(task: Task, reader: str | None) -> bool:
    """A harness task is seen only by its participants (a task the harness does not manage
    by whoever may see it otherwise)."""
    extension = extension_of(task)
    if extension is None:
        return True
    return reader is not None and extension.role_of(reader) is not None


# --- new tasks -----------------------------------------------------------------------------


def _start(envelope: Envelope | None, message: Message, sender: str, policy: Policy) -> Start:
    if envelope is None or envelope.kind in ("status_update", "artifact_update"):
        return Start(_named_after(message, sender, policy), message)
    if envelope.kind == "control":
        raise A2AError(
            ErrorKind.UNSUPPORTED_OPERATION, "a control needs an existing task (send taskId)"
        )
    extension = _briefed(envelope, sender, policy)
    return Start(extension, message, turn=len(message.parts) > 1)


def _named_after(message: Message, sender: str, policy: Policy) -> TaskExtension:
    text = message.text().strip()
    first = text.splitlines()[0] if text else "conversation"
    return TaskExtension(
        name=first[:NAME_LENGTH],
        goal=text or first,
        participants=(
            Participant(id=sender, kind="human", role=Role.REPORTER),
            Participant(id=policy.agent_id, kind="agent", role=Role.ASSIGNEE),
        ),
        lifecycle="conversation",
    )


def _briefed(envelope: Envelope, sender: str, policy: Policy) -> TaskExtension:
    """A new task's extension from its first message's task envelope."""
    payload = without_channels(envelope.payload)
    harness_set = sorted(name for name in HARNESS_FIELDS if payload.get(name))
    if harness_set:
        # (whoever sends it: a parent or a sub-task named here would be acted on as the
        # harness's own, a member's task attached to another member's conversation)
        raise invalid_params(
            f"{envelope.field}.payload.{harness_set[0]}",
            "set by the harness only: a task envelope cannot set "
            + ", ".join(harness_set)
            + " (the harness records the sub-tasks it makes)",
        )
    trusted = policy.trusts(sender)
    server_set = sorted(SERVER_FIELDS & set(payload))
    if server_set and not trusted:
        raise invalid_params(
            f"{envelope.field}.payload.{server_set[0]}",
            "set by the server only: a task envelope cannot set " + ", ".join(server_set),
        )
    extension = _convert(payload, envelope, BRIEF_FIELDS)
    if extension.model is not None and extension.model not in policy.models:
        raise invalid_params(
            f"{envelope.field}.payload.model", f"model {extension.model!r} is not selectable"
        )
    participants = list(extension.participants)
    if not any(p.role is Role.ASSIGNEE for p in participants):
        participants.append(Participant(id=policy.agent_id, kind="agent", role=Role.ASSIGNEE))
    if not any(p.id == sender for p in participants):
        participants.insert(0, Participant(id=sender, kind="human", role=Role.REPORTER))
    briefed = msgspec.structs.replace(
        extension,
        participants=tuple(participants),
        lifecycle=extension.lifecycle or "conversation",
    )
    _check(briefed, ("participants",), envelope)  # (with its sender and assignee)
    return briefed


# --- changes to a task ---------------------------------------------------------------------


def updated(extension: TaskExtension, envelope: Envelope, sender: str, role: Role) -> TaskExtension:
    payload = without_channels(envelope.payload)
    fields = set(payload)
    for name in sorted(fields - OPEN_FIELDS - ADMIN_FIELDS):
        server = name in SERVER_FIELDS or name in HARNESS_FIELDS
        reason = "is set by the server only" if server else "cannot change"
        raise invalid_params(f"{envelope.field}.payload.{name}", f"a task envelope {reason}")
    admin_only = fields & ADMIN_FIELDS or CHANNELS_FIELD in envelope.payload
    if admin_only and role is not Role.ADMIN:
        raise refusal(
            "only an admin of the task changes its participants, their roles and its channels"
        )
    merged = {**msgspec.to_builtins(extension), **payload}
    return _convert(merged, envelope, fields)


def without_channels(payload: dict[str, Any]) -> dict[str, Any]:
    """A task envelope's payload without accord's ``channels`` field (the task's channels
    are the harness's state, not part of the task extension: accord.harness.channels)."""
    if CHANNELS_FIELD not in payload:
        return payload
    return {name: value for name, value in payload.items() if name != CHANNELS_FIELD}


def _convert(data: dict[str, Any], envelope: Envelope, fields: Collection[str]) -> TaskExtension:
    """The task extension ``data`` describes, its ``fields`` checked as the tools check
    them (accord.harness.core._fields)."""
    try:
        extension = msgspec.convert(data, TaskExtension)
    except msgspec.ValidationError as exc:
        where, _, path = str(exc).partition(" - at `$")
        field = f"{envelope.field}.payload{path.rstrip('`')}"
        raise invalid_params(field, f"invalid task extension: {where}") from None
    _check(extension, fields, envelope)
    return extension


def _check(extension: TaskExtension, fields: Collection[str], envelope: Envelope) -> None:
    try:
        check_extension(extension, fields)
    except FieldError as exc:
        raise invalid_params(f"{envelope.field}.payload.{exc.field}", exc.reason) from None


def _signed(message: Message, sender: str) -> Message:
    """The message as stored: its metadata names its sender, as tiny-harness clients read."""
    metadata = dict(message.metadata) if message.metadata is not UNSET else {}
    if metadata.get(PARTICIPANT_METADATA) == sender:
        return message
    metadata[PARTICIPANT_METADATA] = sender
    return msgspec.structs.replace(message, metadata=metadata)
