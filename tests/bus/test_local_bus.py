"""The in-process bus: what a follower relies on — no wake-up lost between its read and its
wait, a timeout that says so, and nothing left behind when it stops following."""

from __future__ import annotations

import asyncio

from accord.bus._local import LocalBus, Subscription


async def _waiting(sub: Subscription, timeout: float) -> asyncio.Future[bool]:
    """A follower that has read the log and now waits on ``sub``."""
    sub.clear()
    waiting = asyncio.ensure_future(sub.wait(timeout=timeout))
    await asyncio.sleep(0)
    return waiting


async def test_a_wake_before_the_wait_is_not_lost() -> None:
    bus = LocalBus()
    with bus.subscribe("task-1") as sub:
        sub.clear()  # the follower is about to read the log
        bus.notify("task-1")  # an append lands meanwhile
        assert await sub.wait(timeout=5) is True  # at once, without waiting for the timeout


async def test_a_wait_ends_when_the_task_is_notified() -> None:
    bus = LocalBus()
    with bus.subscribe("task-1") as sub:
        waiting = await _waiting(sub, timeout=5)
        assert not waiting.done()
        bus.notify("task-2")  # another task's append wakes nobody here
        await asyncio.sleep(0)
        assert not waiting.done()
        bus.notify("task-1")
        assert await asyncio.wait_for(waiting, 1) is True


async def test_a_wait_times_out_with_false_and_can_wait_again() -> None:
    bus = LocalBus()
    loop = asyncio.get_running_loop()
    with bus.subscribe("task-1") as sub:
        sub.clear()
        started = loop.time()
        assert await sub.wait(timeout=0.05) is False
        assert loop.time() - started >= 0.04
        bus.notify("task-1")  # after the timeout: counts for the next wait
        assert await sub.wait(timeout=5) is True
        sub.clear()
        assert await sub.wait(timeout=0.01) is False


async def test_a_cancelled_wait_does_not_swallow_the_next_wake_up() -> None:
    bus = LocalBus()
    with bus.subscribe("task-1") as sub:
        waiting = await _waiting(sub, timeout=0.05)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        bus.notify("task-1")  # wakes no future that nobody awaits any more
        await asyncio.sleep(0.1)  # a window: the timer, had it stayed, would have fired
        assert await sub.wait(timeout=5) is True
    assert bus.subscriber_count("task-1") == 0


async def test_every_subscriber_of_a_task_is_woken() -> None:
    bus = LocalBus()
    with bus.subscribe("task-1") as first, bus.subscribe("task-1") as second:
        assert bus.subscriber_count("task-1") == 2
        first.clear()
        second.clear()
        waits = asyncio.gather(first.wait(), second.wait(timeout=5))
        await asyncio.sleep(0)
        bus.notify("task-1")
        assert await asyncio.wait_for(waits, 1) == [True, True]
    assert bus.subscriber_count("task-1") == 0
