"""An agent whose tasks end or stay live: ``ask`` parks the task in INPUT_REQUIRED, anything
else completes it (the retention tests serve it in-process and with ``accord serve``)."""

from __future__ import annotations

from accord.agents import RequestContext, TaskHandle


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    await task.start_working()
    if ctx.text == "ask":
        await task.require_input("what else?")
    else:
        await task.complete()
