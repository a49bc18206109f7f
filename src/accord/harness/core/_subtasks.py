"""Sub-tasks: a child conversation's extension, the parent's reference to it, and the
references brought up to date from the children themselves.

A ``/sub-task`` child is a conversation of this harness in the parent's context, with the
sender as its reporter and the harness as its assignee, the parent's model settings, and
the parent in its ``parent_tasks``; the parent lists it in ``sub_tasks`` with the state it
was last seen in. That state is read again from the child whenever it matters (a
completion, ``/status``: accord.harness._children), so a child completed, canceled or failed
by anyone is seen as such. Sub-tasks of every kind: accord.harness.core._delegation.
"""

from __future__ import annotations

import msgspec

from accord.harness._wire import Participant, Role, TaskExtension, TaskRef
from accord.wire import TaskState

NAME_LENGTH = 60
TERMINAL_NAMES = frozenset({"COMPLETED", "FAILED", "CANCELED", "REJECTED"})


def state_name(state: object) -> str:
    """A state as task references write it: without the TASK_STATE_ prefix."""
    text = state.value if isinstance(state, TaskState) else str(state)
    return text.removeprefix("TASK_STATE_")


def child_extension(
    parent_id: str, parent: TaskExtension, goal: str, reporter: str, agent_id: str
) -> TaskExtension:
    first = goal.strip().splitlines()[0] if goal.strip() else "sub-task"
    sender = parent.participant(reporter)
    return TaskExtension(
        name=first[:NAME_LENGTH],
        goal=goal,
        participants=(
            Participant(id=reporter, kind=sender.kind if sender else "human", role=Role.REPORTER),
            Participant(id=agent_id, kind="agent", role=Role.ASSIGNEE),
        ),
        parent_tasks=(TaskRef(task_id=parent_id),),
        lifecycle="conversation",
        model=parent.model,
        reasoning_effort=parent.reasoning_effort,
    )


def with_states(extension: TaskExtension, refs: tuple[TaskRef, ...]) -> TaskExtension:
    """``extension`` with the states ``refs`` (read lately) give its sub-tasks."""
    if not refs:
        return extension
    read = {ref.task_id: ref for ref in refs}
    merged = tuple(read.get(ref.task_id, ref) for ref in extension.sub_tasks)
    return msgspec.structs.replace(extension, sub_tasks=merged)


def unresolved(extension: TaskExtension) -> tuple[TaskRef, ...]:
    """The sub-tasks not yet ended (one that never reported counts)."""
    return tuple(ref for ref in extension.sub_tasks if (ref.state or "") not in TERMINAL_NAMES)
