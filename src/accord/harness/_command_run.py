"""Running a command on a task: ``command.invoked``, then its answer.

``pre`` (the role policy at 100, and whatever else is hooked) may replace the call or
refuse it; the arguments are then checked against the command's declaration; ``in`` is the
body (the command's own executor: a built-in, a plugin's, a remote one); ``post`` may
replace the result. The harness then checks the changes the result asks for (a model from
the allowlist, an effort that is one), makes them (a child conversation is created first),
and replies. A refusal, bad arguments or a refused change reply saying why and change
nothing; the reply is always a status update in the task's unchanged state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import msgspec

from accord.agents import AgentError, ExecutorFunction, RequestContext, TaskHandle
from accord.harness import _usage as usage
from accord.harness._children import children_read
from accord.harness._moves import Moves, Who
from accord.harness._wire import TaskExtension, TaskRef, ref_sub_state
from accord.harness.commands._answers import Change, answer, settings_change
from accord.harness.commands._parse import CommandCall
from accord.harness.commands._registry import CommandRegistry
from accord.harness.commands._spec import ArgumentError, check_arguments
from accord.harness.core._delegation import Observed, observed
from accord.harness.core._failure import failure_of
from accord.harness.core._identity import claimed
from accord.harness.core._state import extension_of, sub_state_of
from accord.harness.core._subtasks import state_name
from accord.harness.delegation._spawner import Delegation, DelegationError
from accord.harness.hooks._base import HookAbort
from accord.harness.hooks._operations import (
    COMMAND_INVOKED,
    ChildSnapshot,
    CommandInvoked,
    CommandResult,
    CommandSettings,
    TaskSnapshot,
    TokenCounts,
)
from accord.harness.models import Usage
from accord.wire import Task


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    change: Change | None = None
    task_ref: str | None = None


class CommandRunner:
    def __init__(
        self,
        commands: CommandRegistry,
        moves: Moves,
        delegation: Delegation,
        selectable: tuple[str, ...],
    ) -> None:
        self.commands = commands
        self.hooks = commands.hooks
        self.moves = moves
        self.delegation = delegation
        self.selectable = selectable
        # Runs the task's last turn again (the agent's; /retry)
        self.retry: ExecutorFunction | None = None

    async def run(self, ctx: RequestContext, task: TaskHandle, call: CommandCall) -> None:
        current = await task.current()
        extension = extension_of(current)
        if extension is None:  # (intake lets no command through to a task not the harness's)
            return
        who = Who.on(extension, claimed(ctx.message) or "", ctx.message.message_id)
        seen, children = await children_read(task, current, extension)
        context = CommandInvoked(
            **who.fields(current.id),
            name=call.name,
            arguments=call.arguments,
            task=snapshot(current, seen, children),
        )
        result = await self._invoke(context)
        if not isinstance(result, str) and result.retry:
            if failure_of(await task.current()) is None:  # (a plugin's body asked it)
                result = "Nothing to retry: the task's last turn did not fail."
            elif self.retry is None:
                result = "/retry cannot run here"
            else:
                await self.retry(ctx, task)
                return
        if isinstance(result, str):
            done = Answer(result)
        else:
            done = await self._apply(task, current, extension, result, who)
        decision = partial(
            answer, text=done.text, command=call.name, task_ref=done.task_ref, change=done.change
        )
        await self.moves.decide(task, decision, who)

    async def _invoke(self, context: CommandInvoked) -> CommandResult | str:
        """The result, or the reply's text when there is none to apply."""
        pre, body, post = COMMAND_INVOKED.points
        try:
            context = await self.hooks.run(pre, context)
            spec = self.commands.spec(context.name)
            if spec is not None:
                try:
                    args = check_arguments(spec, context.arguments)
                except ArgumentError as exc:
                    return str(exc)
                context = msgspec.structs.replace(context, args=args)
            context = await self.hooks.run(body, context)
            context = await self.hooks.run(post, context)
        except HookAbort as abort:
            return str(abort)
        if context.result is None:
            return f"/{context.name} has no handler"
        return context.result

    async def _apply(
        self,
        task: TaskHandle,
        current: Task,
        extension: TaskExtension,
        result: CommandResult,
        who: Who,
    ) -> Answer:
        changes: list[Change] = []
        if result.settings is not None and result.settings != CommandSettings():
            try:
                changes.append(settings_change(result.settings, self.selectable))
            except ValueError as exc:
                return Answer(f"invalid: {exc}")
        text = result.reply
        task_ref = None
        if result.spawn is not None:
            try:
                child = await self.delegation.open_conversation(task, who, result.spawn.goal)
            except (AgentError, DelegationError) as exc:
                return Answer(f"{result.reply}\nThe sub-task could not be created: {exc}")
            task_ref = child.id
            changes.append(partial(_linked, child=child))
            text = (text + "\n" if text else "") + f"Created sub-task {child.id}."
        return Answer(text, _combined(changes) if changes else None, task_ref)


def snapshot(
    task: Task, extension: TaskExtension, children: Mapping[str, Observed] | None = None
) -> TaskSnapshot:
    """The task as commands see it; ``children`` (read now, by id) give the sub-tasks' own
    sub-states (``awaiting-subtasks`` too), else their references' are shown."""
    read = children or {}
    steps = extension.plan.steps if extension.plan is not None else ()
    last = usage.last_turn(task)
    return TaskSnapshot(
        id=task.id,
        name=extension.name,
        state=state_name(task.status.state),
        sub_state=sub_state_of(task),
        settings=CommandSettings(
            model=extension.model, reasoning_effort=extension.reasoning_effort
        ),
        steps_done=sum(1 for step in steps if step.state == "done"),
        steps_total=len(steps),
        children=tuple(
            ChildSnapshot(
                task_id=ref.task_id,
                state=ref.state or "UNKNOWN",
                agent=ref.agent.id if ref.agent is not None else None,
                sub_state=read[ref.task_id].sub_state if ref.task_id in read else ref.sub_state,
            )
            for ref in extension.sub_tasks
        ),
        participants=extension.participants,
        failure=failure_of(task),
        usage_last_turn=None if last is None else _counts(last),
        usage_total=_counts(usage.totals(task)),
    )


def _counts(used: Usage) -> TokenCounts:
    return TokenCounts(
        input_tokens=used.input_tokens,
        output_tokens=used.output_tokens,
        cached_tokens=used.cached_tokens,
    )


def _linked(extension: TaskExtension, child: Task) -> TaskExtension:
    """The parent's reference to its new child, as the child stands (parked); in place of
    a spawn's reservation of the same id, which gave the id up on finding it taken."""
    seen = observed(child)
    ref = TaskRef(task_id=child.id, state=seen.state, sub_state=ref_sub_state(seen.sub_state))
    others = tuple(r for r in extension.sub_tasks if r.task_id != child.id)
    return msgspec.structs.replace(extension, sub_tasks=(*others, ref))


def _combined(changes: list[Change]) -> Change:
    def change(extension: TaskExtension) -> TaskExtension:
        for step in changes:
            extension = step(extension)
        return extension

    return change
