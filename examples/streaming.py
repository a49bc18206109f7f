"""A streaming agent: one artifact written in chunks as the work goes on.

    accord serve --agent examples.streaming:agent --store memory://

Each word of the message comes back upper-cased as its own chunk of the artifact
``shout`` (``append`` after the first, ``lastChunk`` on the last); a second artifact
``summary`` is sent whole at the end. SendStreamingMessage and SubscribeToTask show the
chunks as they are produced; GetTask shows the assembled artifact.
"""

from __future__ import annotations

import asyncio

from accord.agents import RequestContext, TaskHandle

DELAY_S = 0.05  # between chunks, to make the streaming visible


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    words = ctx.text.split() or ["(nothing)"]
    await task.start_working(f"shouting {len(words)} words")
    artifact_id = None
    for index, word in enumerate(words):
        artifact_id = await task.update_artifact(
            text=word.upper() + (" " if index < len(words) - 1 else ""),
            artifact_id=artifact_id,
            name="shout",
            append=index > 0,
            last_chunk=index == len(words) - 1,
        )
        await asyncio.sleep(DELAY_S)
    await task.update_artifact(text=f"{len(words)} words", name="summary", last_chunk=True)
    await task.complete()
