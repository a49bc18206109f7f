"""Reading a task's sub-tasks on this harness, for their current states."""

from __future__ import annotations

from accord.agents.api import TaskHandle
from accord.harness.core.subtasks import local_children, refreshed
from accord.harness.wire import TaskExtension
from accord.wire.model import Task

MAX_READ = 256  # children read for their state; a task listing more keeps the rest as seen


async def with_children_read(
    task: TaskHandle, parent: Task, extension: TaskExtension
) -> TaskExtension:
    """``extension`` with its local sub-tasks' states as they stand now."""
    ids = local_children(extension)
    if not ids:
        return extension
    children = {}
    for task_id in ids[:MAX_READ]:
        child = await task.get_task(task_id)
        if child is not None:
            children[task_id] = child
    return refreshed(parent.id, extension, children)
