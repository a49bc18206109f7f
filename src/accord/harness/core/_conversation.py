"""A conversation's moves as the task's events: a turn starts, a turn parks the task, a
participant completes it.

A conversation never completes by itself: each turn ends in INPUT_REQUIRED with the status
extension's sub-state (``awaiting-next-message``, or ``awaiting-answer`` while a question to a
participant is pending) in the status update's metadata, which the fold mirrors into
``Task.metadata`` until the task leaves INPUT_REQUIRED. A delegated task completes when its
turn ends. Every function is pure: the task's record and the time in, an
:class:`~accord.core._outcome.Outcome` out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any

from accord.core import Event, Outcome, Published, TaskRecord, lifecycle
from accord.core import agent as moves
from accord.harness._wire import STATUS_KEY, SubState, TaskExtension, TaskRef, status_data
from accord.harness.channels._state import open_requests
from accord.harness.core import _subtasks as subtasks
from accord.harness.core._delegation import ended_with, waits_for_children
from accord.harness.core._state import extension_of, metadata_with, sub_state_of
from accord.wire import UNSET, Message, Part, Role, TaskState

Decision = Callable[[TaskRecord | None, int], Outcome]


def start_turn(record: TaskRecord | None, now_ms: int) -> Outcome:
    """WORKING: the harness works on the task's newest messages."""
    return moves.move(record, "work", now_ms)


def park(
    record: TaskRecord | None,
    now_ms: int,
    message: Message | str | None = None,
    sub_state: str | None = None,
    reason: str | None = None,
) -> Outcome:
    """INPUT_REQUIRED with ``sub_state`` and ``message`` (an answer, a reason) as its status
    message: the turn is over and the task waits for a message (``reason``: the kind of model
    failure that ended the turn, in the status extension's value). The sub-state, unless given,
    is ``awaiting-answer`` while a help request of the task waits for its answer,
    ``awaiting-subtasks`` while sub-tasks working for it are under way, else
    ``awaiting-next-message``. From INPUT_REQUIRED the task first resumes (WORKING), as the
    lifecycle asks of any interrupted task that is answered."""

    def parked(rec: TaskRecord | None, now: int) -> Outcome:
        status = agent_text(rec, message) if isinstance(message, str) else message
        data = status_data(sub_state or waiting_for(rec))
        if reason is not None:
            data["reason"] = reason
        return moves.move(rec, "require_input", now, status, metadata={STATUS_KEY: data})

    return resuming(record, now_ms, parked)


def waiting_for(record: TaskRecord | None) -> str:
    """What a task parking now waits for: an answer to a help request, its sub-tasks
    working for it, or any message."""
    if record is not None and open_requests(record.task, extension_of(record.task)):
        return SubState.AWAITING_ANSWER.value
    if record is not None and waits_for_children(record.task):
        return SubState.AWAITING_SUBTASKS.value
    return SubState.AWAITING_NEXT_MESSAGE.value


def end_turn(record: TaskRecord | None, now_ms: int, answer: Message | str) -> Outcome:
    """A turn's answer: a conversation parks; a delegated task completes, unless sub-tasks
    working for it are under way (it parks awaiting them, and completes at the end of the
    turn their results give it)."""
    extension = extension_of(record.task) if record is not None else None
    if extension is None or extension.lifecycle != "delegated":
        return park(record, now_ms, answer)
    if record is not None and waits_for_children(record.task):
        return park(record, now_ms, answer)

    def completed(rec: TaskRecord | None, now: int) -> Outcome:
        status = agent_text(rec, answer) if isinstance(answer, str) else answer
        return chain(rec, now, (refs_ended, lambda r, n: moves.move(r, "complete", n, status)))

    return resuming(record, now_ms, completed)


def complete_with(record: TaskRecord | None, now_ms: int, text: str) -> Outcome:
    """COMPLETED with ``text`` as its status message (from INPUT_REQUIRED, by way of
    WORKING): a participant's task done by their message, say."""

    def completed(rec: TaskRecord | None, now: int) -> Outcome:
        done = agent_text(rec, text)
        return chain(rec, now, (refs_ended, lambda r, n: moves.move(r, "complete", n, done)))

    return resuming(record, now_ms, completed)


def refs_ended(record: TaskRecord | None, now_ms: int) -> Outcome:
    """A task about to end: its references to the children not ended yet say CANCELED, as
    its end's cascade leaves them (accord.harness.core._delegation.ended_with); unchanged when
    none is open."""
    extension = extension_of(record.task) if record is not None else None
    if extension is None:
        return Outcome("unchanged", record=record)
    ended = ended_with(extension)
    if ended == extension:
        return Outcome("unchanged", record=record)
    return with_extension(record, now_ms, ended)


def unresolved(record: TaskRecord) -> list[str]:
    """The sub-tasks not yet ended, by id (a child that never reported counts)."""
    extension = extension_of(record.task)
    if extension is None:
        return []
    return [ref.task_id for ref in subtasks.unresolved(extension)]


