"""Agents for the crash tests: several steps with pauses, so a kill lands mid-task."""

from __future__ import annotations

import asyncio

from accord.agents._api import RequestContext, TaskHandle


async def steps(ctx: RequestContext, task: TaskHandle) -> None:
    await task.start_working()
    for index in range(3):
        await asyncio.sleep(0.01)
        await task.update_artifact(
            text=f"step {index}: {ctx.text}", artifact_id=f"a{index}", last_chunk=True
        )
    await task.complete("done")
