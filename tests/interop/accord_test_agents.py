"""Agents the interop tests serve with ``accord serve --agent accord_test_agents:agent``.

The first word of the message's text picks the behaviour:

- ``slow``: starts working and waits until the task is canceled;
- ``tick N [DELAY]``: streams N chunks of one artifact, DELAY seconds apart, then completes;
- ``ask``: requires input; the follow-up message completes the task with ``got: <text>``;
- ``direct TEXT``: answers with a direct message ``direct: TEXT`` and creates no task;
- anything else: echoes, like the built-in echo agent.
"""

from __future__ import annotations

import asyncio

from accord.agents._api import RequestContext, TaskHandle


class ScriptedAgent:
    def __init__(self) -> None:
        self.canceled: list[str] = []

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        word, _, rest = ctx.text.partition(" ")
        if ctx.task is not None:  # a follow-up to an input-required task
            await task.start_working()
            await task.complete(f"got: {ctx.text}")
        elif word == "slow":
            await task.start_working()
            await asyncio.Event().wait()  # until CancelTask cancels this coroutine
        elif word == "tick":
            await self._tick(task, rest.split())
        elif word == "ask":
            await task.require_input("what else?")
        elif word == "direct":
            await task.reply(f"direct: {rest}")
        else:
            await task.start_working()
            await task.update_artifact(text=f"echo: {ctx.text}", last_chunk=True)
            await task.complete()

    @staticmethod
    async def _tick(task: TaskHandle, args: list[str]) -> None:
        count = int(args[0]) if args else 5
        delay = float(args[1]) if len(args) > 1 else 0.05
        await task.start_working()
        for index in range(count):
            await asyncio.sleep(delay)
            await task.update_artifact(
                text=f"chunk {index};",
                artifact_id="ticks",
                append=index > 0,
                last_chunk=index == count - 1,
            )
        await task.complete()

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        self.canceled.append(ctx.task_id)


agent = ScriptedAgent()
