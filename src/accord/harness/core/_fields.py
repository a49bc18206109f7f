"""The rules and bounds of the task extension's fields: one validation for every way a field
is set — a participant's task envelope (a brief, a change), the model's tools
(``create_plan``, ``spawn_subtask``, ``create_task_for_participant``), a hook's replacement of
the participants — so that no way in accepts what another refuses.

Pure: values in, a :class:`FieldError` naming the field (relative to the task extension:
``goal``, ``participants[3].id``, ``plan.steps[2].depends_on``) out.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from accord.errors import AccordError
from accord.harness._wire import Participant, Plan, TaskExtension
from accord.harness.core import _plan as plans
from accord.harness.core._bounds import MAX_CRITERIA, MAX_ID, MAX_NAME, MAX_PARTICIPANTS, MAX_TEXT


class FieldError(AccordError, ValueError):
    """A field that does not fit the rules: ``field`` names it, ``reason`` says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field} {reason}")
        self.field = field
        self.reason = reason


def valid_id(value: str) -> bool:
    """A participant id: 1 to :data:`MAX_ID` printable characters."""
    return 0 < len(value) <= MAX_ID and value.isprintable()


def check_text(field: str, value: str, limit: int, *, required: bool = False) -> None:
    if required and not value.strip():
        raise FieldError(field, f"must be 1 to {limit} characters (not blank)")
    if len(value) > limit:
        raise FieldError(field, f"must be at most {limit} characters")


def check_brief(name: str, goal: str, description: str, criteria: Sequence[str]) -> None:
    """What a task is asked to do: its name and goal (required), description and acceptance
    criteria (a brief to a sub-task, or a participant's task envelope)."""
    check_text("name", name, MAX_NAME, required=True)
    check_text("goal", goal, MAX_TEXT, required=True)
    check_text("description", description, MAX_TEXT)
    check_criteria(criteria)


def check_criteria(criteria: Sequence[str]) -> None:
    if len(criteria) > MAX_CRITERIA:
        raise FieldError("acceptance_criteria", f"must have at most {MAX_CRITERIA} entries")
    for index, text in enumerate(criteria):
        check_text(f"acceptance_criteria[{index}].text", text, MAX_TEXT, required=True)


def check_participants(participants: Sequence[Participant]) -> None:
    """Each participant once, with an id of 1 to :data:`MAX_ID` printable characters and a
    display name of at most :data:`MAX_NAME`; at most :data:`MAX_PARTICIPANTS` of them."""
    if len(participants) > MAX_PARTICIPANTS:
        raise FieldError("participants", f"must have at most {MAX_PARTICIPANTS} entries")
    seen: set[str] = set()
    for index, participant in enumerate(participants):
        if not valid_id(participant.id):
            raise FieldError(
                f"participants[{index}].id", f"must be 1 to {MAX_ID} printable characters"
            )
        if participant.id in seen:
            raise FieldError(f"participants[{index}].id", "lists a participant a second time")
        seen.add(participant.id)
        check_text(f"participants[{index}].display_name", participant.display_name, MAX_NAME)


def check_plan(plan: Plan) -> None:
    try:
        plans.check(plan)
    except plans.PlanError as exc:
        raise FieldError("plan", str(exc)) from None


def check_extension(extension: TaskExtension, fields: Collection[str]) -> None:
    """The ``fields`` of ``extension`` a task envelope set, checked as the tools check them."""
    set_ = set(fields)
    if "name" in set_:
        check_text("name", extension.name, MAX_NAME, required=True)
    if "goal" in set_:
        check_text("goal", extension.goal, MAX_TEXT, required=True)
    if "type" in set_ and extension.type is not None:
        check_text("type", extension.type, MAX_NAME)
    if "description" in set_:
        check_text("description", extension.description, MAX_TEXT)
    if "acceptance_criteria" in set_:
        check_criteria([criterion.text for criterion in extension.acceptance_criteria])
    if "participants" in set_:
        check_participants(extension.participants)
    if "plan" in set_ and extension.plan is not None:
        check_plan(extension.plan)
