"""The in-process bus: one asyncio.Event per subscription, set on every append.

A follower calls ``clear()`` *before* reading the log and ``wait()`` only when the read found
nothing; a notification arriving in between sets the event again, so no wake-up is lost.
Notifying is O(subscribers of that task) and never blocks the writer.
"""

from __future__ import annotations

import asyncio


class Subscription:
    __slots__ = ("_bus", "_event", "task_id")

    def __init__(self, bus: LocalBus, task_id: str) -> None:
        self._bus = bus
        self._event = asyncio.Event()
        self.task_id = task_id

    def clear(self) -> None:
        self._event.clear()

    def wake(self) -> None:
        self._event.set()

    async def wait(self, timeout: float | None = None) -> bool:
        """True when woken, False on timeout."""
        if timeout is None:
            await self._event.wait()
            return True
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        self._bus._remove(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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

    def _remove(self, subscription: Subscription) -> None:
        subs = self._subscribers.get(subscription.task_id)
        if subs is not None:
            subs.discard(subscription)
            if not subs:
                del self._subscribers[subscription.task_id]
