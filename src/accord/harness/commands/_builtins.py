"""The built-in commands and the built-in role policy.

Each body is a pure function of the ``command.invoked`` context: it reads the task's
snapshot and answers a :class:`CommandResult` whose changes (``settings``, ``spawn``) the
harness then checks and makes. They are registered at the body priority, so any executor
that answers first, or a plugin command of the same name, replaces one.

The role policy is a ``pre`` executor at priority 100: a sender with no role on the task
runs nothing, and a watcher runs only what reads the task (``/model`` and ``/effort``
without an argument, ``/status``, ``/help``). An operator tightens it with a ``pre`` of
their own.
"""

from __future__ import annotations

from typing import Any, get_args

from accord.harness._wire import Effort, Role
from accord.harness.commands._registry import CommandRegistry
from accord.harness.commands._spec import Argument, CommandSpec
from accord.harness.hooks._base import BODY_PRIORITY, FunctionExecutor, HookAbort
from accord.harness.hooks._operations import (
    COMMAND_INVOKED,
    ChildSnapshot,
    CommandInvoked,
    CommandResult,
    CommandSettings,
    SpawnIntent,
    TokenCounts,
)

EFFORTS: tuple[str, ...] = get_args(Effort)
ROLE_POLICY_PRIORITY = 100


def builtin_specs(selectable: tuple[str, ...]) -> tuple[CommandSpec, ...]:
    """``/model``, ``/effort``, ``/sub-task``, ``/retry``, ``/status`` and ``/help``;
    ``/model`` takes one of ``selectable`` (the ``[harness]`` model and its ``models``
    allowlist)."""
    return (
        CommandSpec(
            "model",
            "Show or choose this task's model",
            "[<model>]",
            (Argument("name", choices=selectable),),
            "with-arguments",
        ),
        CommandSpec(
            "effort",
            "Show or set this task's reasoning effort",
            "[low|medium|high]",
            (Argument("level", choices=EFFORTS),),
            "with-arguments",
        ),
        CommandSpec(
            "sub-task",
            "Start a linked sub-task",
            "<description>",
            (Argument("description", required=True, rest=True),),
            "always",
        ),
        CommandSpec("retry", "Run again the turn the model failed", "", (), "always"),
        CommandSpec("status", "Show this task's status", "", (), "never"),
        CommandSpec("help", "List the commands you may run", "", (), "never"),
    )


def register_builtins(
    commands: CommandRegistry, default_model: str, selectable: tuple[str, ...]
) -> None:
    """The built-in commands (at the body priority) and the role policy."""
    register_role_policy(commands)
    model, effort, sub_task, retry, status, help_ = builtin_specs(selectable)

    def model_body(context: CommandInvoked) -> CommandResult:
        chosen = context.args.get("name")
        if chosen is None:
            line = _model_line(context, default_model)
            return CommandResult(reply=f"{line}\nSelectable: {', '.join(selectable)}")
        return CommandResult(
            reply=f"Model set to {chosen}.", settings=CommandSettings(model=chosen)
        )

    def status_body(context: CommandInvoked) -> CommandResult:
        return CommandResult(reply=status_text(context, default_model))

    def help_body(context: CommandInvoked) -> CommandResult:
        return CommandResult(reply=help_text(commands, context.sender_role))

    for spec, body in (
        (model, model_body),
        (effort, effort_body),
        (sub_task, sub_task_body),
        (retry, retry_body),
        (status, status_body),
        (help_, help_body),
    ):
        commands.register(spec, body, priority=BODY_PRIORITY, default=True)


def effort_body(context: CommandInvoked) -> CommandResult:
    level = context.args.get("level")
    if level is None:
        return CommandResult(reply=f"{_effort_line(context)}\nAccepted: {', '.join(EFFORTS)}")
    return CommandResult(
        reply=f"Effort set to {level}.", settings=CommandSettings(reasoning_effort=level)
    )


