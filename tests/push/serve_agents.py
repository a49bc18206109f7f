"""Agents for the tests that run ``accord serve`` (``--agent serve_agents:many`` …)."""

from __future__ import annotations

from accord.agents._api import RequestContext, TaskHandle

ARTIFACTS = 10


async def many(ctx: RequestContext, task: TaskHandle) -> None:
    """working, ten artifacts, completed: thirteen streamed events with the task."""
    await task.start_working()
    for index in range(ARTIFACTS):
        await task.update_artifact(text=f"part {index}", artifact_id=f"a{index}", last_chunk=True)
    await task.complete("all done")


async def ask(ctx: RequestContext, task: TaskHandle) -> None:
    """input-required on the first message; an artifact and completed on the next."""
    if ctx.task is None:
        await task.require_input("what else?")
        return
    await task.start_working()
    await task.update_artifact(text=f"got: {ctx.text}", last_chunk=True)
    await task.complete()
