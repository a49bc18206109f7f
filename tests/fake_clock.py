"""Time a test moves by hand: a clock in milliseconds and a ``sleep`` that ends only when the
test advances past it, for code that takes an injectable clock and sleep (such as
accord.push._worker's durable worker)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable


async def settle(rounds: int = 50) -> None:
    """Let every task that can run without time passing run (the event loop's ready
    callbacks, a few rounds deep)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def until(condition: Callable[[], bool], rounds: int = 1000) -> None:
    """Run the loop until ``condition`` holds, without time passing (AssertionError when it
    does not come true)."""
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never came true while time stood still")


class FakeClock:
    """``clock()`` is the time in milliseconds; ``await clock.sleep(s)`` returns once
    :meth:`advance` moves the time past its end."""

    def __init__(self, start_ms: int = 1_000_000) -> None:
        self._now = float(start_ms)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> int:
        return int(self._now)

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        due = self._now + max(seconds, 0.0) * 1000
        heapq.heappush(self._sleepers, (due, next(self._order), future))
        await future

    @property
    def sleeping(self) -> int:
        """Sleeps not over yet (a cancelled one is over)."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

    async def advance(self, seconds: float) -> None:
        """Move the time on by ``seconds``, waking each sleep at its end in order (and letting
        what it wakes run before the next one)."""
        end = self._now + seconds * 1000
        while self._sleepers and self._sleepers[0][0] <= end:
            due, _, future = heapq.heappop(self._sleepers)
            if future.done():
                continue
            self._now = max(self._now, due)
            future.set_result(None)
            await settle()
        self._now = end
        await settle()
