"""A multi-turn agent: it asks for what it is missing (INPUT_REQUIRED) and finishes when the
client answers in the same task.

    accord serve --agent examples.multi_turn:agent --store memory://

Send "book a table"; the task stops in INPUT_REQUIRED asking how many people. Send the
number as a new message with the task's ``taskId``: the task completes with a booking.
Anything that is not a number gets asked again.
"""

from __future__ import annotations

from accord.agents import RequestContext, TaskHandle


async def agent(ctx: RequestContext, task: TaskHandle) -> None:
    if ctx.task is None:  # the first message: a new task
        await task.start_working()
        await task.require_input("For how many people?")
        return
    # A follow-up: ctx.task is the task as it stood, its history ends with this message.
    # An interrupted task resumes with WORKING before anything else.
    await task.start_working()
    answer = ctx.text.strip()
    if not answer.isdigit() or int(answer) < 1:
        await task.require_input(f"{answer!r} is not a number of people. How many?")
        return
    await task.update_artifact(
        text=f"table for {int(answer)} booked", name="booking", last_chunk=True
    )
    await task.complete()
