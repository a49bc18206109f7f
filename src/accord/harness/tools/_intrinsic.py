"""The harness's own tools (tiny-harness's intrinsics): the plan (``create_plan``,
``complete_step``) and roles (``set_participant_role``, for a turn an admin began). Each
changes the task's extension, an event of its log that streams and push deliver.

``ask_participant`` comes with channels, ``create_task_for_participant`` and
``spawn_subtask`` with delegation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from accord.core import Outcome, TaskRecord
from accord.core import agent as moves
from accord.harness._transcript import ToolSpec
from accord.harness._wire import Participant, Role, TaskExtension
from accord.harness.core import _plan as plans
from accord.harness.core._state import extension_of, metadata_with
from accord.harness.tools._base import ToolContext, ToolOutcome

Change = Callable[[TaskExtension], TaskExtension]

ROLES = [role.value for role in Role]


class IntrinsicTool:
    """A tool whose call is a change of the task's extension."""

    def __init__(
        self, spec: ToolSpec, change: Callable[[dict[str, Any], ToolContext], Change], done: str
    ) -> None:
        self.spec = spec
        self.idempotent = True  # setting a plan, a step or a role twice changes nothing more
        self._change = change
        self._done = done

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        if context.task is None:
            return ToolOutcome(f"{self.spec.name} needs the task", error=True)
        try:
            change = self._change(arguments, context)
            await context.task.decide(lambda record, now: _changed(record, now, change))
        except (plans.PlanError, msgspec.ValidationError, TypeError, KeyError) as exc:
            return ToolOutcome(f"{self.spec.name}: {exc}", error=True)
        return ToolOutcome(self._done)


def _changed(record: TaskRecord | None, now_ms: int, change: Change) -> Outcome:
    if record is None:
        return moves.set_metadata(record, {}, now_ms)  # (the refusal: no such task)
    extension = extension_of(record.task)
    if extension is None:
        raise plans.PlanError("the task carries no harness data")
    metadata = record.task.metadata if isinstance(record.task.metadata, dict) else {}
    return moves.set_metadata(record, metadata_with(metadata, change(extension)), now_ms)


# --- create_plan / complete_step -----------------------------------------------------------


def _create_plan(arguments: dict[str, Any], context: ToolContext) -> Change:
    plan = plans.make(arguments.get("steps", []))
    return lambda extension: msgspec.structs.replace(extension, plan=plan)


def _complete_step(arguments: dict[str, Any], context: ToolContext) -> Change:
    name, output = arguments.get("step"), arguments.get("output", "")
    if not isinstance(name, str) or not isinstance(output, str):
        raise plans.PlanError("step and output are text")
    return lambda extension: msgspec.structs.replace(
        extension, plan=plans.complete(extension.plan, name, output)
    )


# --- set_participant_role ------------------------------------------------------------------


def _set_role(arguments: dict[str, Any], context: ToolContext) -> Change:
    if context.sender_role is not Role.ADMIN:
        raise plans.PlanError(
            "only a turn an admin of the task began may change roles "
            f"({context.sender or 'nobody'} is {context.sender_role or 'not a participant'})"
        )
    who, role = arguments.get("participant_id"), arguments.get("role")
    if not isinstance(who, str) or role not in ROLES:
        raise plans.PlanError(f"participant_id is an id, role one of {', '.join(ROLES)}")

    def change(extension: TaskExtension) -> TaskExtension:
        if extension.participant(who) is None:
            raise plans.PlanError(f"{who!r} is not a participant of the task")
        people = tuple(
            Participant(id=p.id, kind=p.kind, role=Role(role), display_name=p.display_name)
            if p.id == who
            else p
            for p in extension.participants
        )
        return msgspec.structs.replace(extension, participants=people)

    return change


INTRINSICS: tuple[IntrinsicTool, ...] = (
    IntrinsicTool(
        ToolSpec(
            "create_plan",
            "Attach a plan to the task: steps (name, description, depends_on: names of "
            "earlier steps). Replaces any plan there was.",
            {
                "type": "object",
                "properties": {
                    "steps": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "minLength": 1},
                                "description": {"type": "string"},
                                "depends_on": {"type": "array", "items": {"type": "string"}},
                            },
                            "required": ["name"],
                        },
                    }
                },
                "required": ["steps"],
            },
        ),
        _create_plan,
        "the plan is set",
    ),
    IntrinsicTool(
        ToolSpec(
            "complete_step",
            "Mark a step of the plan done (its dependencies must be done), with its output.",
            {
                "type": "object",
                "properties": {"step": {"type": "string"}, "output": {"type": "string"}},
                "required": ["step", "output"],
            },
        ),
        _complete_step,
        "the step is done",
    ),
    IntrinsicTool(
        ToolSpec(
            "set_participant_role",
            "Change a participant's role (only in a turn an admin of the task began).",
            {
                "type": "object",
                "properties": {
                    "participant_id": {"type": "string"},
                    "role": {"type": "string", "enum": ROLES},
                },
                "required": ["participant_id", "role"],
            },
        ),
        _set_role,
        "the role is changed",
    ),
)
