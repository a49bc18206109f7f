"""The A2A 1.1 preview (``a2a_preview = ["1.1"]``; docs/preview-1.1.md), as every binding
gets it: what the specification's ``dev-1.1`` branch adds to the operations.

- **Generations.** New tasks count them (the engine's ``generations``): ``Task.generation``
  starts at 1 and every event that streams carry adds one, which the event carries.
- **Long-polling GetTask.** ``currentGeneration`` holds the request until the task's
  generation is past it, at most ``long_poll_max_s``; then it answers the task as it is. A
  waiting request holds a bus subscription (a future and a timer), never a thread or a
  database connection; past ``long_poll_max_waiting`` of them, GetTask answers at once.
- **ifGenerationMatch.** A message continuing a task at another generation is refused with
  TaskGenerationMismatchError (the core's decision).

Without the preview the request fields are dropped before anything reads them, so accord
answers as A2A 1.0 does: no field of it is read or emitted.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import msgspec

from accord.core import Caller
from accord.engine import Engine
from accord.wire import UNSET, GetTaskRequest, SendMessageRequest, Task


@dataclass
class Preview:
    generations: bool = False
    long_poll_max_s: float = 30.0
    long_poll_max_waiting: int = 1000
    waiting: int = field(default=0, init=False)  # long-polling GetTasks held now


def without_preview(request: SendMessageRequest) -> SendMessageRequest:
    """The request as A2A 1.0 reads it: without ``ifGenerationMatch``."""
    configuration = request.configuration
    if configuration is UNSET or configuration.if_generation_match is UNSET:
        return request
    plain = msgspec.structs.replace(configuration, if_generation_match=UNSET)
    return msgspec.structs.replace(request, configuration=plain)


def _generation(task: Task) -> int:
    return task.generation if task.generation is not UNSET else 0


async def long_poll(
    preview: Preview,
    engine: Engine,
    request: GetTaskRequest,
    caller: Caller,
    history_length: int | None,
) -> Task:
    """GetTask with ``currentGeneration``: the task once its generation is past it, or as it
    is after ``long_poll_max_s`` (or at once, with too many waiting already)."""
    after = request.current_generation
    assert after is not UNSET
    task = await engine.get_task(request.id, caller, history_length)
    if _generation(task) > after or preview.waiting >= preview.long_poll_max_waiting:
        return task
    loop = asyncio.get_running_loop()
    deadline = loop.time() + preview.long_poll_max_s
    preview.waiting += 1
    try:
        with engine.bus.subscribe(request.id) as woken:
            while True:
                woken.clear()  # before the read: a change after it wakes the wait below
                task = await engine.get_task(request.id, caller, history_length)
                left = deadline - loop.time()
                if _generation(task) > after or left <= 0:
                    return task
                if not await woken.wait(left):
                    return await engine.get_task(request.id, caller, history_length)
    finally:
        preview.waiting -= 1
