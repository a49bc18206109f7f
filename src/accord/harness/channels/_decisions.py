"""The harness's channel moves as decisions on a task (pure: the record and the time in, an
:class:`~accord.core._outcome.Outcome` out).

Every channel message reaches the task's streams (SubscribeToTask, push, the streams of the
requests that follow the task) as the message of a status update: a participant's as a
**relay** (the harness's status message repeating it, with its channel part), the harness's
own (a help request, a message it sends) as itself. Relays, and what a sender is told about
a reply that answers nothing, carry :data:`NOTE_KEY` so that the model never reads them
(it reads the participant's message itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from accord.core import Outcome, TaskRecord, refused
from accord.core import agent as moves
from accord.harness._wire import CHANNEL_MEDIA_TYPE, STATUS_KEY, SubState, status_data
from accord.harness.channels._data import ChannelData
from accord.harness.channels._judge import DELIVER_KEY, Judged
from accord.harness.channels._state import ChannelState, HelpRequest, metadata_with, state_of
from accord.harness.core import _conversation as conversation
from accord.harness.core._conversation import Decision
from accord.wire import Message, Part, Role, TaskState, task_not_found

# Status-message metadata: a relay of a participant's channel message ({"relay": its id})
# or what its sender is told ({"told": its id}); the model reads neither.
NOTE_KEY = "accord.harness/channel_note"
# Help request message metadata: whom it asks, and the options it offers.
HELP_KEY = "accord.harness/help"


def relay_message(record: TaskRecord, judged: Judged, sender: str) -> Message:
    """A participant's channel message as the harness's status message repeats it: a line
    saying who said what where, then the message's parts (its channel part among them). It
    names the agent participants it is delivered to (:data:`DELIVER_KEY`): what the outbox
    sends them is the relay, once the hooks let the message through."""
    data = judged.data
    assert data is not None
    where = "" if data.channel_id == record.task.id else f"[{data.channel_id}] "
    metadata: dict[str, Any] = {NOTE_KEY: {"relay": judged.message.message_id}}
    if judged.recipients:
        metadata[DELIVER_KEY] = list(judged.recipients)
    parts = [  # (the channel part as the schema reads it, its defaults filled in)
        data.as_part() if part.media_type == CHANNEL_MEDIA_TYPE else part
        for part in judged.message.parts
    ]
    return Message(
        message_id=f"{record.task.id}:channel:{record.seq + 1}",
        role=Role.AGENT,
        parts=[Part(text=f"{where}{sender}: {data.content_text}"), *parts],
        metadata=metadata,
    )


def received(
    record: TaskRecord | None,
    now_ms: int,
    judged: Judged,
    sender: str,
    turn: bool,
    answered: str | None = None,
    told: str = "",
    relayed: bool = False,
) -> Outcome:
    """A participant's message on a channel, after the harness judged it: relayed on the
    task's streams (as the turn's WORKING status message when ``turn``), the help request
    it ``answered`` marked so, and what its sender is ``told`` said to them. A request that
    ``relayed`` a sub-task's question is answered without a turn: the task parks again on
    what it now waits for, saying where the answer goes."""
    if record is None:
        return _gone()
    steps: list[Decision] = []
    if judged.data is not None:
        relay = relay_message(record, judged, sender)
        if turn:
            steps.append(partial(_work, message=relay))
        else:
            steps.append(partial(conversation.say, message=relay))
    elif turn:
        steps.append(_work)
    if answered is not None:
        steps.append(partial(_answered, request_id=answered, by=judged.message.message_id))
        if relayed:
            steps.append(
                partial(_passed_on, request_id=answered, message_id=judged.message.message_id)
            )
    if told:
        steps.append(partial(tell, message_id=judged.message.message_id, text=told))
    return conversation.chain(record, now_ms, tuple(steps))


def tell(record: TaskRecord | None, now_ms: int, message_id: str, text: str) -> Outcome:
    """A note to the sender of ``message_id`` in the task's unchanged state."""
    seq = record.seq + 1 if record is not None else 0
    task_id = record.task.id if record is not None else ""
    note = Message(
        message_id=f"{task_id}:status:{seq}",
        role=Role.AGENT,
        parts=[Part(text=text)],
        metadata={NOTE_KEY: {"told": message_id}},
    )
    return conversation.say(record, now_ms, note)


def _passed_on(record: TaskRecord | None, now_ms: int, request_id: str, message_id: str) -> Outcome:
    """The answer to a relayed question goes on to the sub-task that asked: the task, still
    interrupted, now waits for whatever else it waits for."""
    request = state_of(record.task).request(request_id) if record is not None else None
    child = (request.relay or "").partition("#")[0] if request is not None else ""
    return reparked(record, now_ms, f"The answer goes to sub-task {child}.", {"told": message_id})


