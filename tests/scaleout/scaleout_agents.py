"""The agent the scale-out tests serve on every node (``--agent scaleout_agents:agent``).

The first word of the message's text picks the behaviour:

- ``tick N [DELAY]``: streams N chunks of one artifact, DELAY seconds apart, then completes;
- ``slow``: starts working and waits until the task is canceled;
- ``ask``: asks for input (the task parks in INPUT_REQUIRED; the answer is echoed);
- ``pid``: answers ``pid P``, the process that ran it (``accord serve --processes N``);
- anything else: echoes.

``resumable`` is the same agent with a ``resume``: another node completes a task it resumes.
"""

from __future__ import annotations

import asyncio
import os

from accord.agents._api import RequestContext, TaskHandle


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    word, _, rest = ctx.text.partition(" ")
    await task.start_working()
    if word == "tick":
        args = rest.split()
        count = int(args[0]) if args else 5
        delay = float(args[1]) if len(args) > 1 else 0.02
        for index in range(count):
            await asyncio.sleep(delay)
            await task.update_artifact(
                text=f"chunk {index};",
                artifact_id="ticks",
                append=index > 0,
                last_chunk=index == count - 1,
            )
        await task.complete()
    elif word == "slow":
        await asyncio.Event().wait()  # until CancelTask cancels this coroutine
    elif word == "ask":
        await task.require_input("what should I echo?")
    elif word == "pid":
        await task.update_artifact(text=f"pid {os.getpid()}", last_chunk=True)
        await task.complete()
    else:
        await task.update_artifact(text=f"echo: {ctx.text}", last_chunk=True)
        await task.complete()


class Resumable:
    """``agent``, whose tasks a dead node left running are resumed by another node (its
    ``resume``): the task completes there, naming the process that resumed it."""

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        await agent(ctx, task)

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        return None

    async def resume(self, ctx: RequestContext, task: TaskHandle) -> None:
        await task.complete(f"resumed by process {os.getpid()}")


resumable = Resumable()
