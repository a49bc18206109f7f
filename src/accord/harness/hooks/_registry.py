"""The hook registry: executors by point, in order, and running a point's chain.

Executors run by priority (ascending), then in registration order. The registry is frozen
before the harness serves; from then on each point's chain is a tuple computed once, and an
operation nobody hooked costs one set lookup (:meth:`Hooks.wants`): its context is never
even built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import msgspec

from accord.errors import AccordError
from accord.harness.hooks._base import (
    DEFAULT_PRIORITY,
    PHASES,
    Context,
    Executor,
    FunctionExecutor,
    Handler,
    HookAbort,
    HookFailure,
    point,
    split_point,
)
from accord.harness.hooks._operations import OPERATIONS, Operation
from accord.telemetry import agents as telemetry

log = logging.getLogger("accord.harness.hooks")

C = TypeVar("C", bound=Context)


class FrozenError(AccordError, RuntimeError):
    """A registration after the registry was frozen (the harness serves already)."""


class Hooks:
    def __init__(self) -> None:
        self._entries: list[Executor] = []
        self._chains: dict[str, tuple[Executor, ...]] = {}
        self._hooked: frozenset[str] | None = None  # operations with an executor, once frozen
        self.frozen = False

    # --- registering -----------------------------------------------------------------------

    def register(self, executor: Executor) -> Executor:
        """Add ``executor`` on its points (all of them when it names none). ValueError for a
        point of no known operation; FrozenError once the registry is frozen."""
        if self.frozen:
            raise FrozenError(f"hook {executor.name!r}: the hook registry is frozen")
        for name in sorted(executor.points or ()):
            check_point(name)
        self._entries.append(executor)
        self._chains.clear()
        return executor

    def on(
        self,
        *points: str,
        priority: int = DEFAULT_PRIORITY,
        name: str | None = None,
    ) -> Callable[[Handler], Handler]:
        """A decorator registering ``handler(point, context)`` on ``points`` (every point
        when none is given)::

            @agent.hooks.on("message.received.pre", priority=50)
            def no_shouting(point, context): ...
        """

        def register(handler: Handler) -> Handler:
            label = name or str(getattr(handler, "__qualname__", None) or repr(handler))
            self.register(
                FunctionExecutor(label, handler, priority=priority, points=points or None)
            )
            return handler

        return register

    def freeze(self) -> None:
        """No registration from here on; each operation's chains are settled."""
        if self.frozen:
            return
        self.frozen = True
        self._hooked = frozenset(
            name
            for name, operation in OPERATIONS.items()
            if any(self.chain(p) for p in operation.points)
        )

    # --- reading ---------------------------------------------------------------------------

    def chain(self, point_name: str) -> tuple[Executor, ...]:
        """The executors of a point, in running order."""
        chain = self._chains.get(point_name)
        if chain is None:
            indexed = [
                (executor.priority, order, executor)
                for order, executor in enumerate(self._entries)
                if executor.points is None or point_name in executor.points
            ]
            chain = self._chains[point_name] = tuple(e for _, _, e in sorted(indexed, key=_key))
        return chain

    def wants(self, operation: Operation) -> bool:
        """Whether any executor runs on a phase of ``operation`` (when none does, the
        harness skips it altogether)."""
        hooked = self._hooked
        if hooked is not None:
            return operation.name in hooked
        return any(self.chain(p) for p in operation.points)

    # --- running ---------------------------------------------------------------------------

    async def run(self, point_name: str, context: C) -> C:
        """Pass ``context`` down the point's chain: each executor gets what the one before it
        returned (None passes it on). An executor's HookAbort propagates; anything else it
        raises or returns amiss (another type, changed facts) is a HookFailure naming it."""
        current = context
        for executor in self.chain(point_name):
            try:
                answer: Any = await executor.handle(point_name, current)
                if answer is not None:
                    current = replacement(executor.name, current, answer)
            except HookAbort:
                telemetry.hook_aborted(executor.name)  # (accord_harness_hook_aborts_total)
                raise
            except Exception as exc:
                log.exception("hook %r failed on %s", executor.name, point_name)
                telemetry.hook_aborted(executor.name)
                raise HookFailure(executor.name, type(exc).__name__) from exc
        return current

    async def perform(self, operation: Operation, context: C) -> C:
        """All three phases in order, each on what the one before returned."""
        for point_name in operation.points:
            context = await self.run(point_name, context)
        return context


def replacement(hook: str, current: C, answer: Any) -> C:
    """``answer`` as the replacement of ``current``: the same type, well formed (a Struct is
    not checked when it is made: a field of the wrong type is refused here, not met later),
    the same facts."""
    kind = type(current)
    if type(answer) is not kind:
        raise HookFailure(hook, f"returned {type(answer).__name__}, not {kind.__name__}")
    try:
        checked: C = msgspec.convert(msgspec.to_builtins(answer), kind)
    except (msgspec.ValidationError, TypeError) as exc:
        raise HookFailure(hook, f"returned a malformed {kind.__name__}: {exc}") from None
    for fact in Context.FACTS:
        if getattr(checked, fact) != getattr(current, fact):
            raise HookFailure(hook, f"changed {fact}, which a hook may not")
    return checked


def check_point(name: str) -> None:
    """ValueError unless ``name`` is a phase of a registered operation."""
    operation, _ = split_point(name)
    if operation not in OPERATIONS:
        known = ", ".join(sorted(OPERATIONS))
        raise ValueError(f"{name!r}: no operation {operation!r} (known: {known})")


def all_points(operations: Iterable[Operation] | None = None) -> tuple[str, ...]:
    """Every point of ``operations`` (default: the whole catalogue)."""
    chosen = OPERATIONS.values() if operations is None else operations
    return tuple(point(o.name, phase) for o in chosen for phase in PHASES)


def _key(item: tuple[int, int, Executor]) -> tuple[int, int]:
    return item[0], item[1]
