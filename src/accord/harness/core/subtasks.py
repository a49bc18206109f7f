"""Sub-tasks: a child conversation's extension, the parent's reference to it, and the
references brought up to date from the children themselves.

A ``/sub-task`` child is a conversation of this harness in the parent's context, with the
sender as its reporter and the harness as its assignee, the parent's model settings, and
the parent in its ``parent_tasks``; the parent lists it in ``sub_tasks`` with the state it
was last seen in. That state is read again from the child whenever it matters (a
completion, ``/status``), so a child completed, canceled or failed by anyone is seen as such.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from accord.harness.core.state import extension_of, sub_state_of
from accord.harness.wire import Participant, Role, SubState, TaskExtension, TaskRef
from accord.wire.model import Task, TaskState

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


def waiting_ref(task_id: str) -> TaskRef:
    """A new child, parked until its first message."""
    return TaskRef(
        task_id=task_id, state="INPUT_REQUIRED", sub_state=SubState.AWAITING_NEXT_MESSAGE.value
    )


def with_sub_task(extension: TaskExtension, ref: TaskRef) -> TaskExtension:
    return msgspec.structs.replace(extension, sub_tasks=(*extension.sub_tasks, ref))


def local_children(extension: TaskExtension) -> list[str]:
    """The sub-tasks on this harness (no other agent), whose state can be read here."""
    return [ref.task_id for ref in extension.sub_tasks if ref.agent is None]


def refreshed(
    parent_id: str, extension: TaskExtension, children: Mapping[str, Task]
) -> TaskExtension:
    """``extension`` with each sub-task's state as ``children`` (read just now) show it. A
    task counts only if it names ``parent_id`` among its parents: a reference to any other
    task tells nothing of it."""
    refs = []
    for ref in extension.sub_tasks:
        child = children.get(ref.task_id)
        child_extension_ = extension_of(child) if child is not None else None
        if (
            child is None
            or child_extension_ is None
            or all(p.task_id != parent_id for p in child_extension_.parent_tasks)
        ):
            refs.append(ref)
            continue
        refs.append(
            msgspec.structs.replace(
                ref, state=state_name(child.status.state), sub_state=sub_state_of(child)
            )
        )
    return msgspec.structs.replace(extension, sub_tasks=tuple(refs))


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
