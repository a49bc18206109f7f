"""The in-process bus: a wake-up flag per subscription, set on every append.

A follower calls ``clear()`` *before* reading the log and ``wait()`` only when the read found
nothing; a notification arriving in between sets the flag again, so no wake-up is lost.
Notifying is O(subscribers of that task) and never blocks the writer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Subscription:
    """One follower's wake-ups. A follower waits on it from one coroutine at a time."""

    __slots__ = ("_bus", "_waiter", "_woken", "task_id")

    def __init__(self, bus: LocalBus, task_id: str) -> None:
        self._bus = bus
        self._woken = False
        self._waiter: asyncio.Future[bool] | None = None
        self.task_id = task_id

    def clear(self) -> None:
        self._woken = False

    def wake(self) -> None:
        self._woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    async def wait(self, timeout: float | None = None) -> bool:
        """True when woken, False on timeout.

        A future and a timer rather than ``asyncio.wait_for`` on an ``asyncio.Event``: that
        runs the wait in a task of its own, a cost paid by every streamed turn."""
        if self._woken:
            return True
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            woken: bool = await waiter
            return woken
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def close(self) -> None:
        self._bus._remove(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class LocalBus:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}

    def subscribe(self, task_id: str) -> Subscription:
        subscription = Subscription(self, task_id)
        self._subscribers.setdefault(task_id, set()).add(subscription)
        return subscription

    def notify(self, task_id: str) -> None:
        for subscription in self._subscribers.get(task_id, ()):
            subscription.wake()

    def subscriber_count(self, task_id: str) -> int:
        return len(self._subscribers.get(task_id, ()))

    def subscriber_total(self) -> int:
        """Every follower of every task in this process (for metrics)."""
        return sum(len(subscribers) for subscribers in self._subscribers.values())

    async def ping(self) -> None:
        """Raise when the bus cannot wake followers now (readiness probes); an in-process
        bus always can."""

    def add_remote_listener(self, listener: Callable[[str | None], None]) -> None:
        """Call ``listener(task_id)`` when another node changes a task: an in-process bus
        has no other node, so never."""

    def _remove(self, subscription: Subscription) -> None:
        subs = self._subscribers.get(subscription.task_id)
        if subs is not None:
            subs.discard(subscription)
            if not subs:
                del self._subscribers[subscription.task_id]
