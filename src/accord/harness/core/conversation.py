"""A conversation's moves as the task's events: a turn starts, a turn parks the task, a
participant completes it.

A conversation never completes by itself: each turn ends in INPUT_REQUIRED with the status
extension's sub-state (``awaiting-next-message``, or ``awaiting-answer`` while a question to a
participant is pending) in the status update's metadata, which the fold mirrors into
``Task.metadata`` until the task leaves INPUT_REQUIRED. A delegated task completes when its
turn ends. Every function is pure: the task's record and the time in, an
:class:`~accord.core.outcome.Outcome` out.
"""

from __future__ import annotations

from collections.abc import Callable

from accord.core import agent as moves
from accord.core import lifecycle
from accord.core.outcome import Outcome
from accord.core.records import TaskRecord
from accord.harness.core.state import extension_of
from accord.harness.wire import STATUS_KEY, SubState, status_data
from accord.wire.model import Message, Part, Role

TERMINAL_NAMES = frozenset({"COMPLETED", "FAILED", "CANCELED", "REJECTED"})


def start_turn(record: TaskRecord | None, now_ms: int) -> Outcome:
    """WORKING: the harness works on the task's newest messages."""
    return moves.move(record, "work", now_ms)


def park(
    record: TaskRecord | None,
    now_ms: int,
    message: Message | str | None = None,
    sub_state: str = SubState.AWAITING_NEXT_MESSAGE.value,
) -> Outcome:
    """INPUT_REQUIRED with ``sub_state`` and ``message`` (an answer, a reason) as its status
    message: the turn is over and the task waits for a message. From INPUT_REQUIRED the task
    first resumes (WORKING), as the lifecycle asks of any interrupted task that is answered."""
    metadata = {STATUS_KEY: status_data(sub_state)}

    def parked(rec: TaskRecord | None, now: int) -> Outcome:
        status = agent_text(rec, message) if isinstance(message, str) else message
        return moves.move(rec, "require_input", now, status, metadata=metadata)

    return _resuming(record, now_ms, parked)


def end_turn(record: TaskRecord | None, now_ms: int, answer: Message | str) -> Outcome:
    """A turn's answer: a conversation parks, a delegated task completes."""
    extension = extension_of(record.task) if record is not None else None
    if extension is None or extension.lifecycle != "delegated":
        return park(record, now_ms, answer)

    def completed(rec: TaskRecord | None, now: int) -> Outcome:
        status = agent_text(rec, answer) if isinstance(answer, str) else answer
        return moves.move(rec, "complete", now, status)

    return _resuming(record, now_ms, completed)


def unresolved(record: TaskRecord) -> list[str]:
    """The sub-tasks not yet ended, by id (a child that never reported counts)."""
    extension = extension_of(record.task)
    if extension is None:
        return []
    return [ref.task_id for ref in extension.sub_tasks if (ref.state or "") not in TERMINAL_NAMES]


def complete(record: TaskRecord | None, now_ms: int, requested_by: str) -> Outcome:
    """A participant's completion: COMPLETED "completed by X", unless a sub-task is still
    open, which parks the task again with the reason."""
    if record is None or lifecycle.is_terminal(record.state):
        return moves.move(record, "complete", now_ms)  # the refusal, with the task's state
    waiting = unresolved(record)
    if waiting:
        reason = "completion refused: unresolved sub-tasks: " + ", ".join(waiting)
        return park(record, now_ms, reason)
    done = f"completed by {requested_by}"
    return _resuming(record, now_ms, lambda r, n: moves.move(r, "complete", n, agent_text(r, done)))


def _resuming(
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
    final.events = [*resumed.events, *final.events]
    final.published = [*resumed.published, *final.published]
    return final


def agent_text(record: TaskRecord | None, text: str) -> Message:
    """The harness's status message: its id is derived from the task's log position (the
    core reads no clock and draws no random numbers), unique within the task."""
    seq = record.seq + 1 if record is not None else 0
    task_id = record.task.id if record is not None else ""
    return Message(message_id=f"{task_id}:status:{seq}", role=Role.AGENT, parts=[Part(text=text)])