def reparked(
    record: TaskRecord | None, now_ms: int, text: str, note: dict[str, str] | None = None
) -> Outcome:
    """A note in the task's interrupted state, with the sub-state of what it waits for now
    (a help request answered or withdrawn, say); a task not interrupted is left as it is."""
    if record is None or record.state not in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
        return Outcome("unchanged", record=record)
    message = Message(
        message_id=f"{record.task.id}:status:{record.seq + 1}",
        role=Role.AGENT,
        parts=[Part(text=text)],
        metadata={NOTE_KEY: note} if note else {},
    )
    metadata = {STATUS_KEY: status_data(conversation.waiting_for(record))}
    return moves.note(record, now_ms, message, metadata=metadata)


def withdrawn(record: TaskRecord | None, now_ms: int, request_ids: set[str], text: str) -> Outcome:
    """Help requests no longer asked (a sub-task's question that went away) taken out, the
    task parked again on what it now waits for."""
    if record is None:
        return _gone()
    state = state_of(record.task).without_requests(request_ids)
    return conversation.chain(
        record, now_ms, (partial(with_state, state=state), partial(reparked, text=text))
    )


def _work(record: TaskRecord | None, now_ms: int, message: Message | None = None) -> Outcome:
    """WORKING (again, when a turn runs already), with ``message`` as its status message."""
    if record is not None and record.state is TaskState.WORKING and message is None:
        return Outcome("unchanged", record=record)
    return moves.move(record, "work", now_ms, message)


def _answered(record: TaskRecord | None, now_ms: int, request_id: str, by: str) -> Outcome:
    if record is None:
        return _gone()
    state = state_of(record.task).answered(request_id, by)
    return with_state(record, now_ms, state)


def with_state(record: TaskRecord | None, now_ms: int, state: ChannelState) -> Outcome:
    """The task's metadata with its channel ``state``, as a task snapshot."""
    metadata = record.task.metadata if record is not None else None
    return moves.set_metadata(record, metadata_with(metadata, state), now_ms)


# --- what the harness sends ----------------------------------------------------------------


def help_request_id(record: TaskRecord) -> str:
    return f"{record.task.id}:help:{record.seq + 1}"


def help_message(
    request: HelpRequest,
    sender: str,
    recipients: Sequence[str],
    metadata: dict[str, Any] | None = None,
) -> Message:
    """The help request as its message: the question as text (addressed, with the options),
    and the channel part (``kind`` help_request, ``text`` the question); its metadata names
    the addressee (:data:`HELP_KEY`)."""
    text = f"@{request.to} {request.question}"
    if request.options:
        text += "\nOptions: " + ", ".join(request.options)
    data = ChannelData(
        channel_id=request.channel_id, sender=sender, kind="help_request", text=request.question
    )
    marks: dict[str, Any] = {**(metadata or {})}
    marks[HELP_KEY] = {"to": request.to, "options": list(request.options)}
    if recipients:
        marks[DELIVER_KEY] = list(recipients)
    return Message(
        message_id=request.id,
        role=Role.AGENT,
        parts=[Part(text=text), data.as_part()],
        metadata=marks,
    )


def ask(record: TaskRecord | None, now_ms: int, request: HelpRequest, message: Message) -> Outcome:
    """The help request recorded in the task's channel state, then sent as the status
    message of INPUT_REQUIRED (``awaiting-answer``): the turn that asked is over. A task
    parked already (a second question of the same turn) keeps its state: the request is a
    status update of its own."""
    if record is None:
        return _gone()
    state = state_of(record.task).with_request(request)
    recorded = partial(with_state, state=state)
    awaiting = SubState.AWAITING_ANSWER.value
    if record.state is not TaskState.INPUT_REQUIRED:
        parked = partial(conversation.park, message=message, sub_state=awaiting)
        return conversation.chain(record, now_ms, (recorded, parked))
    metadata = {STATUS_KEY: status_data(awaiting)}
    note = partial(_note, message=message, metadata=metadata)
    return conversation.chain(record, now_ms, (recorded, note))


def send(record: TaskRecord | None, now_ms: int, message: Message) -> Outcome:
    """A channel message of the harness's, as a status update in the task's state."""
    return conversation.say(record, now_ms, message)


def _note(
    record: TaskRecord | None, now_ms: int, message: Message, metadata: dict[str, Any] | None
) -> Outcome:
    return moves.note(record, now_ms, message, metadata=metadata)


def _gone() -> Outcome:
    """The refusal of a move on a task that is not there (deleted meanwhile)."""
    return refused("not-found", task_not_found(""))
