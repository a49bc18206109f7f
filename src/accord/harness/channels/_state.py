"""A task's channels and help requests: harness state in the task's metadata.

Everything lives under ``Task.metadata["accord.harness/channels"]`` (accord's own key: the
tiny-harness task extension is a closed shape its clients parse strictly, so a field added
to it would break them)::

    {"channels": [{"channel_id": "ops", "members": ["alice", "bob"]}],
     "requests": [{"id": "<task>:help:7", "channel_id": "<task>", "to": "bob",
                   "question": "Which venue?", "options": ["A", "B"], "answered_by": null}]}

The default channel is not listed: its id is the task's id and its members are the task's
participants. A further channel's members are those it lists that are still participants
(who leaves the task leaves its channels). A help request is open until a reply from its
addressee answers it (``answered_by``: that reply's message id), or while its addressee is
still a participant.
"""

from __future__ import annotations

from typing import Any

import msgspec

from accord.harness._wire import TaskExtension
from accord.wire import UNSET, Task, invalid_params

CHANNELS_KEY = "accord.harness/channels"
# The field of a task envelope's payload that sets a task's further channels (admin only).
CHANNELS_FIELD = "channels"
MAX_CHANNELS = 64
MAX_REQUESTS = 256  # requests kept per task (the oldest answered ones go first)
MAX_ID_LENGTH = 256


class Channel(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    channel_id: str
    members: tuple[str, ...] = ()


class HelpRequest(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A question the harness asked one participant: ``id`` is the id of the message that
    carries it."""

    id: str
    channel_id: str
    to: str
    question: str
    options: tuple[str, ...] = ()
    answered_by: str | None = None
    # A sub-task's question relayed (``<child>#<its question's id>``): its answer goes to
    # the child and starts no turn here.
    relay: str | None = None


class ChannelState(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    channels: tuple[Channel, ...] = ()
    requests: tuple[HelpRequest, ...] = ()

    def channel(self, channel_id: str) -> Channel | None:
        for channel in self.channels:
            if channel.channel_id == channel_id:
                return channel
        return None

    def request(self, request_id: str) -> HelpRequest | None:
        for request in self.requests:
            if request.id == request_id:
                return request
        return None

    def with_request(self, request: HelpRequest) -> ChannelState:
        kept = list(self.requests)
        while len(kept) >= MAX_REQUESTS:
            answered = [r for r in kept if r.answered_by is not None]
            kept.remove(answered[0] if answered else kept[0])
        return msgspec.structs.replace(self, requests=(*kept, request))

    def without_requests(self, request_ids: set[str]) -> ChannelState:
        kept = tuple(r for r in self.requests if r.id not in request_ids)
        return msgspec.structs.replace(self, requests=kept)

    def answered(self, request_id: str, by: str) -> ChannelState:
        requests = tuple(
            msgspec.structs.replace(r, answered_by=by) if r.id == request_id else r
            for r in self.requests
        )
        return msgspec.structs.replace(self, requests=requests)


EMPTY = ChannelState()


def state_of(task: Task) -> ChannelState:
    metadata = task.metadata
    if metadata is UNSET or CHANNELS_KEY not in metadata:
        return EMPTY
    return msgspec.convert(metadata[CHANNELS_KEY], ChannelState)


def metadata_with(metadata: Any, state: ChannelState) -> dict[str, Any]:
    """``metadata`` (a task's) with ``state`` in it (the key left out when there is none)."""
    base = dict(metadata) if isinstance(metadata, dict) else {}
    if state == EMPTY:
        base.pop(CHANNELS_KEY, None)
    else:
        base[CHANNELS_KEY] = msgspec.json.decode(msgspec.json.encode(state))
    return base


def members(task: Task, extension: TaskExtension, channel_id: str) -> frozenset[str] | None:
    """Who is in the channel (None: the task has no such channel)."""
    participants = frozenset(p.id for p in extension.participants)
    if channel_id == task.id:
        return participants
    channel = state_of(task).channel(channel_id)
    if channel is None:
        return None
    return participants.intersection(channel.members)


def open_requests(task: Task, extension: TaskExtension | None) -> list[HelpRequest]:
    """The help requests still waiting for their answer, oldest first."""
    if extension is None:
        return []
    participants = {p.id for p in extension.participants}
    return [
        request
        for request in state_of(task).requests
        if request.answered_by is None and request.to in participants
    ]


# --- channels set by a task envelope ---------------------------------------------------------


def channels_from(value: Any, field: str, task_id: str, extension: TaskExtension) -> ChannelState:
    """The channels a task envelope's ``channels`` field asks for (the whole list of the
    task's further channels: one it leaves out is closed), checked against ``extension``'s
    participants; InvalidParams naming the field."""
    if not isinstance(value, list):
        raise invalid_params(field, "expected an array of channels")
    if len(value) > MAX_CHANNELS:
        raise invalid_params(field, f"a task has at most {MAX_CHANNELS} further channels")
    participants = {p.id for p in extension.participants}
    channels: list[Channel] = []
    for index, item in enumerate(value):
        where = f"{field}[{index}]"
        try:
            channel = msgspec.convert(item, Channel)
        except msgspec.ValidationError as exc:
            problem, _, path = str(exc).partition(" - at `$")
            raise invalid_params(where + path.rstrip("`"), problem) from None
        if not _is_id(channel.channel_id):
            raise invalid_params(
                f"{where}.channel_id", f"a channel id is 1 to {MAX_ID_LENGTH} printable characters"
            )
        if channel.channel_id == task_id:
            raise invalid_params(
                f"{where}.channel_id", "the task's own id is its default channel, not listed"
            )
        if any(c.channel_id == channel.channel_id for c in channels):
            raise invalid_params(f"{where}.channel_id", "a channel is listed once")
        for position, member in enumerate(channel.members):
            if member not in participants:
                raise invalid_params(
                    f"{where}.members[{position}]", "a channel's members are task participants"
                )
        if len(set(channel.members)) != len(channel.members):
            raise invalid_params(f"{where}.members", "a member is listed once")
        channels.append(channel)
    return ChannelState(channels=tuple(channels))


def changed_by(
    metadata: Any, payload: dict[str, Any], field: str, task_id: str, extension: TaskExtension
) -> dict[str, Any] | None:
    """A task's ``metadata`` with the channels a task envelope's ``payload`` sets (checked
    against ``extension``, the task's after the envelope; ``field`` is the payload's place
    in the request); None when it sets none."""
    if CHANNELS_FIELD not in payload:
        return None
    where = f"{field}.{CHANNELS_FIELD}"
    asked = channels_from(payload[CHANNELS_FIELD], where, task_id, extension)
    stored = metadata.get(CHANNELS_KEY) if isinstance(metadata, dict) else None
    current = EMPTY if stored is None else msgspec.convert(stored, ChannelState)
    return metadata_with(metadata, with_channels(current, asked))


def with_channels(state: ChannelState, channels: ChannelState) -> ChannelState:
    """``state`` with the further channels of ``channels`` (its requests are kept)."""
    return msgspec.structs.replace(state, channels=channels.channels)


def _is_id(value: str) -> bool:
    return 0 < len(value) <= MAX_ID_LENGTH and value.isprintable()
