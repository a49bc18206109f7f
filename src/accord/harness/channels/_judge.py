"""Judging a participant's channel message (or plain reply) before anything of it is stored.

:func:`judge` runs in the harness's intake, after the sender is known to be a participant of
the task (a stranger got the unknown-task error already). It checks the channel part against
the schema, then the boundary — a channel the task does not have and a channel the sender is
not in get exactly the unknown-task error the task's strangers get —, then that the part's
``sender`` is the sender. It says what the message does:

- a ``help_reply`` from the addressee of an open help request (``in_reply_to`` names it, or,
  without one, the sender's oldest open request) answers it and **resumes** the task; a
  plain message (no channel part) from a participant with an open request addressed to them
  is that answer too, as tiny-harness clients send it;
- a ``help_reply`` that answers nothing (to another participant's request, to one answered
  already, to no request of this task) is recorded without resuming, and its sender is told;
- any other channel message starts a turn when it is on the default channel (the task's own
  id) and the harness is in it, and only then.

The message as stored is marked as owed its handling (:data:`OWED_KEY`): the hooks, then
its relay and deliveries, the help request it answers, the turn it starts, are done once,
by its handler or — after a crash cut that short — by the scan of a restarted process
(:mod:`accord.harness.channels._owed`). The agent participants it is to be delivered to (its
channel's members on the agent roster, but its sender and the harness itself) are named by
its relay (:data:`DELIVER_KEY`), once the hooks let it through: a refused message is
delivered to nobody.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import msgspec

from accord.harness._wire import CHANNEL_MEDIA_TYPE, EVENT_MEDIA_TYPE, TaskExtension
from accord.harness.channels import _data as channel_data
from accord.harness.channels._data import ChannelData
from accord.harness.channels._state import (
    CHANNELS_KEY,
    HelpRequest,
    members,
    open_requests,
    state_of,
)
from accord.wire import (
    A2AError,
    ErrorKind,
    FieldViolation,
    Message,
    Task,
    invalid_params,
    task_not_found,
)

# Message metadata: the agent participants a stored channel message goes to (the outbox
# delivers it to each, once).
DELIVER_KEY = "accord.harness/deliver_to"
# Message metadata of a participant's message the harness owes its handling (a channel
# message, a reply): stored with the message, in the same append.
OWED_KEY = "accord.harness/owed"
# OWED_KEY's value on a participant's plain message to a parked conversation: owed its turn
OWED_TURN = "turn"


@dataclass(frozen=True, slots=True)
class Judged:
    """What a participant's message does on the task's channels.

    ``data`` is its channel part (None: a plain reply), ``message`` the message as stored,
    ``answers`` the help request it answers (resuming the task), ``turn`` whether a turn
    runs on it, ``told`` why a reply is recorded without resuming ("" when it is not), and
    ``received`` whether the harness is in its channel (it then hears of it), ``recipients``
    the agent participants its relay is delivered to."""

    data: ChannelData | None
    message: Message
    answers: HelpRequest | None = None
    turn: bool = False
    told: str = ""
    received: bool = True
    recipients: tuple[str, ...] = ()


def judge(
    task: Task | None,
    extension: TaskExtension | None,
    message: Message,
    sender: str,
    *,
    agent_id: str,
    roster: Collection[str],
) -> Judged | None:
    """What ``message`` from ``sender`` does on ``task``'s channels; None when it is no
    channel message and answers nothing. Raises the refusal."""
    found = channel_data.find(message)
    if found is None:
        if task is None or extension is None or _has_envelope(message):
            return None
        waiting = [r for r in open_requests(task, extension) if r.to == sender]
        if not waiting:
            return None
        return Judged(None, owed(message), answers=waiting[0], turn=True)
    data, index = found
    if _has_envelope(message):
        raise invalid_params(
            f"message.parts[{index}]", "a channel message carries no event envelope"
        )
    if task is None or extension is None:  # (a channel is a task's: there is none yet)
        raise task_not_found(data.channel_id)
    channel_members = members(task, extension, data.channel_id)
    if channel_members is None or sender not in channel_members:
        raise task_not_found(task.id)  # the boundary: as if the task did not exist
    if data.sender != sender:
        field = f"message.parts[{index}].data.sender"
        description = f"names {data.sender!r}, but the message comes from {sender!r}"
        raise A2AError(
            ErrorKind.PERMISSION_DENIED,
            f"{field}: {description}",
            violations=[FieldViolation(field, description)],
        )
    recipients = tuple(sorted((channel_members & set(roster)) - {sender, agent_id}))
    stored = owed(message)
    received = agent_id in channel_members
    if data.kind == "help_reply":
        request, told = _answered(task, extension, data, sender)
        if request is not None:
            return Judged(data, stored, request, received, received=received, recipients=recipients)
        return Judged(data, stored, told=told, received=received, recipients=recipients)
    turn = received and data.channel_id == task.id
    return Judged(data, stored, turn=turn, received=received, recipients=recipients)


def _answered(
    task: Task, extension: TaskExtension, data: ChannelData, sender: str
) -> tuple[HelpRequest | None, str]:
    """The open request a help reply answers, or why it answers none."""
    if data.in_reply_to is None:
        waiting = [r for r in open_requests(task, extension) if r.to == sender]
        if waiting:
            return waiting[0], ""
        return None, "no help request is waiting for your answer; your reply is recorded"
    request = state_of(task).request(data.in_reply_to)
    if request is None:
        return None, f"no help request {data.in_reply_to} on this task; your reply is recorded"
    if request.to != sender:
        return None, (
            f"the help request {request.id} was addressed to {request.to}; your reply is recorded"
        )
    if request.answered_by is not None:
        return None, f"the help request {request.id} was answered already; your reply is recorded"
    return request, ""


def concerns_channels(task: Task | None, message: Message) -> bool:
    """Whether :func:`judge` may have something to say: the message has a channel part, or
    the task has help requests it may answer."""
    if any(part.media_type == CHANNEL_MEDIA_TYPE for part in message.parts):
        return True
    metadata = task.metadata if task is not None else None
    return isinstance(metadata, dict) and bool(metadata.get(CHANNELS_KEY, {}).get("requests"))


def _has_envelope(message: Message) -> bool:
    return any(part.media_type == EVENT_MEDIA_TYPE for part in message.parts)


def owed(message: Message, mark: bool | str = True) -> Message:
    """``message`` as stored: marked as owed its handling (``mark``; :data:`OWED_TURN`: a
    plain message owed its turn), and naming no recipients (only the harness's own
    messages do)."""
    metadata = dict(message.metadata) if isinstance(message.metadata, dict) else {}
    metadata.pop(DELIVER_KEY, None)
    metadata[OWED_KEY] = mark
    return msgspec.structs.replace(message, metadata=metadata)
