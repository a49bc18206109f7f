"""Reading a task's sub-tasks, for their current states."""

from __future__ import annotations

from accord.agents import TaskHandle
from accord.harness._wire import TaskExtension
from accord.harness.core._delegation import Observed, observed, parent_of, with_seen
from accord.wire import Task

MAX_READ = 256  # children read for their state; a task listing more keeps the rest as seen


async def with_children_read(
    task: TaskHandle, parent: Task, extension: TaskExtension
) -> TaskExtension:
    """``extension`` with its sub-tasks' states as they stand now (a child on another
    agent as its stand-in here last saw it). A task counts only if it names the parent
    among its parents: a reference to any other task tells nothing of it."""
    read, _ = await children_read(task, parent, extension)
    return read


async def children_read(
    task: TaskHandle, parent: Task, extension: TaskExtension
) -> tuple[TaskExtension, dict[str, Observed]]:
    """:func:`with_children_read`, and each child read as it is (by id), its own sub-state
    included (a reference carries only the ones tiny-harness's clients know)."""
    seen: dict[str, Observed] = {}
    for ref in extension.sub_tasks[:MAX_READ]:
        child = await task.get_task(ref.task_id)
        if child is not None and parent_of(child) == parent.id:
            seen[ref.task_id] = observed(child)
            extension = with_seen(extension, ref.task_id, seen[ref.task_id])
    return extension, seen
