"""An agent for the crash test, loaded by ``accord serve --agent crash_agent:many``."""

from __future__ import annotations

from accord.agents.api import RequestContext, TaskHandle

ARTIFACTS = 10


async def many(ctx: RequestContext, task: TaskHandle) -> None:
    """working, ten artifacts, completed: thirteen streamed events with the task."""
    await task.start_working()
    for index in range(ARTIFACTS):
        await task.update_artifact(text=f"part {index}", artifact_id=f"a{index}", last_chunk=True)
    await task.complete("all done")
