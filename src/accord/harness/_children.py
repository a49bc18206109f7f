"""Reading a task's sub-tasks, for their current states."""

from __future__ import annotations

from accord.agents import TaskHandle
from accord.harness._wire import TaskExtension
from accord.harness.core._delegation import observed, parent_of, with_seen
from accord.wire import Task

MAX_READ = 256  # children read for their state; a task listing more keeps the rest as seen


async def with_children_read(
    task: TaskHandle, parent: Task, extension: TaskExtension
) -> TaskExtension:
    """``extension`` with its sub-tasks' states as they stand now (a child on another
    agent as its stand-in here last saw it). A task counts only if it names the parent
    among its parents: a reference to any other task tells nothing of it."""
    for ref in extension.sub_tasks[:MAX_READ]:
        child = await task.get_task(ref.task_id)
        if child is not None and parent_of(child) == parent.id:
            extension = with_seen(extension, ref.task_id, observed(child))
    return extension
