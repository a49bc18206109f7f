"""The default agent: answers a message whose text is T with one artifact ``echo: T``."""

from __future__ import annotations

from accord.agents._api import RequestContext, TaskHandle


async def echo(ctx: RequestContext, task: TaskHandle) -> None:
    await task.start_working()
    await task.update_artifact(text=f"echo: {ctx.text}", name="echo", last_chunk=True)
    await task.complete()
