"""``spawn_subtask`` and ``create_task_for_participant``: the model's tools for sub-tasks
(tiny-harness's intrinsics, with its arguments).

Both are safe to run again after a crash: a call finds the child it made by its call id
(accord.harness.delegation._spawner), so a turn that resumes never makes a second child. A
call that cannot be made — past the bounds, an agent not on the roster, a participant not
in the task, a hook's refusal — is an error result the model reads (``not spawned: …``).
"""

from __future__ import annotations

from typing import Any

from accord.harness._moves import Who
from accord.harness._transcript import ToolSpec
from accord.harness.core._delegation import Brief
from accord.harness.delegation._spawner import Delegation, DelegationError
from accord.harness.tools._base import ToolContext, ToolOutcome

SPAWN_SUBTASK = "spawn_subtask"
CREATE_TASK_FOR_PARTICIPANT = "create_task_for_participant"

_BRIEF: dict[str, Any] = {
    "name": {"type": "string", "minLength": 1, "description": "a short name"},
    "goal": {"type": "string", "minLength": 1, "description": "what is to be done"},
    "acceptance_criteria": {
        "type": "array",
        "items": {"type": "string"},
        "default": [],
        "description": "what a good result meets",
    },
    "step": {
        "type": ["string", "null"],
        "default": None,
        "description": "the plan's step this sub-task is for",
    },
}

SPAWN_SUBTASK_SPEC = ToolSpec(
    name=SPAWN_SUBTASK,
    description=(
        "Hand part of the work to a sub-task: on this agent (agent null) or on another agent "
        "of the roster. It sees nothing of this task but its brief. When it ends, its result "
        "begins a turn of yours; meanwhile this task waits for it."
    ),
    parameters={
        "type": "object",
        "properties": {
            **_BRIEF,
            "description": {
                "type": "string",
                "default": "",
                "description": "the context the sub-task needs (it sees nothing else)",
            },
            "agent": {
                "type": ["string", "null"],
                "default": None,
                "description": "an agent id of the roster, or null for this agent",
            },
        },
        "required": ["name", "goal"],
        "additionalProperties": False,
    },
)

CREATE_TASK_FOR_PARTICIPANT_SPEC = ToolSpec(
    name=CREATE_TASK_FOR_PARTICIPANT,
    description=(
        "Create a task assigned to a participant of this task, whose work must finish before "
        "this one can: it waits for their message, which completes it and begins a turn of "
        "yours."
    ),
    parameters={
        "type": "object",
        "properties": {"participant_id": {"type": "string", "minLength": 1}, **_BRIEF},
        "required": ["participant_id", "name", "goal"],
        "additionalProperties": False,
    },
)

_SPAWN_FIELDS = {"name", "goal", "description", "acceptance_criteria", "agent", "step"}
_PARTICIPANT_FIELDS = {"participant_id", "name", "goal", "acceptance_criteria", "step"}


def _brief(arguments: dict[str, Any], known: set[str]) -> tuple[Brief, str | None]:
    """The call's brief and step, checked (DelegationError naming what is wrong)."""
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise DelegationError(f"unknown argument {unknown[0]!r}")
    name, goal = arguments.get("name"), arguments.get("goal")
    description = arguments.get("description", "")
    criteria = arguments.get("acceptance_criteria", [])
    step = arguments.get("step")
    if not isinstance(name, str) or not isinstance(goal, str):
        raise DelegationError("name and goal are text")
    if not isinstance(description, str):
        raise DelegationError("description is text")
    if not isinstance(criteria, list) or not all(isinstance(c, str) for c in criteria):
        raise DelegationError("acceptance_criteria is a list of strings")
    if step is not None and not isinstance(step, str):
        raise DelegationError("step is a step's name, or null")
    return Brief(name, goal, description, tuple(criteria)), step


def _who(context: ToolContext) -> Who:
    return Who(context.sender, context.sender_role, context.correlation_id)


class SpawnSubtask:
    spec = SPAWN_SUBTASK_SPEC
    idempotent = True  # (a call run again finds its child by its call id)

    def __init__(self, delegation: Delegation) -> None:
        self.delegation = delegation

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        if context.task is None:
            return ToolOutcome("spawn_subtask needs the task", error=True)
        try:
            brief, step = _brief(arguments, _SPAWN_FIELDS)
            agent = arguments.get("agent")
            if agent is not None and not isinstance(agent, str):
                raise DelegationError("agent is an agent id of the roster, or null")
            child = await self.delegation.spawn(
                context.task, _who(context), brief, agent=agent, call=context.call_id, step=step
            )
        except DelegationError as exc:
            return ToolOutcome(f"not spawned: {exc}", error=True)
        where = f" on {agent}" if agent else ""
        return ToolOutcome(
            f"sub-task {child} started{where}: when it ends, its result begins a turn of yours"
        )


class CreateTaskForParticipant:
    spec = CREATE_TASK_FOR_PARTICIPANT_SPEC
    idempotent = True

    def __init__(self, delegation: Delegation) -> None:
        self.delegation = delegation

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> ToolOutcome:
        if context.task is None:
            return ToolOutcome("create_task_for_participant needs the task", error=True)
        try:
            brief, step = _brief(arguments, _PARTICIPANT_FIELDS)
            participant = arguments.get("participant_id")
            if not isinstance(participant, str) or not participant:
                raise DelegationError("participant_id is a participant's id")
            child = await self.delegation.create_task_for_participant(
                context.task, _who(context), participant, brief, call=context.call_id, step=step
            )
        except DelegationError as exc:
            return ToolOutcome(f"not created: {exc}", error=True)
        return ToolOutcome(
            f"task {child} created for {participant}: their message completes it and begins "
            "a turn of yours"
        )
