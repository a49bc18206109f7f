"""What a hook is: a named operation's phase, the context an executor gets, and how it
answers.

Every operation the harness performs (a command, a turn, a completion …) has three phases,
``pre``, ``in`` and ``post``; a hook point is ``<operation>.<phase>``
(``command.invoked.pre``). An executor registered on a point is one link of that point's
chain: it gets the context the link before it returned, and returns a replacement of the
same type, or None to pass it on. ``pre`` replaces the operation's input, ``in`` is its body
(the built-in bodies sit at :data:`BODY_PRIORITY` and skip when a lower one already
answered), ``post`` replaces its output. Raising :class:`HookAbort` cancels the operation;
each operation turns that into its documented refusal.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar, Protocol, runtime_checkable

import msgspec

from accord.errors import AccordError
from accord.harness._wire import Role

BODY_PRIORITY = 1000  # the built-in ``in`` bodies: a lower priority answers first
DEFAULT_PRIORITY = 500  # hooks.json entries and code registrations without one


class Phase(enum.StrEnum):
    PRE = "pre"
    IN = "in"
    POST = "post"


PHASES: tuple[Phase, ...] = (Phase.PRE, Phase.IN, Phase.POST)


def point(operation: str, phase: Phase | str) -> str:
    """The hook point of ``operation``'s ``phase``: ``"command.invoked.pre"``."""
    return f"{operation}.{phase}"


def split_point(name: str) -> tuple[str, Phase]:
    """``"command.invoked.pre"`` -> ("command.invoked", Phase.PRE); ValueError otherwise."""
    operation, _, phase = name.rpartition(".")
    if not operation or phase not in Phase.__members__.values():
        raise ValueError(f"{name!r} is not a hook point (<operation>.pre, .in or .post)")
    return operation, Phase(phase)


class AbortReason(enum.StrEnum):
    REFUSED = "refused"
    POLICY = "policy"
    INVALID = "invalid"


class HookAbort(AccordError):
    """Raised by an executor to cancel the operation, with a reason and a message a
    participant may read (it is shown in the refusal)."""

    def __init__(self, message: str, reason: AbortReason | str = AbortReason.REFUSED) -> None:
        super().__init__(message)
        self.message = message
        self.reason = AbortReason(reason)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


class HookFailure(HookAbort):
    """An executor failed (a remote one unreachable, timed out or answering nonsense; a
    local one raising): the operation is refused naming the hook, never passed silently."""

    def __init__(self, hook: str, detail: str) -> None:
        super().__init__(f"hook {hook!r} failed: {detail}", AbortReason.REFUSED)
        self.hook = hook
        self.detail = detail


class Context(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """The base of every operation's context: plain data (it travels to remote executors as
    JSON and comes back the same way), naming the task and who the operation is for."""

    # The fields every replacement keeps: they say what happened, not what to do.
    FACTS: ClassVar[tuple[str, ...]] = ("task_id", "sender", "sender_role")

    task_id: str
    # The id of what started the operation (the participant's message, mostly).
    correlation_id: str = ""
    attempt: int = 1
    sender: str
    sender_role: Role | None = None


Answer = Context | None


@runtime_checkable
class Executor(Protocol):
    """One link of a hook point's chain. ``points`` lists the points it runs on (None: every
    point)."""

    @property
    def name(self) -> str: ...

    @property
    def priority(self) -> int: ...

    @property
    def points(self) -> frozenset[str] | None: ...

    async def handle(self, point: str, context: Any) -> Any: ...


Handler = Callable[[str, Any], Awaitable[Any] | Any]


class Registration:
    """What every executor says of itself: its name, priority and points (None: all)."""

    def __init__(self, name: str, priority: int, points: Iterable[str] | None) -> None:
        self._name = name
        self._priority = priority
        self._points = None if points is None else frozenset(points)

    @property
    def name(self) -> str:
        return self._name

    @property
    def priority(self) -> int:
        return self._priority

    @property
    def points(self) -> frozenset[str] | None:
        return self._points


class FunctionExecutor(Registration):
    """An executor around a function ``handler(point, context)``, sync or async, returning
    a replacement context or None."""

    def __init__(
        self,
        name: str,
        handler: Handler,
        *,
        priority: int = DEFAULT_PRIORITY,
        points: Iterable[str] | None = None,
    ) -> None:
        super().__init__(name, priority, points)
        self._handler = handler

    async def handle(self, point: str, context: Any) -> Any:
        answer = self._handler(point, context)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer


class Reprioritised(Registration):
    """An executor with the name, priority and points a registration gives it (a hooks.json
    entry naming an executor by its import path)."""

    def __init__(
        self, inner: Executor, name: str, priority: int, points: Iterable[str] | None
    ) -> None:
        super().__init__(name, priority, points)
        self._inner = inner

    async def handle(self, point: str, context: Any) -> Any:
        return await self._inner.handle(point, context)
