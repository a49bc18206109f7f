"""A participant's completion: ``task.complete``.

The sub-tasks' states are read first (a child completed or canceled by anyone counts as
ended). ``pre`` may replace what is asked or refuse; ``in`` decides (``result``: complete,
wait or fail, and a ``reason``): the built-in body, at the body priority, waits while any
sub-task is unresolved, and a lower-priority executor that answers first overrides that
rule; ``post`` may replace the decision. Anything but ``complete`` — an abort included —
parks the task again with "completion refused: <reason>".
"""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec

from accord.agents import ExecutorFunction, RequestContext, TaskHandle
from accord.harness._children import with_children_read
from accord.harness._moves import Moves, Who
from accord.harness.core import _conversation as conversation
from accord.harness.core._state import extension_of
from accord.harness.core._subtasks import unresolved
from accord.harness.hooks._base import BODY_PRIORITY, FunctionExecutor, HookAbort
from accord.harness.hooks._operations import TASK_COMPLETE, TaskComplete
from accord.harness.hooks._registry import Hooks


def register_unresolved_rule(hooks: Hooks) -> None:
    """The built-in body of ``task.complete``: wait while a sub-task is unresolved."""

    def rule(point: str, context: Any) -> TaskComplete | None:
        if not isinstance(context, TaskComplete) or context.result is not None:
            return None
        if context.unresolved:
            waiting = [ref.task_id for ref in context.unresolved]
            return msgspec.structs.replace(
                context, result="wait", reason=conversation.waiting_reason(waiting)
            )
        return msgspec.structs.replace(context, result="complete")

    hooks.register(
        FunctionExecutor(
            "task.complete.unresolved-rule",
            rule,
            priority=BODY_PRIORITY,
            points=(TASK_COMPLETE.points[1],),
        )
    )


class Completion:
    def __init__(self, hooks: Hooks, moves: Moves) -> None:
        self.hooks = hooks
        self.moves = moves

    def handler(self, requested_by: str) -> ExecutorFunction:
        async def complete(ctx: RequestContext, task: TaskHandle) -> None:
            await self.run(ctx, task, requested_by)

        return complete

    async def run(self, ctx: RequestContext, task: TaskHandle, requested_by: str) -> None:
        current = await task.current()
        extension = extension_of(current)
        who = Who.on(extension, requested_by, ctx.message.message_id)
        if extension is None:
            await self.moves.decide(
                task, partial(conversation.complete, requested_by=requested_by), who
            )
            return
        seen = await with_children_read(task, current, extension)
        context = TaskComplete(
            **who.fields(current.id), unresolved=unresolved(seen), requested_by=requested_by
        )
        try:
            context = await self.hooks.perform(TASK_COMPLETE, context)
            decision = context.result or "complete"
            reason = context.reason or "a hook decided so"
        except HookAbort as abort:
            decision, reason = "fail", abort.message
        settled = partial(
            conversation.settle,
            requested_by=requested_by,
            decision=decision,
            reason=reason,
            sub_tasks=seen.sub_tasks,
        )
        await self.moves.decide(task, settled, who)
