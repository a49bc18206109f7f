"""The pure decision of a message before it is stored (accord.core.intake): gates, then the
agent's intake, then the lifecycle's SendMessage."""

from __future__ import annotations

from typing import Any

import pytest
from core_helpers import T0, UNLIMITED, send_request, task_in, user_message

from accord.core._records import TaskRecord
from accord.core.intake import Admission, Admit, Divert, Judge, admit
from accord.wire._errors import A2AError, ErrorKind
from accord.wire._model import Task, TaskState


async def _handler(ctx: Any, task: Any) -> None:
    return None


def decide(
    record: TaskRecord | None,
    *,
    judges: list[Judge] = [],  # noqa: B006 (never mutated)
    intake: Any = None,
    task_id: str = "",
) -> Admission:
    request = send_request(user_message(task_id=task_id) if task_id else None)
    return admit(
        request,
        record,
        judges=judges,
        intake=intake,
        tenant="acme",
        tenant_task_count=0,
        now_ms=T0 + 100,
        new_task_id="t-new",
        new_context_id="c-new",
        limits=UNLIMITED,
    )


def refusing(kind: ErrorKind) -> Any:
    def judge(task: Task | None) -> Any:
        raise A2AError(kind, "no")

    return judge


def test_a_gate_refusal_refuses_before_the_agent_is_asked() -> None:
    asked: list[Task | None] = []
    admission = decide(
        None,
        judges=[refusing(ErrorKind.PERMISSION_DENIED)],
        intake=lambda task: asked.append(task) or Admit(),
    )
    assert admission.outcome.name == "gate-refused"
    assert admission.outcome.error is not None
    assert admission.outcome.error.kind is ErrorKind.PERMISSION_DENIED
    assert asked == []


def test_the_first_gate_that_diverts_takes_the_message_and_later_gates_are_not_asked() -> None:
    taken = Divert(_handler)
    later: list[Task | None] = []
    admission = decide(None, judges=[lambda task: taken, lambda task: later.append(task)])
    assert admission.verdict is taken
    assert admission.outcome.ok and later == []


def test_a_new_task_a_gate_diverts_is_the_gates_alone() -> None:
    asked: list[Task | None] = []
    admission = decide(
        None, judges=[lambda task: Divert(_handler)], intake=lambda t: asked.append(t) or Admit()
    )
    assert admission.outcome.ok and asked == []


def test_the_agents_rules_hold_on_its_own_task_when_a_gate_takes_the_message() -> None:
    record, _ = task_in(TaskState.INPUT_REQUIRED)
    admission = decide(
        record,
        task_id=record.id,
        judges=[lambda task: Divert(_handler)],
        intake=refusing(ErrorKind.INVALID_PARAMS),
    )
    assert admission.outcome.name == "intake-refused"


def test_an_intake_diverts_only_a_message_that_continues_a_task() -> None:
    admission = decide(None, intake=lambda task: Divert(_handler))
    assert admission.outcome.name == "intake-refused"
    assert admission.outcome.error is not None
    assert admission.outcome.error.kind is ErrorKind.UNSUPPORTED_OPERATION


@pytest.mark.parametrize("judged", ["gate", "intake"])
def test_a_task_the_caller_cannot_see_is_not_found_before_anyone_judges_it(judged: str) -> None:
    asked: list[Task | None] = []

    def note(task: Task | None) -> Any:
        asked.append(task)
        return Admit() if judged == "intake" else None

    admission = decide(
        None,
        task_id="someone-elses",
        judges=[note] if judged == "gate" else [],
        intake=note if judged == "intake" else None,
    )
    assert admission.outcome.error is not None
    assert admission.outcome.error.kind is ErrorKind.TASK_NOT_FOUND
    assert asked == []


def test_what_the_intake_admits_is_what_is_stored() -> None:
    changed = user_message(text="as the agent stores it")
    admission = decide(None, intake=lambda task: Admit(message=changed, task_metadata={"k": 1}))
    record = admission.outcome.record
    assert record is not None
    assert record.task.history[-1].text() == "as the agent stores it"
    assert record.task.metadata == {"k": 1}
