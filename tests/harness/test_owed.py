"""Which stored messages the harness still owes their handling (``accord.harness/owed``): a
plain message to a parked conversation is owed its turn until a message of the agent's
follows it, and only while the task is parked (a running or resumed turn reads it)."""

from __future__ import annotations

from accord.harness.channels._judge import OWED_TURN
from accord.harness.channels._judge import owed as marked
from accord.harness.channels._owed import owed
from accord.wire._model import Message, Part, Role, Task, TaskState, TaskStatus


def said(role: Role, message_id: str, owes: bool = False) -> Message:
    message = Message(message_id=message_id, role=role, parts=[Part(text=message_id)])
    return marked(message, OWED_TURN) if owes else message


def task(state: TaskState, *history: Message) -> Task:
    return Task(id="t", context_id="c", status=TaskStatus(state=state), history=list(history))


def test_a_plain_message_with_no_answer_after_it_is_owed_its_turn_while_parked() -> None:
    first = said(Role.USER, "hello")
    answer = said(Role.AGENT, "answer 1")
    later = said(Role.USER, "are you there?", owes=True)
    parked = task(TaskState.INPUT_REQUIRED, first, answer, later)
    assert [m.message_id for m in owed(parked)] == ["are you there?"]
    # its turn started (or resumes): the engine's recovery, not the owed scan, has it
    assert owed(task(TaskState.WORKING, first, answer, later)) == []
    # answered: owed no more (a later message's turn answered it too)
    after = said(Role.USER, "again", owes=True)
    answered = task(TaskState.INPUT_REQUIRED, first, answer, later, after, said(Role.AGENT, "a"))
    assert owed(answered) == []


def test_an_unmarked_message_is_never_owed() -> None:
    parked = task(TaskState.INPUT_REQUIRED, said(Role.USER, "hello"))
    assert owed(parked) == []
