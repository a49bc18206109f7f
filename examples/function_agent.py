"""The smallest agent: one async function.

    accord serve --agent examples.function_agent:agent --store memory://

It answers "count these words" with a task whose one artifact says how many words it got.
A message saying just "hello" gets a direct message instead of a task.
"""

from __future__ import annotations

from accord.agents import RequestContext, TaskHandle


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    text = ctx.text.strip()
    if text.lower() == "hello":
        # A direct reply: no task is created (only as the first answer to a new message).
        await task.reply("hello to you too")
        return
    await task.start_working()
    words = len(text.split())
    await task.update_artifact(text=f"{words} words", name="count", last_chunk=True)
    await task.complete()
