"""The command registry: each command's spec (the card's entry, its arguments) and its body,
an ``in`` executor of ``command.invoked`` that runs for that command only.

Code registers a command with :meth:`CommandRegistry.register` (a handler of the context) or
:meth:`~CommandRegistry.register_executor` (any executor: a plugin's, a remote one). Every
body is wrapped so that it sees only its own command and only while no executor before it
answered: a lower priority answers first, and the built-ins sit at the body priority
(1000). ``replace`` swaps a command already registered (a plugin replacing a built-in):
the earlier body retires, the name keeps its place on the card. The registry is frozen
before the harness serves.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from accord.harness.commands._spec import CommandSpec
from accord.harness.hooks._base import DEFAULT_PRIORITY, Executor, FunctionExecutor
from accord.harness.hooks._operations import COMMAND_INVOKED, CommandInvoked, CommandResult
from accord.harness.hooks._registry import FrozenError, Hooks

COMMAND_IN = COMMAND_INVOKED.points[1]

CommandHandler = Callable[[CommandInvoked], CommandResult | str | Awaitable[CommandResult | str]]


class _Body:
    """``inner``, run only on an unanswered ``command.invoked.in`` for ``command``."""

    def __init__(self, command: str, inner: Executor) -> None:
        self.command = command
        self.inner = inner
        self.retired = False

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def priority(self) -> int:
        return self.inner.priority

    @property
    def points(self) -> frozenset[str]:
        return frozenset({COMMAND_IN})

    async def handle(self, point: str, context: Any) -> Any:
        if (
            self.retired
            or not isinstance(context, CommandInvoked)
            or context.name != self.command
            or context.result is not None
        ):
            return None
        return await self.inner.handle(point, context)


class CommandRegistry:
    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks
        self._specs: dict[str, CommandSpec] = {}
        self._bodies: dict[str, _Body] = {}
        self._defaults: set[str] = set()  # names whose command is a default (a built-in)
        self.frozen = False

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._specs)

    @property
    def specs(self) -> tuple[CommandSpec, ...]:
        """In registration order."""
        return tuple(self._specs.values())

    def spec(self, name: str) -> CommandSpec | None:
        return self._specs.get(name)

    @property
    def defaults(self) -> frozenset[str]:
        """The commands registered as defaults (the built-ins) and not replaced since: a
        plugin's command of the same name replaces one."""
        return frozenset(self._defaults)

    def register(
        self,
        spec: CommandSpec,
        handler: CommandHandler,
        *,
        priority: int = DEFAULT_PRIORITY,
        replace: bool = False,
        default: bool = False,
    ) -> None:
        """``handler(context)`` answers ``/<spec.name>``: a CommandResult, or the reply's
        text (sync or async). ``default``: a built-in, which a plugin may replace."""

        async def body(point: str, context: CommandInvoked) -> CommandInvoked:
            answer = handler(context)
            if inspect.isawaitable(answer):
                answer = await answer
            result = CommandResult(reply=answer) if isinstance(answer, str) else answer
            if not isinstance(result, CommandResult):
                raise TypeError(f"command /{spec.name} answered {type(result).__name__}")
            return msgspec.structs.replace(context, result=result)

        executor = FunctionExecutor(
            f"command:{spec.name}", body, priority=priority, points=(COMMAND_IN,)
        )
        self.register_executor(spec, executor, replace=replace, default=default)

    def register_executor(
        self,
        spec: CommandSpec,
        executor: Executor,
        *,
        replace: bool = False,
        default: bool = False,
    ) -> None:
        """``executor`` (local or remote) answers ``/<spec.name>``; ValueError when the
        name is taken and ``replace`` is not given."""
        if self.frozen:
            raise FrozenError(f"command /{spec.name}: the command registry is frozen")
        if spec.name in self._specs and not replace:
            raise ValueError(f"command /{spec.name} is registered already")
        body = _Body(spec.name, executor)
        self.hooks.register(body)
        previous = self._bodies.get(spec.name)
        if previous is not None:
            previous.retired = True
        self._specs[spec.name] = spec  # a replacement keeps the name's place
        self._bodies[spec.name] = body
        if default:
            self._defaults.add(spec.name)
        else:
            self._defaults.discard(spec.name)

    def freeze(self) -> None:
        self.frozen = True

    def card_params(self) -> dict[str, Any]:
        """The commands extension's params on the agent card."""
        return {"commands": [spec.card_entry() for spec in self._specs.values()]}
