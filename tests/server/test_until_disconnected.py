"""``until_disconnected``: a streamed response runs until it ends or the client goes away,
and the request's task is left as it was found either way."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from accord.server._http import until_disconnected


class Client:
    """An ASGI ``receive`` whose client disconnects when told to."""

    def __init__(self) -> None:
        self.left = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.left.wait()
        return {"type": "http.disconnect"}


async def test_work_that_ends_returns_and_stops_the_watcher() -> None:
    client = Client()
    done: list[str] = []

    async def work() -> None:
        await asyncio.sleep(0)
        done.append("sent")

    before = len(asyncio.all_tasks())
    await until_disconnected(client.receive, work())
    assert done == ["sent"]
    await asyncio.sleep(0)  # the cancelled watcher finishes
    assert len(asyncio.all_tasks()) == before


async def test_a_disconnect_cancels_the_work_and_leaves_the_task_uncancelled() -> None:
    client = Client()
    cleaned: list[str] = []
    working = asyncio.Event()

    async def work() -> None:
        working.set()
        try:
            await asyncio.sleep(30)  # a stream of a task that waits
        finally:
            cleaned.append("released")

    async def request() -> str:
        await until_disconnected(client.receive, work())
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0
        await asyncio.sleep(0)  # no cancellation left over for the next await
        return "answered"

    handling = asyncio.ensure_future(request())
    await working.wait()
    client.left.set()
    await asyncio.wait([handling], timeout=1)  # (wait_for would cancel it on a timeout)
    assert handling.done() and handling.result() == "answered"
    assert cleaned == ["released"]


async def test_a_cancellation_from_elsewhere_still_cancels_the_request() -> None:
    client = Client()
    working = asyncio.Event()

    async def work() -> None:
        working.set()
        await asyncio.sleep(30)

    handling = asyncio.ensure_future(until_disconnected(client.receive, work()))
    await working.wait()
    handling.cancel()  # a server shutting down
    with pytest.raises(asyncio.CancelledError):
        await handling


async def test_a_failure_of_the_work_reaches_the_caller() -> None:
    client = Client()

    async def work() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("encoding failed")

    with pytest.raises(RuntimeError, match="encoding failed"):
        await until_disconnected(client.receive, work())


async def test_a_disconnect_as_the_work_ends_cancels_nothing_afterwards() -> None:
    client = Client()

    async def work() -> None:
        client.left.set()  # the client goes away just as the last bytes are written
        # One turn: the watcher ends and schedules its callback, which runs after this
        # work has ended (and the request has gone on).
        await asyncio.sleep(0)

    async def request() -> str:
        await until_disconnected(client.receive, work())
        for _ in range(5):
            await asyncio.sleep(0)  # a late cancellation would land on one of these
        return "answered"

    assert await asyncio.wait_for(request(), 1) == "answered"