def complete(record: TaskRecord | None, now_ms: int, requested_by: str) -> Outcome:
    """A participant's completion: COMPLETED "completed by X", unless a sub-task is still
    open, which parks the task again with the reason."""
    waiting = unresolved(record) if record is not None else []
    if waiting:
        return settle(record, now_ms, requested_by, "wait", waiting_reason(waiting))
    return settle(record, now_ms, requested_by, "complete")


def waiting_reason(task_ids: list[str]) -> str:
    return "unresolved sub-tasks: " + ", ".join(task_ids)


def settle(
    record: TaskRecord | None,
    now_ms: int,
    requested_by: str,
    decision: str,
    reason: str = "",
    sub_tasks: tuple[TaskRef, ...] = (),
) -> Outcome:
    """A completion as decided (``task.complete``): ``complete`` is COMPLETED "completed by
    X"; anything else parks the task again with "completion refused: <reason>". With
    ``sub_tasks`` (their states as just read), the task's references are updated on the
    way, while the task is WORKING (a snapshot of a parked task would end the stream of
    whoever asked before its answer)."""
    if record is None or lifecycle.is_terminal(record.state):
        return moves.move(record, "complete", now_ms)  # the refusal, with the task's state
    steps: list[Decision] = []
    if record.state in lifecycle.INTERRUPTED:
        steps.append(start_turn)
    current = extension_of(record.task)
    updated = subtasks.with_states(current, sub_tasks) if current is not None else None
    if updated is not None and decision == "complete":
        updated = ended_with(updated)  # (a hook completed it with sub-tasks open)
    if updated is not None and updated != current:
        steps.append(partial(with_extension, extension=updated))
    if decision == "complete":
        done = f"completed by {requested_by}"
        steps.append(lambda r, n: moves.move(r, "complete", n, agent_text(r, done)))
    else:
        steps.append(partial(park, message=f"completion refused: {reason}"))
    return chain(record, now_ms, tuple(steps))


def say(
    record: TaskRecord | None,
    now_ms: int,
    message: Message,
    extension: TaskExtension | None = None,
) -> Outcome:
    """The harness answers without a turn (a command's reply, a refusal): a status update in
    the task's current state, keeping its sub-state; a task still SUBMITTED (this was its
    first message) parks awaiting the next one instead. With ``extension``, the task's
    changed extension follows as a task snapshot (after the answer, so that a stream ends
    with the answer in it)."""
    if record is not None and record.state is TaskState.SUBMITTED:
        first: Decision = partial(park, message=message)
    else:
        # (the status extension's value stays as it is: its sub-state, and the kind of model
        # failure a parked turn ended on)
        sub_state = sub_state_of(record.task) if record is not None else None
        current = record.task.metadata if record is not None else UNSET
        value = current.get(STATUS_KEY) if isinstance(current, dict) else None
        metadata = {STATUS_KEY: dict(value)} if isinstance(value, dict) and sub_state else None
        first = partial(_note, message=message, metadata=metadata)
    if extension is None:
        return first(record, now_ms)
    return chain(record, now_ms, (first, partial(with_extension, extension=extension)))


def with_extension(record: TaskRecord | None, now_ms: int, extension: TaskExtension) -> Outcome:
    """The task's metadata with ``extension`` in it, as a task snapshot."""
    metadata = record.task.metadata if record is not None else UNSET
    base = metadata if isinstance(metadata, dict) else {}
    return moves.set_metadata(record, metadata_with(base, extension), now_ms)


def chain(record: TaskRecord | None, now_ms: int, steps: tuple[Decision, ...]) -> Outcome:
    """Decisions one after the other, as one outcome (one append); the first refusal is the
    answer."""
    events: list[Event] = []
    published: list[Published] = []
    outcome = Outcome("unchanged", record=record)
    for step in steps:
        outcome = step(record, now_ms)
        if not outcome.ok:
            return outcome
        record = outcome.record
        events += outcome.events
        published += outcome.published
    return dataclasses.replace(outcome, events=events, published=published)


def _note(
    record: TaskRecord | None,
    now_ms: int,
    message: Message,
    metadata: dict[str, Any] | None,
) -> Outcome:
    return moves.note(record, now_ms, message, metadata=metadata)


def resuming(
    record: TaskRecord | None,
    now_ms: int,
    then: Callable[[TaskRecord | None, int], Outcome],
) -> Outcome:
    """``then``, after WORKING when the task is interrupted: one outcome with both events."""
    if record is None or record.state not in lifecycle.INTERRUPTED:
        return then(record, now_ms)
    resumed = moves.move(record, "work", now_ms)
    if not resumed.ok:
        return resumed
    final = then(resumed.record, now_ms)
    if not final.ok:
        return final
    return final.after(resumed)


def agent_text(record: TaskRecord | None, text: str) -> Message:
    """The harness's status message: its id is derived from the task's log position (the
    core reads no clock and draws no random numbers), unique within the task."""
    seq = record.seq + 1 if record is not None else 0
    task_id = record.task.id if record is not None else ""
    return Message(message_id=f"{task_id}:status:{seq}", role=Role.AGENT, parts=[Part(text=text)])
