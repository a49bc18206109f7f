"""An agent as a class, with a cancel hook.

    accord serve --agent examples.class_agent:agent --store memory://

"countdown N" counts down from N, one number a second, as chunks of one artifact. CancelTask
stops it: the engine marks the task canceled, calls ``cancel`` and then cancels the running
``execute`` coroutine, so ``execute`` should tidy up in ``finally`` (or ``except
asyncio.CancelledError``, re-raising it).
"""

from __future__ import annotations

import asyncio

from accord.agents import RequestContext, TaskHandle


class Countdown:
    def __init__(self, tick_s: float = 1.0) -> None:
        self.tick_s = tick_s
        self.running: set[str] = set()  # task ids with a countdown in progress
        self.canceled: list[str] = []  # task ids whose countdown CancelTask stopped

    async def execute(self, ctx: RequestContext, task: TaskHandle) -> None:
        _, _, arg = ctx.text.partition(" ")
        start = int(arg) if arg.strip().isdigit() else 3
        self.running.add(task.task_id)
        try:
            await task.start_working(f"counting down from {start}")
            for n in range(start, -1, -1):
                await task.update_artifact(
                    text=f"{n}\n",
                    artifact_id="countdown",
                    name="countdown",
                    append=n != start,
                    last_chunk=n == 0,
                )
                if n:
                    await asyncio.sleep(self.tick_s)
            await task.complete("liftoff")
        finally:
            self.running.discard(task.task_id)

    async def cancel(self, ctx: RequestContext, task: TaskHandle) -> None:
        # The task is already CANCELED when this runs; its moves would raise WrongStateError.
        self.canceled.append(task.task_id)


agent = Countdown()
