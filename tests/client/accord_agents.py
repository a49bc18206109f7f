"""Agents for ``accord serve`` in the client's interop tests (``--agent accord_agents:slow_echo``).

``slow_echo`` answers a text T with ``echo: T`` like the built-in echo agent, but:
``slow`` waits 60 s before answering (long enough to cancel it), ``slow:<s>`` waits s seconds,
``chunks:<n>`` sends the answer as n artifact chunks 0.3 s apart (a stream worth breaking),
``fail`` fails the task, and ``ask`` asks for more (INPUT_REQUIRED: the next message to the
task is answered the same way, ``ask`` asking again).
"""

from __future__ import annotations

import asyncio

from accord.agents._api import RequestContext, TaskHandle


async def slow_echo(ctx: RequestContext, task: TaskHandle) -> None:
    text = ctx.text
    await task.start_working()
    if text == "fail":
        await task.fail("asked to fail")
        return
    if text == "ask":
        await task.require_input("what else?")
        return
    if text.startswith("chunks:"):
        count = int(text.partition(":")[2])
        artifact_id = None
        for i in range(count):
            await asyncio.sleep(0.3)
            artifact_id = await task.update_artifact(
                text=f"chunk {i};",
                name="echo",
                artifact_id=artifact_id,
                append=i > 0,
                last_chunk=i == count - 1,
            )
        await task.complete()
        return
    if text.startswith("slow"):
        _, _, seconds = text.partition(":")
        await asyncio.sleep(float(seconds) if seconds else 60.0)
    await task.update_artifact(text=f"echo: {text}", name="echo", last_chunk=True)
    await task.complete()