def sub_task_body(context: CommandInvoked) -> CommandResult:
    return CommandResult(
        reply="Starting a sub-task.", spawn=SpawnIntent(goal=context.args["description"])
    )


def retry_body(context: CommandInvoked) -> CommandResult:
    """The last turn again, only when a model's failure ended it."""
    if context.task.failure is None:
        return CommandResult(
            reply="Nothing to retry: /retry runs the last turn again only when the model "
            "failed it, and this task's last turn did not fail."
        )
    return CommandResult(reply="Running the last turn again.", retry=True)


def status_text(context: CommandInvoked, default_model: str) -> str:
    task = context.task
    state = f"{task.state} · {task.sub_state}" if task.sub_state else task.state
    people = ", ".join(f"{p.id} ({p.role})" for p in task.participants) or "none"
    plan = f"{task.steps_done}/{task.steps_total} steps done" if task.steps_total else "none"
    lines = [
        f"Task {task.id} · {task.name}",
        f"State: {state}",
        f"Participants: {people}",
        _model_line(context, default_model),
        _effort_line(context),
        f"Plan: {plan}",
        f"Tokens, last turn: {_tokens(task.usage_last_turn)}",
        f"Tokens, conversation: {_tokens(task.usage_total)}",
    ]
    if task.children:
        lines.append("Sub-tasks:")
        lines.extend(_child_line(child) for child in task.children)
    else:
        lines.append("Sub-tasks: none")
    return "\n".join(lines)


def _tokens(counts: TokenCounts | None) -> str:
    """``1,234 in (1,000 cached) · 56 out``; ``none`` before a model call."""
    if counts is None:
        return "none"
    return (
        f"{counts.input_tokens:,} in ({counts.cached_tokens:,} cached)"
        f" · {counts.output_tokens:,} out"
    )


def _child_line(child: ChildSnapshot) -> str:
    """A sub-task: its id, the agent it runs on, its state and sub-state."""
    where = child.agent or "this agent"
    state = f"{child.state} · {child.sub_state}" if child.sub_state else child.state
    return f"- {child.task_id} · {where} · {state}"


def help_text(commands: CommandRegistry, role: Role | None) -> str:
    allowed = [spec for spec in commands.specs if may_run(spec, role)]
    if not allowed:
        return "You may run no command on this task."
    lines = [f"{spec.usage} — {spec.description}" for spec in allowed]
    return "Commands you may run:\n" + "\n".join(lines)


def may_run(spec: CommandSpec, role: Role | None) -> bool:
    """Whether the role policy lets ``role`` run ``spec`` at all."""
    return role is not None and (role is not Role.WATCHER or spec.changes != "always")


def register_role_policy(commands: CommandRegistry) -> None:
    async def policy(point: str, context: Any) -> None:
        if not isinstance(context, CommandInvoked):
            return
        if context.sender_role is None:
            raise HookAbort("the sender has no role on this task")
        spec = commands.spec(context.name)
        if context.sender_role is Role.WATCHER and (
            spec is None or spec.changes_with(context.arguments)
        ):
            what = "with an argument" if spec and spec.changes == "with-arguments" else ""
            raise HookAbort(
                f"a watcher may only run commands that read the task, not /{context.name}"
                + (f" {what}" if what else "")
            )

    commands.hooks.register(
        FunctionExecutor(
            "command.role-policy",
            policy,
            priority=ROLE_POLICY_PRIORITY,
            points=(COMMAND_INVOKED.points[0],),
        )
    )


def _model_line(context: CommandInvoked, default_model: str) -> str:
    chosen = context.task.settings.model
    return f"Model: {chosen}" if chosen else f"Model: {default_model} (default)"


def _effort_line(context: CommandInvoked) -> str:
    chosen = context.task.settings.reasoning_effort
    return f"Effort: {chosen}" if chosen else "Effort: provider default"
